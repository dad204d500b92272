#include "gavel/cli/replay_command.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "gavel/cli/flag_bounds.h"
#include "gavel/core/bounds.h"
#include "gavel/core/parse_number.h"
#include "gavel/core/shipped_data.h"
#include "gavel/rpc/grpc_util.h"

namespace gavel::cli {
namespace {

namespace fs = std::filesystem;
using SteadyClock = std::chrono::steady_clock;

double SecondsBetween(SteadyClock::time_point from, SteadyClock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// The example training program beside the data directory the binary reads
// (<root>/data/... -> <root>/examples/training/train.py).
Result<std::string> ExampleTrainingProgram() {
  const fs::path data = fs::path(ShippedDataFile("simulation_throughputs.json")).parent_path();
  const fs::path program = data.parent_path() / "examples" / "training" / "train.py";
  if (!fs::exists(program)) {
    return Status::NotFound("the example training program is not at " + program.string() +
                            " (an installed gavel has no examples/): give --command");
  }
  return fs::absolute(program).lexically_normal().string();
}

std::vector<std::string> SplitWords(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  std::string word;
  while (in >> word) words.push_back(word);
  return words;
}

void ReplaceAll(std::string& text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at)) {
    text.replace(at, from.size(), to);
    at += to.size();
  }
}

std::string ShortNumber(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

// The job's argv: the template's words with the job's fields in place.
std::vector<std::string> JobCommand(const std::vector<std::string>& words,
                                    const workload::TraceJob& job, std::size_t index,
                                    double time_scale) {
  std::vector<std::string> argv;
  for (std::string word : words) {
    ReplaceAll(word, "{job_type}", job.job_type);
    ReplaceAll(word, "{steps}", std::to_string(static_cast<std::uint64_t>(job.total_steps)));
    ReplaceAll(word, "{scale_factor}", std::to_string(job.scale_factor));
    ReplaceAll(word, "{index}", std::to_string(index));
    ReplaceAll(word, "{time_scale}", ShortNumber(time_scale));
    argv.push_back(std::move(word));
  }
  return argv;
}

// The daemon's side of the comparison: its policy, round and live cluster.
struct LiveSetup {
  std::string policy;
  double round_seconds = 0.0;
  double lag_bound_restarts = 0.0;  // the daemon's bounded lag (0 = off)
  bool rounds_on_time = false;      // gavel serve --rounds-on-time
  double arrival_settle_seconds = 0.0;  // a round on an idle cluster waits this for arrivals
  std::vector<std::string> types;  // sorted
  std::vector<int> gpus;           // per type
  std::vector<int> gpus_per_server;
};

Result<LiveSetup> ReadLiveSetup(const Connection& c) {
  LiveSetup setup;
  {
    grpc::ClientContext context;
    c.Prepare(&context);
    wire::GetStatusResponse status;
    GAVEL_RETURN_IF_ERROR(rpc::FromGrpc(
        c.stub->GetStatus(&context, wire::GetStatusRequest(), &status), "status"));
    setup.policy = status.policy();
    setup.round_seconds = status.round_duration_s();
    setup.lag_bound_restarts = status.lag_bound_restarts();
    setup.rounds_on_time = status.rounds_on_time();
    setup.arrival_settle_seconds = status.arrival_settle_s();
  }
  grpc::ClientContext context;
  c.Prepare(&context);
  wire::ListWorkersResponse workers;
  GAVEL_RETURN_IF_ERROR(rpc::FromGrpc(
      c.stub->ListWorkers(&context, wire::ListWorkersRequest(), &workers), "workers"));
  std::map<std::string, std::map<std::string, int>> per_agent;  // type -> agent -> GPUs
  for (const wire::WorkerInfo& w : workers.workers()) {
    if (w.alive()) ++per_agent[w.gpu_type()][w.agent_id()];
  }
  if (per_agent.empty()) {
    return Status::FailedPrecondition("the scheduler has no live worker: start `gavel worker`s "
                                      "before replaying");
  }
  // The daemon's type order (daemon/agent_registry.cc, LiveLayout): v100, p100, k80, then the
  // others by name. The round mechanism places type after type in this order, so the
  // simulation must use it too (k80 first instead moved average JCT by 40 % on one trace).
  std::vector<std::string> order;
  for (const char* preferred : {"v100", "p100", "k80"}) {
    if (per_agent.contains(preferred)) order.push_back(preferred);
  }
  for (const auto& [type, agents] : per_agent) {
    if (std::find(order.begin(), order.end(), type) == order.end()) order.push_back(type);
  }
  for (const std::string& type : order) {
    const std::map<std::string, int>& agents = per_agent[type];
    int total = 0;
    int per_server = 0;  // the gcd of the agents' sizes: a server layout that fits every agent
    for (const auto& [agent, gpus] : agents) {
      total += gpus;
      per_server = std::gcd(per_server, gpus);
    }
    setup.types.push_back(type);
    setup.gpus.push_back(total);
    setup.gpus_per_server.push_back(per_server);
  }
  return setup;
}

std::string JoinInts(const std::vector<int>& values, char separator) {
  std::string text;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) text += separator;
    text += std::to_string(values[i]);
  }
  return text;
}

