// The agent's local endpoint for iterators (iterator.proto): maps
//     POST /gavel.wire.Iterator/{Init,Progress,Done}    (proto3 JSON bodies)
// onto Agent::Init, Agent::Progress and Agent::Done, for an HttpServer (http_server.h).
//
// Errors follow iterator.proto: 400 for a body that is not the request message (the parser's
// message names the field), 401 when `Authorization: Bearer <key>` does not carry the key the
// agent gave the named process as GAVEL_TOKEN (each process has its own, so no process can
// speak for another job), 404 for an unknown method or a job this agent does not run, 405 for
// anything but POST, 500 otherwise; the body is {"error": "<message>"}. Responses print every
// field, zeros included, so that clients never have to know proto3's defaults.
//
// Thread-safety: the handler is called from many connection threads at once; a Done call
// blocks its thread until the agent answers it (the agent always does: at the next round, at
// the hold timeout, when the process exits, or at shutdown).
#pragma once

#include <string>

#include "gavel/agent/agent.h"
#include "gavel/agent/http_server.h"

namespace gavel::agent {

// `agent` is borrowed and must outlive every call of the handler.
HttpHandler MakeIteratorHandler(Agent* agent);

}  // namespace gavel::agent
