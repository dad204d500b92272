#include "gavel/daemon/observe_http.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

namespace gavel::daemon {
namespace {

// A sample value as Prometheus reads it (Go's ParseFloat): integers without exponent noise.
std::string Number(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.17g", value);
  return buffer;
}

std::string LabelValue(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out;
}

// Writes one metric family: HELP, TYPE, then samples.
class Exposition {
 public:
  void Family(const std::string& name, const std::string& type, const std::string& help) {
    out_ << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
  }
  void Sample(const std::string& name, const std::vector<std::pair<std::string, std::string>>& labels,
              double value) {
    out_ << name;
    if (!labels.empty()) {
      out_ << "{";
      for (std::size_t i = 0; i < labels.size(); ++i) {
        out_ << (i ? "," : "") << labels[i].first << "=\"" << LabelValue(labels[i].second) << "\"";
      }
      out_ << "}";
    }
    out_ << " " << Number(value) << "\n";
  }
  void Histogram(const std::string& name, const std::string& help, const HistogramData& data) {
    Family(name, "histogram", help);
    for (std::size_t i = 0; i < data.bounds.size(); ++i) {
      Sample(name + "_bucket", {{"le", Number(data.bounds[i])}}, static_cast<double>(data.counts[i]));
    }
    Sample(name + "_bucket", {{"le", "+Inf"}}, static_cast<double>(data.count));
    Sample(name + "_sum", {}, data.sum);
    Sample(name + "_count", {}, static_cast<double>(data.count));
  }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
};

// "queued", "running", ... (the enum's names, lower case, as `gavel jobs` prints them).
std::string StateName(wire::JobState state) {
  std::string name = wire::JobState_Name(state);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

bool Active(const wire::JobInfo& job) {
  return job.state() == wire::QUEUED || job.state() == wire::RUNNING;
}

rpc::HttpResponse Text(int status, std::string content_type, std::string body) {
  return rpc::HttpResponse{status, std::move(content_type), std::move(body)};
}

}  // namespace

std::string DashboardPage(const std::string& state_json) {
  // Inside <script>, "</" could end the element early: JSON may write it as "<\/".
  std::string safe;
  for (std::size_t i = 0; i < state_json.size(); ++i) {
    safe.push_back(state_json[i]);
    if (state_json[i] == '<' && i + 1 < state_json.size() && state_json[i + 1] == '/') {
      safe.push_back('\\');
    }
  }
  std::string page = DashboardHtml();
  const std::string marker = "@STATE@";
  page.replace(page.find(marker), marker.size(), safe);
  return page;
}

CoreSnapshot TakeSnapshot(const SchedulerCore& core) {
  CoreSnapshot snapshot;
  snapshot.status = core.GetStatus();
  wire::ListJobsRequest request;
  request.set_limit(1000);
  while (true) {
    Result<wire::ListJobsResponse> page = core.ListJobs(request);
    if (!page.ok()) break;
    for (wire::JobInfo& job : *page->mutable_jobs()) snapshot.jobs.push_back(std::move(job));
    if (page->next_page_token().empty()) break;
    request.set_page_token(page->next_page_token());
  }
  snapshot.workers = core.ListWorkers();
  snapshot.counters = core.counters();
  snapshot.allocation = core.allocation_stats();
  return snapshot;
}

UtilisationSample Utilisation(const wire::ListWorkersResponse& workers, std::int64_t unix_ms) {
  UtilisationSample sample;
  sample.unix_ms = unix_ms;
  for (const wire::WorkerInfo& worker : workers.workers()) {
    if (!worker.alive()) continue;
    ++sample.alive[worker.gpu_type()];
    sample.busy[worker.gpu_type()] += worker.busy() ? 1 : 0;
  }
  return sample;
}

std::string RenderPrometheus(const CoreSnapshot& snapshot, const Observations& observations) {
  Exposition out;
  const wire::GetStatusResponse& status = snapshot.status;

  out.Family("gavel_jobs", "gauge", "Jobs by state.");
  out.Sample("gavel_jobs", {{"state", "queued"}}, status.queued_jobs());
  out.Sample("gavel_jobs", {{"state", "running"}}, status.running_jobs());
  out.Sample("gavel_jobs", {{"state", "done"}}, status.done_jobs());
  out.Sample("gavel_jobs", {{"state", "failed"}}, status.failed_jobs());
  out.Sample("gavel_jobs", {{"state", "cancelled"}}, status.cancelled_jobs());

  out.Family("gavel_rounds_started_total", "counter", "Rounds started since the daemon started.");
  out.Sample("gavel_rounds_started_total", {}, static_cast<double>(snapshot.counters.rounds_started));
  out.Family("gavel_round_id", "gauge", "The current (or next) round's id.");
  out.Sample("gavel_round_id", {}, static_cast<double>(status.round_id()));
  out.Histogram("gavel_round_duration_seconds",
                "Wall time from one round's start to the next round's start.",
                observations.round_durations());
  out.Histogram("gavel_solve_duration_seconds", "Wall time of each policy solve.",
                observations.solve_durations());
  out.Family("gavel_solves_total", "counter", "Policy solves since the daemon started.");
  out.Sample("gavel_solves_total", {}, static_cast<double>(snapshot.allocation.solves));

  // GPUs by type and state: busy (running a job this round), idle (alive, no job), dead.
  std::map<std::string, std::map<std::string, int>> gpus;
  for (const wire::WorkerInfo& worker : snapshot.workers.workers()) {
    auto& by_state = gpus[worker.gpu_type()];
    by_state.try_emplace("busy", 0);
    by_state.try_emplace("idle", 0);
    by_state.try_emplace("dead", 0);
    ++by_state[!worker.alive() ? "dead" : worker.busy() ? "busy" : "idle"];
  }
  out.Family("gavel_gpus", "gauge", "GPUs by type and state (busy, idle, dead).");
  for (const auto& [type, by_state] : gpus) {
    for (const auto& [state, count] : by_state) {
      out.Sample("gavel_gpus", {{"gpu_type", type}, {"state", state}}, count);
    }
  }

  // Per active job: the policy's allocation and the throughput the scheduler uses, per type.
  out.Family("gavel_job_allocation_ratio", "gauge",
             "The policy's share of time of an active job on a GPU type (0 to 1).");
  for (const wire::JobInfo& job : snapshot.jobs) {
    if (!Active(job)) continue;
    for (const wire::JobTypeStats& type : job.per_type()) {
      out.Sample("gavel_job_allocation_ratio",
                 {{"job_id", std::to_string(job.id())}, {"gpu_type", type.gpu_type()}},
                 type.allocation());
    }
  }
  out.Family("gavel_job_throughput_steps_per_second", "gauge",
             "Steps/s of an active job on a GPU type as the scheduler estimates it (measured "
             "when measured, else the prior).");
  for (const wire::JobInfo& job : snapshot.jobs) {
    if (!Active(job)) continue;
    for (const wire::JobTypeStats& type : job.per_type()) {
      out.Sample("gavel_job_throughput_steps_per_second",
                 {{"job_id", std::to_string(job.id())}, {"gpu_type", type.gpu_type()}},
                 type.throughput_estimate());
    }
  }
  out.Family("gavel_job_steps_done", "gauge", "Checkpointed steps of an active job.");
  for (const wire::JobInfo& job : snapshot.jobs) {
    if (Active(job)) {
      out.Sample("gavel_job_steps_done", {{"job_id", std::to_string(job.id())}},
                 static_cast<double>(job.steps_done()));
    }
  }

  // Restarts and failures, over every job the daemon knows.
  double launches = 0;
  double crashes = 0;
  for (const wire::JobInfo& job : snapshot.jobs) {
    launches += job.attempts();
    crashes += job.failures();
  }
  out.Family("gavel_job_launches_total", "counter",
             "Process launches of all jobs (first starts and restarts after a preemption, a "
             "migration or a crash).");
  out.Sample("gavel_job_launches_total", {}, launches);
  out.Family("gavel_job_crashes_total", "counter", "Job crashes counted towards retry limits.");
  out.Sample("gavel_job_crashes_total", {}, crashes);
  out.Family("gavel_stragglers_killed_total", "counter",
             "Processes killed for missing a round's report deadline.");
  out.Sample("gavel_stragglers_killed_total", {},
             static_cast<double>(snapshot.counters.stragglers_killed));
  out.Family("gavel_reports_total", "counter", "Round reports received from agents.");
  out.Sample("gavel_reports_total", {}, static_cast<double>(snapshot.counters.reports));
  out.Family("gavel_uptime_seconds", "gauge", "Seconds since the daemon started.");
  out.Sample("gavel_uptime_seconds", {}, status.uptime_s());
  return out.str();
}

std::string RenderStateJson(const CoreSnapshot& snapshot, const Observations& observations) {
  using nlohmann::json;
  json state;
  state["policy"] = snapshot.status.policy();
  state["round_id"] = snapshot.status.round_id();
  state["round_duration_s"] = snapshot.status.round_duration_s();
  state["round_elapsed_s"] = snapshot.status.round_elapsed_s();
  std::map<std::string, int> types;
  for (const wire::WorkerInfo& worker : snapshot.workers.workers()) {
    if (worker.alive()) ++types[worker.gpu_type()];
  }
  state["gpu_types"] = types;
  json jobs = json::array();
  // Active jobs, then the 50 most recently finished.
  std::vector<const wire::JobInfo*> shown;
  for (const wire::JobInfo& job : snapshot.jobs) {
    if (Active(job)) shown.push_back(&job);
  }
  int finished = 0;
  for (auto it = snapshot.jobs.rbegin(); it != snapshot.jobs.rend() && finished < 50; ++it) {
    if (!Active(*it)) {
      shown.push_back(&*it);
      ++finished;
    }
  }
  for (const wire::JobInfo* job : shown) {
    json allocation = json::object();
    for (const wire::JobTypeStats& type : job->per_type()) {
      allocation[type.gpu_type()] = type.allocation();
    }
    jobs.push_back({{"id", job->id()},
                    {"name", job->name()},
                    {"user", job->user()},
                    {"state", StateName(job->state())},
                    {"steps_done", job->steps_done()},
                    {"total_steps", job->total_steps()},
                    {"progress", job->progress()},
                    {"eta_s", job->eta_s()},
                    {"gpu_type", job->gpu_type()},
                    {"allocation", allocation}});
  }
  state["jobs"] = jobs;
  json samples = json::array();
  for (const UtilisationSample& sample : observations.samples()) {
    samples.push_back({{"t", sample.unix_ms}, {"alive", sample.alive}, {"busy", sample.busy}});
  }
  state["utilisation"] = samples;
  json events = json::array();
  for (const EventRow& event : observations.events()) {
    events.push_back({{"t", event.ts_ms},
                      {"kind", event.kind},
                      {"job_id", event.job_id},
                      {"worker_id", event.worker_id},
                      {"message", event.message}});
  }
  state["events"] = events;
  return state.dump();
}

rpc::HttpHandler MakeObserveHandler(CoreLoop* loop, const Observations* observations) {
  return [loop, observations](const rpc::HttpRequest& request) -> rpc::HttpResponse {
    if (request.method != "GET" && request.method != "HEAD") {
      return Text(405, "text/plain; charset=utf-8", "use GET\n");
    }
    const std::string path = request.target.substr(0, request.target.find('?'));
    if (path != "/" && path != "/metrics" && path != "/api/state") {
      return Text(404, "text/plain; charset=utf-8",
                  "unknown path '" + path + "' (/, /metrics, /api/state)\n");
    }
    CoreSnapshot snapshot;
    const grpc::Status taken = loop->Call([&snapshot](SchedulerCore& core) {
      snapshot = TakeSnapshot(core);
      return grpc::Status::OK;
    });
    if (!taken.ok()) return Text(503, "text/plain; charset=utf-8", taken.error_message() + "\n");
    if (path == "/metrics") {
      return Text(200, "text/plain; version=0.0.4; charset=utf-8",
                  RenderPrometheus(snapshot, *observations));
    }
    std::string state = RenderStateJson(snapshot, *observations);
    if (path == "/api/state") return Text(200, "application/json", std::move(state));
    return Text(200, "text/html; charset=utf-8", DashboardPage(state));
  };
}

}  // namespace gavel::daemon