// What the replay saw of one job.
struct LiveJob {
  std::uint64_t id = 0;
  double submitted = 0.0;  // seconds since the replay's time 0 (the trace's first arrival)
  std::optional<double> first_start;
  wire::JobInfo last;
};

bool Finished(wire::JobState state) {
  return state == wire::DONE || state == wire::FAILED || state == wire::CANCELLED;
}

Status ListInto(const Connection& c, std::vector<LiveJob>& jobs, double now) {
  std::map<std::uint64_t, std::size_t> index;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i].id != 0 && !Finished(jobs[i].last.state())) index[jobs[i].id] = i;
  }
  std::vector<std::uint64_t> ids;
  for (const auto& [id, i] : index) ids.push_back(id);
  for (std::size_t from = 0; from < ids.size(); from += 1000) {
    wire::ListJobsRequest request;
    for (std::size_t k = from; k < std::min(ids.size(), from + 1000); ++k) {
      request.add_job_ids(ids[k]);
    }
    request.set_limit(1000);
    while (true) {
      grpc::ClientContext context;
      c.Prepare(&context);
      wire::ListJobsResponse response;
      GAVEL_RETURN_IF_ERROR(
          rpc::FromGrpc(c.stub->ListJobs(&context, request, &response), "jobs"));
      for (const wire::JobInfo& info : response.jobs()) {
        const auto at = index.find(info.id());
        if (at == index.end()) continue;
        LiveJob& job = jobs[at->second];
        if (!job.first_start && (info.state() == wire::RUNNING || info.attempts() > 0 ||
                                 info.steps_done() > 0)) {
          job.first_start = now;
        }
        job.last = info;
      }
      if (response.next_page_token().empty()) break;
      request.set_page_token(response.next_page_token());
    }
  }
  return Status::Ok();
}

