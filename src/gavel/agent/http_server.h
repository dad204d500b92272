// The iterator endpoint's HTTP server is the runtime's one (gavel/rpc/http_server.h, on
// cpp-httplib), shared with the daemon's metrics and dashboard; these names keep the agent's
// code (iterator_endpoint.h, agent_server.h) reading as before.
#pragma once

#include "gavel/rpc/http_server.h"

namespace gavel::agent {

using rpc::HttpHandler;
using rpc::HttpReason;
using rpc::HttpRequest;
using rpc::HttpResponse;
using rpc::HttpServer;
using rpc::HttpServerOptions;

}  // namespace gavel::agent
