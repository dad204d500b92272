// The daemon's observation port (`gavel serve --metrics-listen HOST:PORT`, docs/runtime.md
// "Metrics" and "Dashboard"): Prometheus text exposition at /metrics, the dashboard at /, and
// the dashboard's data as JSON at /api/state.
//
// Facts come from their owners: a CoreSnapshot is taken on the core thread through the core's
// query API (GetStatus, ListJobs, ListWorkers, counters, allocation stats: JobBook,
// AgentRegistry and MechanismSeam answer them), and Observations adds only what no owner keeps
// (durations, events, utilisation history).
// Thread-safety: the handler runs on HTTP threads; it reaches the core only through
// CoreLoop::Call, so the core stays single-threaded.
#pragma once

#include <string>
#include <vector>

#include "gavel/daemon/allocation_service.h"
#include "gavel/daemon/daemon.h"
#include "gavel/daemon/observations.h"
#include "gavel/daemon/scheduler_core.h"
#include "gavel/rpc/http_server.h"

namespace gavel::daemon {

struct CoreSnapshot {
  wire::GetStatusResponse status;
  std::vector<wire::JobInfo> jobs;  // every job, by id
  wire::ListWorkersResponse workers;
  CoreCounters counters;
  AllocationStats allocation;
};

// On the core thread.
CoreSnapshot TakeSnapshot(const SchedulerCore& core);
// Per GPU type: GPUs alive and busy (the dashboard's utilisation samples).
UtilisationSample Utilisation(const wire::ListWorkersResponse& workers, std::int64_t unix_ms);

// Prometheus text exposition format 0.0.4.
std::string RenderPrometheus(const CoreSnapshot& snapshot, const Observations& observations);
// The dashboard's data: jobs (progress, ETA), the allocation matrix, utilisation samples,
// recent events.
std::string RenderStateJson(const CoreSnapshot& snapshot, const Observations& observations);
// The dashboard page template (dashboard_html.cc), with @STATE@ where the state goes.
const char* DashboardHtml();
// The page with `state_json` (RenderStateJson) in place.
std::string DashboardPage(const std::string& state_json);

// GET /metrics, GET /, GET /api/state; 404 otherwise, 405 for other methods. `loop` and
// `observations` are borrowed and must outlive the handler's calls.
rpc::HttpHandler MakeObserveHandler(CoreLoop* loop, const Observations* observations);

}  // namespace gavel::daemon