// The live run in the simulator's result shape.
sim::SimulationResult LiveResult(const std::vector<LiveJob>& jobs,
                                 const std::vector<workload::TraceJob>& trace,
                                 const LiveSetup& setup, double makespan) {
  sim::SimulationResult r;
  r.policy = setup.policy;
  // Sorted by name, as the simulator's results list them.
  std::map<std::string, int> counts;
  for (std::size_t t = 0; t < setup.types.size(); ++t) counts[setup.types[t]] = setup.gpus[t];
  for (const auto& [type, count] : counts) {
    r.gpu_types.push_back(type);
    r.gpu_counts.push_back(count);
  }
  r.window_start = 0;
  r.window_end = jobs.size();
  if (!jobs.empty()) r.window_start_time = Seconds(jobs.front().submitted);
  r.makespan_seconds = makespan;
  double busy = 0.0;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const LiveJob& live = jobs[i];
    sim::JobResult job;
    job.id = JobId(i);
    job.job_type = trace[i].job_type;
    job.scale_factor = trace[i].scale_factor;
    job.priority_weight = trace[i].priority_weight;
    job.arrival = Seconds(live.submitted);
    job.in_window = true;
    if (live.first_start) {
      job.first_start = Seconds(*live.first_start);
      job.queueing_delay = Seconds(std::max(0.0, *live.first_start - live.submitted));
    }
    const wire::JobInfo& info = live.last;
    if (info.state() == wire::DONE && info.finished_unix_ms() > 0) {
      const double jct =
          static_cast<double>(info.finished_unix_ms() - info.submitted_unix_ms()) / 1000.0;
      job.jct = Seconds(jct);
      job.finish = Seconds(live.submitted + jct);
    }
    job.failed = info.state() == wire::FAILED;
    job.dropped = info.state() == wire::CANCELLED;
    job.gpu_seconds.assign(r.gpu_types.size(), 0.0);
    for (const wire::JobTypeStats& t : info.per_type()) {
      const auto type = std::find(r.gpu_types.begin(), r.gpu_types.end(), t.gpu_type());
      if (type == r.gpu_types.end()) continue;
      const double gpu_seconds = t.seconds() * job.scale_factor;
      job.gpu_seconds[static_cast<std::size_t>(type - r.gpu_types.begin())] = gpu_seconds;
      busy += gpu_seconds;
    }
    r.jobs.push_back(std::move(job));
  }
  sim::SummarizeJobs(r);
  const double gpus = std::accumulate(setup.gpus.begin(), setup.gpus.end(), 0.0);
  if (makespan > 0.0 && gpus > 0.0) {
    r.utilization = busy / (gpus * makespan);
    const double window = makespan - (r.window_start_time ? r.window_start_time->value() : 0.0);
    r.window_utilization = window > 0.0 ? busy / (gpus * window) : 0.0;
  }
  return r;
}

Status WriteFile(const fs::path& path, const std::string& text) {
  std::ofstream file(path);
  if (!file) return Status::IoError(path.string() + ": cannot open for writing");
  file << text;
  if (!file.good()) return Status::IoError(path.string() + ": write failed");
  return Status::Ok();
}

Status WriteResult(const fs::path& dir, const std::string& stem, const sim::SimulationResult& r) {
  GAVEL_RETURN_IF_ERROR(WriteFile(dir / (stem + ".csv"), sim::JobsToCsv(r)));
  return WriteFile(dir / (stem + ".json"), sim::ResultToJson(r));
}

// The live rounds' lengths, from the round id GetStatus reports at each poll: the time between
// two changes of it while jobs run (so to within two polls).
class RoundWatch {
 public:
  Status Observe(const Connection& c, double now) {
    grpc::ClientContext context;
    c.Prepare(&context);
    wire::GetStatusResponse status;
    GAVEL_RETURN_IF_ERROR(rpc::FromGrpc(
        c.stub->GetStatus(&context, wire::GetStatusRequest(), &status), "status"));
    if (round_ && status.round_id() != *round_) {
      if (changed_at_ && running_) lengths_.push_back((now - *changed_at_) /
                                                      static_cast<double>(status.round_id() - *round_));
      changed_at_ = now;
    }
    round_ = status.round_id();
    running_ = status.running_jobs() > 0;
    return Status::Ok();
  }
  std::size_t samples() const { return lengths_.size(); }
  std::optional<double> MedianLength() const {
    if (lengths_.empty()) return std::nullopt;
    return sim::Percentile(lengths_, 50.0);
  }

 private:
  std::optional<std::uint64_t> round_;
  std::optional<double> changed_at_;
  bool running_ = false;
  std::vector<double> lengths_;
};

// The mean start-up (launch to the iterator's Init) over every launch of the run's jobs.
std::optional<double> MeanStartup(const std::vector<LiveJob>& jobs) {
  double total = 0.0;
  double launches = 0.0;
  for (const LiveJob& job : jobs) {
    // A multi-GPU job's launch is one process per GPU, started together: the daemon sums its
    // start-up per launch, so one launch counts once.
    total += job.last.startup_total_s();
    launches += job.last.attempts();
  }
  if (launches == 0.0) return std::nullopt;
  return total / launches;
}

}  // namespace

std::vector<workload::TraceJob> ScaleTrace(std::vector<workload::TraceJob> trace, double scale) {
  for (workload::TraceJob& job : trace) {
    job.arrival_time = Seconds(job.arrival_time.value() / scale);
    job.total_steps = std::max(1.0, std::round(job.total_steps / scale));
    if (job.duration) job.duration = Seconds(job.duration->value() / scale);
  }
  return trace;
}

std::vector<ComparedMetric> CompareResults(const sim::SimulationResult& live,
                                           const sim::SimulationResult& simulated) {
  const auto metric = [](std::string name, double a, double b) {
    ComparedMetric m{std::move(name), a, b, 0.0};
    if (b != 0.0) {
      m.relative_difference = (a - b) / b;
    } else if (a != 0.0) {
      m.relative_difference = std::copysign(std::numeric_limits<double>::infinity(), a);
    }
    return m;
  };
  return {
      metric("jobs completed", static_cast<double>(live.window_jobs_completed),
             static_cast<double>(simulated.window_jobs_completed)),
      metric("average JCT (s)", live.average_jct_seconds, simulated.average_jct_seconds),
      metric("p50 JCT (s)", live.jct_p50_seconds, simulated.jct_p50_seconds),
      metric("p90 JCT (s)", live.jct_p90_seconds, simulated.jct_p90_seconds),
      metric("p99 JCT (s)", live.jct_p99_seconds, simulated.jct_p99_seconds),
      metric("makespan (s)", live.makespan_seconds, simulated.makespan_seconds),
      metric("utilization", live.utilization, simulated.utilization),
      metric("queueing delay p50 (s)", live.queueing_delay_p50_seconds,
             simulated.queueing_delay_p50_seconds),
      metric("queueing delay p90 (s)", live.queueing_delay_p90_seconds,
             simulated.queueing_delay_p90_seconds),
  };
}

void PrintComparison(const std::vector<ComparedMetric>& metrics, std::ostream& out) {
  out << std::left << std::setw(24) << "metric" << std::right << std::setw(14) << "live"
      << std::setw(14) << "simulated" << std::setw(12) << "difference" << "\n";
  for (const ComparedMetric& m : metrics) {
    std::ostringstream diff;
    if (std::isfinite(m.relative_difference)) {
      diff << std::showpos << std::fixed << std::setprecision(1)
           << 100.0 * m.relative_difference << "%";
    } else {
      diff << "n/a";
    }
    out << std::left << std::setw(24) << m.name << std::right << std::fixed
        << std::setprecision(3) << std::setw(14) << m.live << std::setw(14) << m.simulated
        << std::setw(12) << diff.str() << "\n";
  }
  out.unsetf(std::ios::fixed);
}

Status RunReplay(const ReplayOptions& o, std::ostream& out) {
  if (o.trace_file.empty()) return Status::InvalidArgument("--trace: required");
  if (o.out_dir.empty()) return Status::InvalidArgument("--out: required");
  if (!(o.time_scale > 0.0) || !std::isfinite(o.time_scale)) {
    return Status::InvalidArgument("--time-scale: must be a positive number");
  }
  std::vector<std::string> words = SplitWords(o.command);
  if (words.empty()) {
    if (!o.command.empty()) return Status::InvalidArgument("--command: no program in it");
    GAVEL_ASSIGN_OR_RETURN(const std::string program, ExampleTrainingProgram());
    words = {"python3", program};
  }
  GAVEL_ASSIGN_OR_RETURN(Connection c, Connect(o.client));
  GAVEL_ASSIGN_OR_RETURN(const LiveSetup setup, ReadLiveSetup(c));

  // The trace and the simulation, read and checked as `gavel simulate` does, on the daemon's
  // cluster, policy and round length.
  SimulateOptions s;
  s.worker_types.clear();
  for (std::size_t i = 0; i < setup.types.size(); ++i) {
    s.worker_types += (i > 0 ? "," : "") + setup.types[i];
  }
  s.cluster = JoinInts(setup.gpus, ':');
  s.gpus_per_server = JoinInts(setup.gpus_per_server, ':');
  s.policy = sim::PolicyAsServed(setup.policy);
  s.seed = o.seed;
  s.round_seconds = setup.round_seconds;
  s.trace_file = o.trace_file;
  s.trace_format = o.trace_format;
  s.trace_tasks = o.trace_tasks;
  s.skip_bad_rows = o.skip_bad_rows;
  s.throughputs_file = o.throughputs_file;
  std::vector<std::string> notes;
  GAVEL_ASSIGN_OR_RETURN(sim::SimulationOptions simulation, ToSimulationOptions(s, &notes));
  for (const std::string& note : notes) out << note << "\n";
  simulation.trace = ScaleTrace(std::move(simulation.trace), o.time_scale);
  const std::vector<workload::TraceJob>& trace = simulation.trace;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    if (!simulation.throughputs->HasJobType(trace[i].key())) {
      return Status::InvalidArgument(o.trace_file + ": job " + std::to_string(i) + ": (" +
                                     trace[i].job_type + ", " +
                                     std::to_string(trace[i].scale_factor) +
                                     ") is not in the throughput table");
    }
  }

  std::error_code ec;
  fs::create_directories(o.out_dir, ec);
  if (ec) return Status::IoError("--out: cannot create " + o.out_dir + ": " + ec.message());

  // ---- Submit at the scaled arrival times, and watch ----
  std::vector<LiveJob> jobs(trace.size());
  const double first_arrival = trace.empty() ? 0.0 : trace.front().arrival_time.value();
  const SteadyClock::time_point start = SteadyClock::now();
  const auto now_s = [&] { return SecondsBetween(start, SteadyClock::now()); };
  RoundWatch rounds;
  std::size_t next = 0;
  double next_poll = 0.0;
  std::size_t finished = 0;
  double last_note = 0.0;
  while (finished < trace.size()) {
    while (next < trace.size() && trace[next].arrival_time.value() - first_arrival <= now_s()) {
      const workload::TraceJob& job = trace[next];
      wire::JobSpec spec;
      for (const std::string& arg : JobCommand(words, job, next, o.time_scale)) {
        spec.add_command(arg);
      }
      spec.set_job_type(job.job_type);
      spec.set_scale_factor(static_cast<std::uint32_t>(job.scale_factor));
      spec.set_total_steps(static_cast<std::uint64_t>(job.total_steps));
      spec.set_priority_weight(job.priority_weight);
      spec.set_name("replay-" + std::to_string(next));
      if (!o.throughputs_file.empty()) {
        (*spec.mutable_env())["GAVEL_THROUGHPUTS"] =
            fs::absolute(o.throughputs_file).lexically_normal().string();
      }
      grpc::ClientContext context;
      c.Prepare(&context);
      wire::SubmitJobRequest request;
      *request.mutable_spec() = spec;
      wire::SubmitJobResponse response;
      GAVEL_RETURN_IF_ERROR(rpc::FromGrpc(c.stub->SubmitJob(&context, request, &response),
                                          "submit job " + std::to_string(next)));
      jobs[next].id = response.job_id();
      jobs[next].submitted = now_s();
      ++next;
    }
    if (now_s() >= next_poll) {
      GAVEL_RETURN_IF_ERROR(ListInto(c, jobs, now_s()));
      GAVEL_RETURN_IF_ERROR(rounds.Observe(c, now_s()));
      finished = 0;
      for (std::size_t i = 0; i < next; ++i) finished += Finished(jobs[i].last.state()) ? 1 : 0;
      next_poll = now_s() + o.poll_seconds;
      if (!o.quiet && now_s() - last_note >= 10.0) {
        last_note = now_s();
        std::cerr << "gavel replay: " << std::fixed << std::setprecision(0) << now_s() << " s: "
                  << next << "/" << trace.size() << " submitted, " << finished << " finished\n";
      }
    }
    if (o.max_seconds > 0.0 && now_s() > o.max_seconds) {
      return Status::FailedPrecondition(
          "--max-seconds: " + std::to_string(trace.size() - finished) + " of " +
          std::to_string(trace.size()) + " jobs unfinished after " +
          std::to_string(static_cast<int>(o.max_seconds)) + " s");
    }
    double wake = next_poll;
    if (next < trace.size()) {
      wake = std::min(wake, trace[next].arrival_time.value() - first_arrival);
    }
    const double sleep = std::clamp(wake - now_s(), 0.0, o.poll_seconds);
    std::this_thread::sleep_for(std::chrono::duration<double>(sleep));
  }

  double makespan = 0.0;
  for (const LiveJob& job : jobs) {
    if (job.last.finished_unix_ms() > 0) {
      makespan = std::max(makespan, job.submitted + static_cast<double>(job.last.finished_unix_ms() -
                                                                       job.last.submitted_unix_ms()) /
                                                        1000.0);
    }
  }
  const sim::SimulationResult live = LiveResult(jobs, trace, setup, makespan);
  GAVEL_RETURN_IF_ERROR(WriteResult(o.out_dir, "live", live));
  const std::optional<double> startup = MeanStartup(jobs);
  const std::optional<double> round_length = rounds.MedianLength();
  out << "Live run: " << live.window_jobs_completed << " of " << trace.size()
      << " jobs done, average JCT " << std::fixed << std::setprecision(3)
      << live.average_jct_seconds << " s, makespan " << live.makespan_seconds
      << " s; mean start-up " << startup.value_or(0.0) << " s per launch; "
      << rounds.samples() << " rounds timed, median " << round_length.value_or(0.0)
      << " s (round " << setup.round_seconds << " s)\n";
  out.unsetf(std::ios::fixed);
  if (!o.compare) return Status::Ok();

  // ---- The simulation of the same scaled trace ----
  PhysicsFlags physics = o.physics;
  if (physics.restart_overhead.empty() || physics.restart_overhead == "measured") {
    physics.restart_overhead = ShortNumber(startup.value_or(0.0));
  }
  GAVEL_ASSIGN_OR_RETURN(simulation.physics, ToPhysicsOptions(physics));
  // gavel serve's leases start once the program is up (the iterator's Init), so a restart
  // lengthens its micro-task and the round rather than eating into the lease; with on-time
  // rounds a single-GPU lease counts from the launch instead and is a step short of the round.
  simulation.physics.restart_outside_lease = !setup.rounds_on_time;
  simulation.physics.step_early_leases = setup.rounds_on_time;
  // Its iterator ends a lease on a whole step, and a multi-GPU job's lease is a step bound.
  simulation.physics.whole_steps = true;
  // A round that starts on an idle cluster waits for more submissions as gavel serve's does.
  if (!physics.arrival_settle) {
    simulation.physics.arrival_settle = Seconds(setup.arrival_settle_seconds);
  }
  // The simulation runs the daemon's bounded lag (its K over the measured start-up, which is
  // the simulation's restart overhead) unless --lag-bound asks for another.
  if (!physics.lag_bound) simulation.physics.lag_bound_restarts = setup.lag_bound_restarts;
  if (o.dispatch_delay == "measured") {
    // What the live rounds took beyond the round and the mean start-up.
    simulation.physics.dispatch_delay =
        Seconds(std::max(0.0, round_length.value_or(setup.round_seconds) -
                                  setup.round_seconds - startup.value_or(0.0)));
  } else {
    const std::optional<double> delay = ParseFiniteDouble(o.dispatch_delay);
    if (!delay || *delay < 0.0 || *delay > bounds::kMaxRoundSeconds) {
      return Status::InvalidArgument("--dispatch-delay: `" + o.dispatch_delay +
                                     "` is not measured or seconds in [0, " +
                                     ShortNumber(bounds::kMaxRoundSeconds) + "]");
    }
    simulation.physics.dispatch_delay = Seconds(*delay);
  }
  simulation.saturation_limit.reset();
  GAVEL_ASSIGN_OR_RETURN(const sim::SimulationResult simulated, sim::Simulate(simulation));
  GAVEL_RETURN_IF_ERROR(WriteResult(o.out_dir, "simulated", simulated));
  const std::vector<ComparedMetric> metrics = CompareResults(live, simulated);
  out << "Simulated: " << s.policy << " on " << s.cluster << " (" << s.worker_types
      << "), round " << setup.round_seconds << " s, restart overhead "
      << physics.restart_overhead << " s"
      << (simulation.physics.restart_outside_lease ? " outside the lease" : "")
      << (simulation.physics.whole_steps ? ", leases of whole steps" : "")
      << (simulation.physics.step_early_leases ? " a step short of the round (on-time rounds)"
                                               : "")
      << ", dispatch delay " << simulation.physics.dispatch_delay.value() << " s"
      << ", idle-cluster arrival pause " << simulation.physics.arrival_settle.value() << " s\n";
  PrintComparison(metrics, out);
  return Status::Ok();
}

CLI::App* AddReplayCommand(CLI::App& app, ReplayOptions* o) {
  CLI::App* cmd = app.add_subcommand(
      "replay", "Replay a trace against a running `gavel serve`, S times faster, and compare "
                "it with the simulator");
  cmd->add_option("--trace", o->trace_file, "Trace file")->required();
  cmd->add_option("--trace-format", o->trace_format,
                  "gavel (default), csv, msr, philly, pai or helios (as gavel simulate)")
      ->check(CLI::IsMember({"gavel", "csv", "msr", "philly", "pai", "helios"}));
  cmd->add_option("--trace-tasks", o->trace_tasks, "pai: the task table");
  cmd->add_flag("--skip-bad-rows", o->skip_bad_rows,
                "philly/pai/helios: skip unreadable rows and report how many");
  cmd->add_option("--scheduler", o->client.scheduler,
                  "Scheduler address (default 127.0.0.1:50060)");
  cmd->add_option("--token-file", o->client.token_file, "File holding your token");
  cmd->add_option("--tls-ca", o->client.tls_ca, "PEM CA of a scheduler that serves TLS");
  cmd->add_option("--time-scale", o->time_scale,
                  "S: arrivals and steps divided by S (60 = an hour of trace in a minute)")
      ->required()
      ->check(Bounded(1e-6, 1e6));
  cmd->add_option("--command", o->command,
                  "Program template, split on spaces; {job_type} {steps} {scale_factor} "
                  "{index} {time_scale} are replaced (default: the example training program)");
  cmd->add_option("--throughputs", o->throughputs_file,
                  "Throughput table of the training program and the simulation (default: the "
                  "shipped one; the daemon reads its own --throughputs)");
  cmd->add_option("--out", o->out_dir, "Directory for live.csv/json (and simulated.*)")
      ->required();
  cmd->add_flag("--compare", o->compare,
                "Also simulate the scaled trace on the daemon's cluster, policy and round, and "
                "print both with the relative difference per metric");
  AddPhysicsFlags(cmd, &o->physics);
  // Here --dispatch-delay also takes `measured`, and restarts are always outside the lease.
  cmd->remove_option(cmd->get_option("--dispatch-delay"));
  cmd->remove_option(cmd->get_option("--restart-outside-lease"));
  cmd->remove_option(cmd->get_option("--whole-steps"));
  cmd->add_option("--dispatch-delay", o->dispatch_delay,
                  "--compare: seconds every simulated lease starts after its round's plan, or "
                  "`measured` (the live rounds' median length beyond the round and the mean "
                  "start-up; default 0)");
  cmd->add_option("--seed", o->seed, "The simulation's seed (default 0)")->check(SeedFlag());
  cmd->add_option("--poll-seconds", o->poll_seconds,
                  "How often jobs are listed (default 0.2)")
      ->check(Bounded(0.01, 60.0, " s"));
  cmd->add_option("--max-seconds", o->max_seconds,
                  "Fail when jobs are unfinished after this long (default 0: wait)")
      ->check(Bounded(0.0, bounds::kMaxSeconds, " s"));
  cmd->add_flag("-q,--quiet", o->quiet, "No progress lines on stderr");
  return cmd;
}

int RunReplayCommand(const ReplayOptions& options) {
  const Status status = RunReplay(options, std::cout);
  if (!status.ok()) {
    std::cerr << "gavel replay: " << status.message() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace gavel::cli
