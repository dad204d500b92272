#include "gavel/agent/agent.h"

#include "gavel/rpc/auth.h"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "gavel/agent/job_logs.h"
#include "gavel/agent/process.h"

namespace gavel::agent {

namespace fs = std::filesystem;

struct Agent::Run {
  enum class Phase { kRunning, kPaused, kStopping };

  wire::Task task;                // the task as the scheduler last gave it
  std::uint64_t round_id = 0;     // round of the micro-task in progress (or last reported)
  std::uint64_t launched_as = 0;  // GAVEL_WORKER_ID of the process
  // The scheduler's number of the launch that started the process (GAVEL_ATTEMPT): its
  // checkpoint namespace, and what its reports carry so that the scheduler can refuse those of
  // a launch it has replaced. An extension keeps it; a task of another attempt restarts.
  std::uint32_t attempt = 0;
  // The process's own credential (its GAVEL_TOKEN): the iterator endpoint accepts calls about
  // this run only with it, so no other process, job or user of the host can speak for it.
  std::string key;
  std::unique_ptr<Process> process;
  std::string stderr_path;

  // The lease: as granted, when, and as delivered to the process (its duration counted from
  // the grant). `generation` counts grants; the process has seen the current lease once
  // delivered_generation == generation.
  wire::Lease lease;
  Seconds granted_at{0.0};
  // The lease of the launch: what a gang process (Lease.step_bound_only) is given at Init
  // whatever extensions came while it started, so every rank begins at the same stop step
  // and meets the extensions at its end (Done).
  wire::Lease launch_lease;
  Seconds launched_at{0.0};
  std::optional<Seconds> ready_at;  // Init received
  bool startup_reported = false;    // a report carried the whole start-up time
  bool reported_once = false;       // a micro-task of this process was reported
  int generation = 1;
  int delivered_generation = 0;
  wire::Lease delivered;

  // Progress as the process last reported it (absolute steps).
  bool initialized = false;
  std::uint64_t checkpointed_steps = 0;
  std::uint64_t steps = 0;
  std::uint64_t steps_base = 0;  // `steps` when the current micro-task began
  std::uint64_t steps_trained = 0;
  double training_seconds = 0.0;

  Phase phase = Phase::kRunning;
  bool reported = false;  // the current micro-task has been reported
  bool complete = false;  // Done(COMPLETE) received
  Seconds complete_at{0.0};
  std::optional<wire::TaskOutcome> stop_outcome;  // set when the agent ends a running process
  std::string stop_reason;
  std::optional<Seconds> kill_at;  // SIGKILL the group then
  bool sigkilled = false;
  DoneReply held;  // a Done(LEASE_REACHED) waiting for the next round (phase kPaused)
  Seconds hold_until{0.0};
};

struct Agent::Slot {
  int index = 0;  // position in slots_
  // The GPU (index into the registration's worker ids) and whether this is its partner slot:
  // the second process of a space-sharing pair, on the same device (same CUDA_VISIBLE_DEVICES).
  int gpu = 0;
  bool partner = false;
  std::optional<WorkerId> worker_id;
  std::string device;
  std::unique_ptr<Run> run;
  // A task waiting for the GPU (or for the job's process on another GPU) to be free.
  std::optional<std::pair<wire::Task, std::uint64_t>> pending;  // task, round id
};

namespace {

std::uint32_t WorldSize(const wire::JobLaunch& job) {
  return std::max<std::uint32_t>(1, job.world_size());
}

// Set per job by the agent; an inherited value would mislead the job's rendezvous.
bool IsRendezvousVariable(const std::string& key) {
  return key == "CUDA_VISIBLE_DEVICES" || key == "MASTER_ADDR" || key == "MASTER_PORT" ||
         key == "RANK" || key == "WORLD_SIZE" || key == "LOCAL_RANK" ||
         key == "LOCAL_WORLD_SIZE";
}

// The lease a kept process continues under. A gang lease grants a round's worth of steps
// (the scheduler's stop step minus the checkpoint it counted from) beyond the step the process
// stops at now, so every rank, on whichever agent, computes the same next stop from the same
// two leases, whether its process had reached its stop yet or not.
wire::Lease ExtendedLease(const wire::Lease& current, const wire::Task& task) {
  wire::Lease next = task.lease();
  if (!next.step_bound_only() || !current.step_bound_only()) return next;
  const std::uint64_t from = task.job().checkpointed_steps();
  const std::uint64_t grant = next.stop_at_step() > from ? next.stop_at_step() - from : 0;
  next.set_stop_at_step(std::min(task.job().total_steps(), current.stop_at_step() + grant));
  return next;
}

std::string FormatSeconds(Seconds s) {
  std::ostringstream out;
  out << s.value() << " s";
  return out.str();
}

bool SameJobAndRank(const wire::JobLaunch& a, const wire::JobLaunch& b) {
  return a.job_id() == b.job_id() && a.rank() == b.rank();
}

std::string NowText() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%d %H:%M:%S", &tm);
  return buffer;
}

wire::DoneResponse StopResponse() {
  wire::DoneResponse response;
  response.set_continue_running(false);
  return response;
}

std::string Truncate(std::string text, std::size_t max) {
  if (text.size() > max) text = "..." + text.substr(text.size() - max);
  return text;
}

}  // namespace

std::string ReadTail(const std::string& path, std::size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  const std::streamoff start =
      std::max<std::streamoff>(0, size - static_cast<std::streamoff>(max_bytes));
  in.seekg(start);
  std::string text(static_cast<std::size_t>(size - start), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(std::max<std::streamsize>(0, in.gcount())));
  if (start > 0) {
    const std::size_t newline = text.find('\n');
    if (newline != std::string::npos && newline + 1 < text.size()) text = text.substr(newline + 1);
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

Status CheckAgentOptions(const AgentOptions& options) {
  if (options.agent_id.empty()) return Status::InvalidArgument("agent id: empty");
  if (options.gpu_type.empty()) return Status::InvalidArgument("--type: empty GPU type");
  if (options.num_gpus < 1) {
    return Status::InvalidArgument("--gpus: must be at least 1, got " +
                                   std::to_string(options.num_gpus));
  }
  if (!options.visible_devices.empty() &&
      options.visible_devices.size() != static_cast<std::size_t>(options.num_gpus)) {
    return Status::InvalidArgument(
        "--visible-devices: " + std::to_string(options.visible_devices.size()) + " devices for " +
        std::to_string(options.num_gpus) + " GPUs");
  }
  for (const auto* dir : {&options.log_dir, &options.checkpoint_root, &options.run_dir}) {
    if (dir->empty() || !fs::path(*dir).is_absolute()) {
      return Status::InvalidArgument("directory '" + *dir + "' must be an absolute path");
    }
  }
  if (options.kill_grace.value() < 0 || options.lease_overrun_grace.value() < 0) {
    return Status::InvalidArgument("grace periods must not be negative");
  }
  if (options.heartbeat_interval && !(options.heartbeat_interval->value() > 0)) {
    return Status::InvalidArgument("--heartbeat-seconds: must be positive");
  }
  if (!(options.backoff_initial.value() > 0) || options.backoff_max < options.backoff_initial) {
    return Status::InvalidArgument("backoff: need 0 < initial <= max");
  }
  return Status::Ok();
}

Agent::Agent(AgentOptions options, SchedulerClient* scheduler, ProcessLauncher* launcher,
             const Clock* clock)
    : options_(std::move(options)), scheduler_(scheduler), launcher_(launcher), clock_(clock) {
  GAVEL_CHECK(scheduler_ != nullptr && launcher_ != nullptr && clock_ != nullptr);
  GAVEL_CHECK_MSG(CheckAgentOptions(options_).ok(), CheckAgentOptions(options_).message().c_str());
  // Room for a partner slot per GPU (added when a packing scheduler hands out their ids), so
  // that adding them never moves a slot.
  slots_.reserve(2 * static_cast<std::size_t>(options_.num_gpus));
  slots_.resize(static_cast<std::size_t>(options_.num_gpus));
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    slots_[i].index = static_cast<int>(i);
    slots_[i].gpu = static_cast<int>(i);
    slots_[i].device =
        options_.visible_devices.empty() ? std::to_string(i) : options_.visible_devices[i];
  }
}

Agent::~Agent() {
  Deferred deferred;
  {
    MutexLock lock(mu_);
    for (Slot& slot : slots_) {
      if (slot.run && slot.run->held) {
        deferred.emplace_back(std::move(slot.run->held),
                              Status::FailedPrecondition("the agent stopped"));
      }
    }
  }
  Invoke(deferred);
  // Runs that remain are killed by their Process destructors.
}

void Agent::Invoke(Deferred& deferred) {
  for (auto& [reply, result] : deferred) {
    if (reply) reply(std::move(result));
  }
  deferred.clear();
}

void Agent::Log(const std::string& line) const {
  if (options_.log) {
    options_.log(line);
  } else {
    std::cerr << NowText() << " gavel worker " << options_.agent_id << ": " << line << "\n";
  }
}

Seconds Agent::HoldTimeout() const {
  if (options_.hold_timeout) return *options_.hold_timeout;
  return Seconds(std::max(10.0, round_duration_.value()));
}

Agent::Slot* Agent::FindSlotByWorker(std::uint64_t worker_id) {
  for (Slot& slot : slots_) {
    if (slot.worker_id && slot.worker_id->value() == worker_id) return &slot;
  }
  return nullptr;
}

Status Agent::CheckJobKey(std::uint64_t job_id, std::uint64_t worker_id,
                         std::string_view key) const {
  MutexLock lock(mu_);
  for (const Slot& slot : slots_) {
    if (slot.run && slot.run->task.job().job_id() == job_id && slot.run->launched_as == worker_id) {
      if (rpc::SecretsEqual(slot.run->key, key)) return Status::Ok();
      return Status::PermissionDenied("missing or wrong GAVEL_TOKEN for job " +
                                      std::to_string(job_id) + " on worker " +
                                      std::to_string(worker_id));
    }
  }
  return Status::NotFound("this agent runs no job " + std::to_string(job_id) + " on worker " +
                          std::to_string(worker_id));
}

Result<Agent::Slot*> Agent::FindRun(std::uint64_t job_id, std::uint64_t worker_id) {
  for (Slot& slot : slots_) {
    if (slot.run && slot.run->task.job().job_id() == job_id && slot.run->launched_as == worker_id) {
      return &slot;
    }
  }
  return Status::NotFound("this agent runs no job " + std::to_string(job_id) + " on worker " +
                          std::to_string(worker_id));
}

wire::Lease Agent::DeliverLease(Run& run, Seconds now) {
  if (run.delivered_generation != run.generation) {
    run.delivered = run.lease;
    // max_duration_s counts from the grant (process start or extension), not from delivery.
    const double left = run.lease.max_duration_s() - (now - run.granted_at).value();
    run.delivered.set_max_duration_s(std::max(0.0, left));
    run.delivered_generation = run.generation;
  }
  return run.delivered;
}

// ---------------------------------------------------------------------------------------
// From the scheduler
// ---------------------------------------------------------------------------------------

Status Agent::StartRound(const wire::StartRoundRequest& request) {
  Deferred deferred;
  {
    UniqueLock lock(mu_);
    if (registering_ && !shutting_down_) {
      // The scheduler sends a round as soon as it has committed our registration, so the round
      // may overtake the reply that tells us our worker ids: wait for the reply.
      ++start_rounds_waiting_;
      const auto deadline = std::chrono::steady_clock::now() +
                            std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                std::chrono::duration<double>(options_.registration_wait.value()));
      while (registering_ && !shutting_down_) {
        if (registration_cv_.wait_until(lock.native(), deadline) == std::cv_status::timeout) break;
      }
      --start_rounds_waiting_;
    }
    if (shutting_down_) return Status::FailedPrecondition("agent is shutting down");
    if (std::none_of(slots_.begin(), slots_.end(),
                     [](const Slot& s) { return s.worker_id.has_value(); })) {
      return Status::FailedPrecondition("agent " + options_.agent_id + " has not registered yet");
    }
    if (last_round_ && request.round_id() <= *last_round_) return Status::Ok();  // a repeat

    // ---- Validate everything before changing anything ----
    std::vector<const wire::Task*> by_slot(slots_.size(), nullptr);
    std::set<std::pair<std::uint64_t, std::uint32_t>> job_ranks;
    for (int i = 0; i < request.tasks_size(); ++i) {
      const wire::Task& task = request.tasks(i);
      const std::string field = "tasks[" + std::to_string(i) + "]";
      Slot* slot = FindSlotByWorker(task.worker_id());
      if (slot == nullptr) {
        std::string ids;
        for (const Slot& s : slots_) {
          if (s.worker_id) ids += (ids.empty() ? "" : ", ") + s.worker_id->ToString();
        }
        return Status::InvalidArgument(field + ".worker_id: " + std::to_string(task.worker_id()) +
                                       " is not a GPU of agent " + options_.agent_id +
                                       " (its GPUs: " + ids + ")");
      }
      if (by_slot[static_cast<std::size_t>(slot->index)] != nullptr) {
        return Status::InvalidArgument(field + ".worker_id: GPU " +
                                       std::to_string(task.worker_id()) +
                                       " has two tasks in one round");
      }
      const wire::JobLaunch& job = task.job();
      if (job.command_size() == 0 || job.command(0).empty()) {
        return Status::InvalidArgument(field + ".job.command: empty");
      }
      if (job.total_steps() == 0)
        return Status::InvalidArgument(field + ".job.total_steps: must be >= 1");
      if (job.rank() >= WorldSize(job)) {
        return Status::InvalidArgument(field + ".job.rank: " + std::to_string(job.rank()) +
                                       " is not below world_size " +
                                       std::to_string(WorldSize(job)));
      }
      if (!task.has_lease()) return Status::InvalidArgument(field + ".lease: missing");
      if (!(task.lease().max_duration_s() > 0)) {
        return Status::InvalidArgument(field + ".lease.max_duration_s: must be positive");
      }
      if (!job_ranks.emplace(job.job_id(), job.rank()).second) {
        return Status::InvalidArgument(field + ".job: job " + std::to_string(job.job_id()) +
                                       " rank " + std::to_string(job.rank()) +
                                       " is assigned twice");
      }
      by_slot[static_cast<std::size_t>(slot->index)] = &task;
    }

    // ---- Apply ----
    last_round_ = request.round_id();
    const Seconds now = clock_->Now();
    for (Slot& slot : slots_) {
      ApplyTask(slot, by_slot[static_cast<std::size_t>(slot.index)], request.round_id(), now,
                deferred);
    }
    work_pending_ = true;
  }
  work_cv_.notify_all();
  Invoke(deferred);
  return Status::Ok();
}

void Agent::ApplyTask(Slot& slot, const wire::Task* task, std::uint64_t round_id, Seconds now,
                      Deferred& deferred) {
  Run* run = slot.run.get();
  if (task != nullptr && run != nullptr && run->phase != Run::Phase::kStopping &&
      !task->restart() && SameJobAndRank(run->task.job(), task->job()) &&
      run->attempt == task->job().attempt()) {
    // ---- Lease extension: the job keeps this GPU, no restart ----
    if (run->phase == Run::Phase::kRunning && !run->reported) {
      // The old round's micro-task ends here; its steps are credited through the absolute
      // checkpointed count of a later report.
      Report(slot, *run, wire::LEASE_EXPIRED, 0,
             "lease extended into round " + std::to_string(round_id) + " while running", now);
    }
    run->task = *task;
    run->lease = ExtendedLease(run->lease, *task);
    run->round_id = round_id;
    run->granted_at = now;
    ++run->generation;
    run->reported = false;
    run->steps_base = std::max(run->steps, run->checkpointed_steps);
    run->steps_trained = 0;
    run->training_seconds = 0.0;
    if (run->phase == Run::Phase::kPaused) {
      run->phase = Run::Phase::kRunning;
      wire::DoneResponse response;
      response.set_continue_running(true);
      *response.mutable_lease() = DeliverLease(*run, now);
      response.set_round_id(round_id);
      deferred.emplace_back(std::move(run->held), std::move(response));
      run->held = nullptr;
    }
    Log("round " + std::to_string(round_id) + ": job " + std::to_string(task->job().job_id()) +
        " keeps GPU " + slot.worker_id->ToString() + " (lease extended)");
    if (slot.pending) DropPending(slot, "superseded by round " + std::to_string(round_id));
    return;
  }
  if (run != nullptr && run->phase != Run::Phase::kStopping) {
    StopRun(slot, wire::KILLED,
            task
                ? "round " + std::to_string(round_id) + " gives GPU " + slot.worker_id->ToString() +
                      " to job " + std::to_string(task->job().job_id())
                : "round " + std::to_string(round_id) + " leaves GPU " +
                      slot.worker_id->ToString() + " idle",
            now, deferred);
  }
  if (slot.pending)
    DropPending(slot, "superseded by round " + std::to_string(round_id) + " before it started");
  if (task != nullptr) slot.pending.emplace(*task, round_id);
}

void Agent::StopRun(Slot& slot, wire::TaskOutcome outcome, const std::string& reason, Seconds now,
                    Deferred& deferred) {
  Run& run = *slot.run;
  switch (run.phase) {
    case Run::Phase::kStopping:
      return;
    case Run::Phase::kPaused:
      // Already reported (LEASE_EXPIRED); it exits on its own once told to stop.
      deferred.emplace_back(std::move(run.held), StopResponse());
      run.held = nullptr;
      break;
    case Run::Phase::kRunning:
      if (!run.complete) {
        run.process->SignalGroup(SIGTERM);
        run.stop_outcome = outcome;
      }
      break;
  }
  run.phase = Run::Phase::kStopping;
  run.stop_reason = reason;
  run.kill_at = now + options_.kill_grace;
  Log("stopping job " + std::to_string(run.task.job().job_id()) + " on GPU " +
      slot.worker_id->ToString() + ": " + reason);
}

void Agent::DropPending(Slot& slot, const std::string& reason) {
  const auto& [task, round_id] = *slot.pending;
  ReportNeverStarted(task, round_id, wire::KILLED, reason);
  slot.pending.reset();
}

Status Agent::KillJob(const wire::KillJobRequest& request) {
  Deferred deferred;
  {
    MutexLock lock(mu_);
    const Seconds now = clock_->Now();
    const std::string reason =
        "KillJob" + (request.reason().empty() ? std::string() : ": " + request.reason());
    // A kill meant for an earlier round spares what a later round started or extended
    // (worker.proto, KillJobRequest.round_id; 0 = any round).
    auto applies = [&](std::uint64_t job_id, std::uint64_t round_id) {
      return job_id == request.job_id() &&
             (request.round_id() == 0 || round_id <= request.round_id());
    };
    for (Slot& slot : slots_) {
      if (slot.pending && applies(slot.pending->first.job().job_id(), slot.pending->second)) {
        DropPending(slot, reason);
      }
      if (slot.run && applies(slot.run->task.job().job_id(), slot.run->round_id)) {
        StopRun(slot, wire::KILLED, reason, now, deferred);
      }
    }
    work_pending_ = true;
  }
  work_cv_.notify_all();
  Invoke(deferred);
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------
// From the job processes
// ---------------------------------------------------------------------------------------

Result<wire::InitResponse> Agent::Init(const wire::InitRequest& request) {
  MutexLock lock(mu_);
  GAVEL_ASSIGN_OR_RETURN(Slot* slot, FindRun(request.job_id(), request.worker_id()));
  Run* run = slot->run.get();
  const Seconds now = clock_->Now();
  // The restored checkpoint is the truth about the job's progress.
  run->checkpointed_steps = request.restored_steps();
  run->steps = request.restored_steps();
  wire::InitResponse response;
  bool launch_lease = false;
  if (!run->initialized) {
    run->steps_base = request.restored_steps();
    // The lease begins now that the process is ready: start-up is restart overhead, not
    // training time (ReportDone.startup_s). Unless it ends with its round (startup_inside):
    // then it counts from the launch.
    run->ready_at = now;
    if (!run->lease.startup_inside() || run->lease.step_bound_only()) run->granted_at = now;
    if (run->lease.step_bound_only() && run->generation > 1) {
      // A gang process that was extended while it started begins at its launch's stop step
      // like the ranks that were ready before the extension; Done brings it the extension.
      run->delivered = run->launch_lease;
      run->delivered_generation = 1;
      launch_lease = true;
    }
  }
  run->initialized = true;
  *response.mutable_lease() = launch_lease ? run->delivered : DeliverLease(*run, now);
  response.set_total_steps(run->task.job().total_steps());
  response.set_hold_timeout_s(HoldTimeout().value());
  return response;
}

Result<wire::ProgressResponse> Agent::Progress(const wire::ProgressRequest& request) {
  MutexLock lock(mu_);
  GAVEL_ASSIGN_OR_RETURN(Slot* slot, FindRun(request.job_id(), request.worker_id()));
  Run* run = slot->run.get();
  run->steps = request.steps();
  run->checkpointed_steps = request.checkpointed_steps();
  run->steps_trained = request.steps() > run->steps_base ? request.steps() - run->steps_base : 0;
  run->training_seconds = request.training_seconds();
  wire::ProgressResponse response;
  // A gang process learns of an extension only at its lease end (Done), so that all ranks
  // switch leases at the same step whenever each of them last called Progress.
  *response.mutable_lease() =
      run->lease.step_bound_only() ? run->delivered : DeliverLease(*run, clock_->Now());
  return response;
}

void Agent::Done(const wire::DoneRequest& request, DoneReply reply) {
  Deferred deferred;
  {
    MutexLock lock(mu_);
    Result<Slot*> found = FindRun(request.job_id(), request.worker_id());
    const Seconds now = clock_->Now();
    if (!found.ok()) {
      deferred.emplace_back(std::move(reply), found.status());
    } else if (request.reason() != wire::LEASE_REACHED && request.reason() != wire::COMPLETE) {
      deferred.emplace_back(std::move(reply),
                            Status::InvalidArgument("reason: must be LEASE_REACHED or COMPLETE"));
    } else {
      Slot* slot = *found;
      Run* run = slot->run.get();
      run->checkpointed_steps = request.checkpointed_steps();
      run->steps = std::max(run->steps, request.checkpointed_steps());
      run->steps_trained = request.steps_trained();
      run->training_seconds = request.training_seconds();
      if (request.reason() == wire::COMPLETE) {
        run->complete = true;
        run->complete_at = now;
        // Reported now, not at the exit: the job is done once its final checkpoint is, and a
        // process slow to exit (a framework's teardown) must not make it a straggler.
        if (!run->reported) Report(*slot, *run, wire::COMPLETED, 0, "", now);
        deferred.emplace_back(std::move(reply), StopResponse());
      } else if (run->phase == Run::Phase::kStopping) {
        deferred.emplace_back(std::move(reply), StopResponse());
      } else if (run->delivered_generation != run->generation) {
        // It stopped at a lease that has since been extended: go on under the new one.
        wire::DoneResponse response;
        response.set_continue_running(true);
        *response.mutable_lease() = DeliverLease(*run, now);
        response.set_round_id(run->round_id);
        deferred.emplace_back(std::move(reply), std::move(response));
      } else {
        if (run->phase == Run::Phase::kPaused && run->held) {
          // A repeated Done (the client retried): the newer connection waits instead.
          deferred.emplace_back(std::move(run->held),
                                Status::FailedPrecondition("superseded by a repeated Done"));
        }
        if (!run->reported) Report(*slot, *run, wire::LEASE_EXPIRED, 0, "", now);
        run->phase = Run::Phase::kPaused;
        run->held = std::move(reply);
        run->hold_until = now + HoldTimeout();
        work_pending_ = true;
      }
    }
  }
  work_cv_.notify_all();
  Invoke(deferred);
}

// ---------------------------------------------------------------------------------------
// The monitor loop
// ---------------------------------------------------------------------------------------

Result<wire::ReadLogsResponse> Agent::ReadLogs(const wire::ReadLogsRequest& request) const {
  return ReadJobLogs(options_.log_dir, request);
}

void Agent::Tick() {
  Deferred deferred;
  std::optional<std::set<std::uint64_t>> prune_keeping;
  {
    MutexLock lock(mu_);
    const Seconds now = clock_->Now();
    ReapAndEnforce(now, deferred);
    StartPending(now);
    if (options_.log_retention && (!last_prune_ || now - *last_prune_ >= Seconds(60.0))) {
      last_prune_ = now;
      prune_keeping.emplace();
      for (const Slot& slot : slots_) {
        if (slot.run) prune_keeping->insert(slot.run->task.job().job_id());
        if (slot.pending) prune_keeping->insert(slot.pending->first.job().job_id());
      }
    }
  }
  if (prune_keeping) {
    const double now_unix = std::chrono::duration<double>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count();
    const int removed =
        PruneJobLogs(options_.log_dir, *options_.log_retention, now_unix, *prune_keeping);
    if (removed > 0) Log("deleted " + std::to_string(removed) + " job log(s) past their retention");
  }
  Invoke(deferred);
  TalkToScheduler();
}

void Agent::WaitForWork(Seconds max_wait) {
  UniqueLock lock(mu_);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(max_wait.value()));
  while (!work_pending_) {
    if (work_cv_.wait_until(lock.native(), deadline) == std::cv_status::timeout) break;
  }
  work_pending_ = false;
}

void Agent::ReapAndEnforce(Seconds now, Deferred& deferred) {
  for (Slot& slot : slots_) {
    if (!slot.run) continue;
    Run& run = *slot.run;
    const std::string job = std::to_string(run.task.job().job_id());
    if (const std::optional<ExitStatus> exit = run.process->PollExit()) {
      if (run.held) {
        deferred.emplace_back(std::move(run.held), StopResponse());
        run.held = nullptr;
      }
      if (!run.reported) {
        if (run.complete && exit->code == 0) {
          Report(slot, run, wire::COMPLETED, 0, "", now);
        } else if (run.stop_outcome) {
          Report(slot, run, *run.stop_outcome, exit->code,
                 run.stop_reason + " (" + exit->ToString() + ")", now);
        } else {
          std::string message = "job process ended before its lease with " + exit->ToString();
          const std::string tail = ReadTail(run.stderr_path, 1500);
          if (!tail.empty()) message += "; stderr tail:\n" + tail;
          Report(slot, run, wire::CRASHED, exit->code, message, now);
        }
      }
      Log("job " + job + " on GPU " + slot.worker_id->ToString() + " (pid " +
          std::to_string(run.process->pid()) + ") ended: " + exit->ToString());
      slot.run.reset();
      continue;
    }
    switch (run.phase) {
      case Run::Phase::kStopping:
        if (run.kill_at && now >= *run.kill_at && !run.sigkilled) {
          run.process->SignalGroup(SIGKILL);
          run.sigkilled = true;
          Log("job " + job + " did not exit " + std::to_string(options_.kill_grace.value()) +
              " s after being told to stop: SIGKILL");
        }
        break;
      case Run::Phase::kRunning: {
        if (!run.initialized) {
          if (now >= run.launched_at + options_.startup_timeout) {
            StopRun(slot, wire::CRASHED,
                    "start-up timeout: not ready (no Init) " +
                        FormatSeconds(options_.startup_timeout) + " after its launch",
                    now, deferred);
          }
          break;  // its lease has not begun
        }
        const Seconds deadline = run.complete
                                     ? run.complete_at + options_.lease_overrun_grace
                                     : run.granted_at + Seconds(run.lease.max_duration_s()) +
                                           options_.lease_overrun_grace;
        if (now >= deadline) {
          StopRun(slot, wire::KILLED,
                  run.complete ? "did not exit after reporting completion"
                               : "lease overrun: no Done " +
                                     std::to_string(options_.lease_overrun_grace.value()) +
                                     " s after its lease ended",
                  now, deferred);
        }
        break;
      }
      case Run::Phase::kPaused:
        if (now >= run.hold_until) {
          // Already reported (LEASE_EXPIRED): the outcome is not used.
          StopRun(slot, wire::KILLED, "no next round within the hold timeout", now, deferred);
        }
        break;
    }
  }
}

void Agent::StartPending(Seconds now) {
  for (Slot& slot : slots_) {
    if (!slot.pending || slot.run) continue;
    const wire::JobLaunch& job = slot.pending->first.job();
    // One process per (job, rank) on this host: a job moving between GPUs waits for its old
    // process to be gone (both would write the same checkpoint).
    const bool busy_elsewhere = std::any_of(slots_.begin(), slots_.end(), [&](const Slot& other) {
      return other.run && SameJobAndRank(other.run->task.job(), job);
    });
    if (busy_elsewhere) continue;
    const auto [task, round_id] = *std::move(slot.pending);
    slot.pending.reset();
    StartTask(slot, task, round_id, now);
  }
}

void Agent::StartTask(Slot& slot, const wire::Task& task, std::uint64_t round_id, Seconds now) {
  const wire::JobLaunch& job = task.job();
  const std::string job_name = "job-" + std::to_string(job.job_id());
  auto fail = [&](const std::string& message) GAVEL_REQUIRES(mu_) {  // StartTask holds mu_
    Log("cannot start job " + std::to_string(job.job_id()) + ": " + message);
    ReportNeverStarted(task, round_id, wire::LAUNCH_FAILED, message);
  };

  // ---- Paths ----
  fs::path working_directory = options_.run_dir;
  if (!job.working_directory().empty()) {
    const fs::path wd(job.working_directory());
    working_directory = wd.is_absolute() ? wd : fs::path(options_.run_dir) / wd;
  }
  // The scheduler's directory for the job when it sends one (shared storage, so the job finds
  // its checkpoint on whichever host runs it next); else one under our own root. A relative
  // one is taken from the run directory, as the working directory is.
  fs::path checkpoint_dir = fs::path(options_.checkpoint_root) / job_name;
  if (!job.checkpoint_dir().empty()) {
    const fs::path given(job.checkpoint_dir());
    checkpoint_dir = given.is_absolute() ? given : fs::path(options_.run_dir) / given;
  }
  std::error_code ec;
  fs::create_directories(checkpoint_dir, ec);
  if (ec)
    return fail("cannot create checkpoint directory '" + checkpoint_dir.string() +
                "': " + ec.message());
  fs::create_directories(options_.log_dir, ec);
  if (ec) return fail("cannot create log directory '" + options_.log_dir + "': " + ec.message());
  const std::string log_stem = (fs::path(options_.log_dir) / job_name).string() +
                               (WorldSize(job) > 1 ? ".rank-" + std::to_string(job.rank()) : "");

  Result<std::string> program = ResolveProgram(job.command(0), options_.program_path);
  if (!program.ok()) return fail(program.status().message());

  // ---- Environment: the agent's, then the job's, then ours ----
  std::map<std::string, std::string> env;
  for (const auto& [key, value] : options_.base_env) {
    if (key.rfind("GAVEL_", 0) == 0 || IsRendezvousVariable(key)) continue;
    env[key] = value;
  }
  for (const auto& [key, value] : job.env()) env[key] = value;
  env["GAVEL_AGENT_URL"] = options_.iterator_url;
  env["GAVEL_AGENT_ID"] = options_.agent_id;
  env["GAVEL_JOB_ID"] = std::to_string(job.job_id());
  env["GAVEL_WORKER_ID"] = slot.worker_id->ToString();
  env["GAVEL_ROUND_ID"] = std::to_string(round_id);
  env["GAVEL_TOTAL_STEPS"] = std::to_string(job.total_steps());
  env["GAVEL_CHECKPOINTED_STEPS"] = std::to_string(job.checkpointed_steps());
  env["GAVEL_CHECKPOINT_DIR"] = checkpoint_dir.string();
  env["GAVEL_GPU_TYPE"] = options_.gpu_type;
  env["GAVEL_ATTEMPT"] = std::to_string(job.attempt());
  env["GAVEL_RANK"] = std::to_string(job.rank());
  env["GAVEL_WORLD_SIZE"] = std::to_string(WorldSize(job));
  // torchrun's environment, so that init_process_group(init_method="env://") works as is.
  env["RANK"] = env["GAVEL_RANK"];
  env["WORLD_SIZE"] = env["GAVEL_WORLD_SIZE"];
  env["LOCAL_RANK"] = std::to_string(job.local_rank());
  env["LOCAL_WORLD_SIZE"] = std::to_string(std::max<std::uint32_t>(1, job.local_world_size()));
  if (job.master_port() != 0) {
    env["GAVEL_MASTER_ADDR"] = env["MASTER_ADDR"] = job.master_addr();
    env["GAVEL_MASTER_PORT"] = env["MASTER_PORT"] = std::to_string(job.master_port());
  }
  if (!job.job_type().empty()) env["GAVEL_JOB_TYPE"] = job.job_type();
  if (!job.partner_job_type().empty()) env["GAVEL_PARTNER_JOB_TYPE"] = job.partner_job_type();
  // The job's only credential: good for its own iterator calls on this agent, nothing else
  // (never the agent's token, which the scheduler would take from anyone).
  const std::string key = rpc::NewSecret();
  env["GAVEL_TOKEN"] = key;
  env["CUDA_VISIBLE_DEVICES"] = slot.device;

  LaunchSpec spec;
  spec.argv.assign(job.command().begin(), job.command().end());
  spec.argv[0] = *program;
  spec.working_directory = working_directory.string();
  spec.env.assign(env.begin(), env.end());
  spec.stdout_path = log_stem + ".out";
  spec.stderr_path = log_stem + ".err";
  {
    const std::string banner = "==== gavel: " + NowText() + " job " + std::to_string(job.job_id()) +
                               " round " + std::to_string(round_id) + " worker " +
                               slot.worker_id->ToString() + " (" + options_.gpu_type + ", device " +
                               slot.device + ") attempt " + std::to_string(job.attempt()) +
                               " ====\n";
    for (const std::string* path : {&spec.stdout_path, &spec.stderr_path}) {
      std::ofstream(*path, std::ios::app) << banner;
    }
  }

  Result<std::unique_ptr<Process>> process = launcher_->Launch(spec);
  if (!process.ok()) return fail(process.status().message());

  auto run = std::make_unique<Run>();
  run->task = task;
  run->attempt = task.job().attempt();
  run->round_id = round_id;
  run->launched_as = slot.worker_id->value();
  run->key = key;
  run->process = std::move(process).value();
  run->stderr_path = spec.stderr_path;
  run->lease = task.lease();
  run->launch_lease = task.lease();
  run->granted_at = now;
  run->launched_at = now;
  run->checkpointed_steps = job.checkpointed_steps();
  run->steps = job.checkpointed_steps();
  run->steps_base = job.checkpointed_steps();
  Log("round " + std::to_string(round_id) + ": started job " + std::to_string(job.job_id()) +
      " on GPU " + slot.worker_id->ToString() + " (pid " + std::to_string(run->process->pid()) +
      ")");
  slot.run = std::move(run);
}

void Agent::Report(const Slot& slot, Run& run, wire::TaskOutcome outcome, int exit_code,
                   const std::string& message, Seconds now) {
  wire::ReportDoneRequest report;
  report.set_agent_id(options_.agent_id);
  report.set_worker_id(slot.worker_id->value());
  report.set_job_id(run.task.job().job_id());
  report.set_round_id(run.round_id);
  report.set_attempt(run.attempt);
  report.set_outcome(outcome);
  report.set_checkpointed_steps(run.checkpointed_steps);
  report.set_steps_trained(run.steps_trained);
  report.set_training_seconds(run.training_seconds);
  // Elapsed from the launch for the micro-task that started the process (its start-up is
  // restart overhead the round paid), else from the extension.
  report.set_elapsed_s((now - (run.reported_once ? run.granted_at : run.launched_at)).value());
  run.reported_once = true;
  report.set_exit_code(exit_code);
  report.set_message(Truncate(message, 2000));
  if (!run.startup_reported) {
    // The first report once the process is ready carries its whole start-up (one that ends
    // before it was ready: the time it was given). A report while it still starts (its round
    // ended first) carries the time so far, and the next one the whole.
    report.set_startup_s((run.ready_at.value_or(now) - run.launched_at).value());
    run.startup_reported = run.ready_at.has_value() || outcome != wire::LEASE_EXPIRED;
  }
  run.reported = true;
  Log("report: job " + std::to_string(report.job_id()) + " round " +
      std::to_string(report.round_id()) + " GPU " + std::to_string(report.worker_id()) + " " +
      wire::TaskOutcome_Name(outcome) + " at checkpointed step " +
      std::to_string(report.checkpointed_steps()) +
      (message.empty() ? "" : " (" + Truncate(message.substr(0, message.find('\n')), 200) + ")"));
  outbox_.push_back(std::move(report));
}

void Agent::ReportNeverStarted(const wire::Task& task, std::uint64_t round_id,
                               wire::TaskOutcome outcome, const std::string& message) {
  wire::ReportDoneRequest report;
  report.set_agent_id(options_.agent_id);
  report.set_worker_id(task.worker_id());
  report.set_job_id(task.job().job_id());
  report.set_round_id(round_id);
  report.set_attempt(task.job().attempt());
  report.set_outcome(outcome);
  report.set_checkpointed_steps(task.job().checkpointed_steps());
  report.set_message(Truncate(message, 2000));
  Log("report: job " + std::to_string(report.job_id()) + " round " + std::to_string(round_id) +
      " GPU " + std::to_string(task.worker_id()) + " " + wire::TaskOutcome_Name(outcome) + " (" +
      message + ")");
  outbox_.push_back(std::move(report));
}

wire::GpuState Agent::GpuStateOf(const Slot& slot) const {
  wire::GpuState state;
  state.set_worker_id(slot.worker_id ? slot.worker_id->value() : 0);
  if (slot.run) {
    state.set_job_id(slot.run->task.job().job_id());
    state.set_busy(true);
    state.set_round_id(slot.run->round_id);
    state.set_paused(slot.run->phase == Run::Phase::kPaused);
    // Not a straggler: still starting, or (a time lease) inside a lease that began late, at
    // its Init, so it may end after the round's deadline by its start-up.
    const Run& run = *slot.run;
    const bool in_late_lease =
        run.initialized && !run.lease.step_bound_only() &&
        clock_->Now() < run.granted_at + Seconds(run.lease.max_duration_s());
    state.set_starting(run.phase == Run::Phase::kRunning && (!run.initialized || in_late_lease));
  }
  return state;
}

void Agent::TalkToScheduler() {
  // ---- Decide what to say (locked) ----
  bool do_register = false;
  bool do_heartbeat = false;
  wire::RegisterWorkerRequest registration;
  wire::HeartbeatRequest heartbeat;
  std::vector<wire::ReportDoneRequest> reports;
  {
    MutexLock lock(mu_);
    const Seconds now = clock_->Now();
    if (now < next_contact_) return;
    if (!registered_) {
      do_register = true;
      registering_ = true;
      registration.set_agent_id(options_.agent_id);
      registration.set_gpu_type(options_.gpu_type);
      registration.set_num_gpus(static_cast<std::uint32_t>(options_.num_gpus));
      registration.set_address(options_.address);
      registration.set_callback_token(options_.callback_token);
      registration.set_host_cpus(options_.host_cpus);
      registration.set_host_mem_gb(options_.host_mem_gb);
      for (const Slot& slot : slots_) {
        if (slot.run && slot.worker_id) *registration.add_running() = GpuStateOf(slot);
      }
    } else {
      do_heartbeat = now >= next_heartbeat_;
      heartbeat.set_agent_id(options_.agent_id);
      for (const Slot& slot : slots_) {
        if (slot.worker_id) *heartbeat.add_gpus() = GpuStateOf(slot);
      }
      const std::size_t n = std::min<std::size_t>(outbox_.size(), 64);
      reports.assign(outbox_.begin(), outbox_.begin() + static_cast<std::ptrdiff_t>(n));
    }
  }

  // A failed call: back off (one backoff for the whole connection).
  auto failed = [this](const Status& status, const std::string& what) {
    MutexLock lock(mu_);
    const Seconds now = clock_->Now();
    const bool first = backoff_.value() == 0.0;
    backoff_ = first ? options_.backoff_initial : std::min(options_.backoff_max, backoff_ * 2.0);
    next_contact_ = now + backoff_;
    scheduler_unreachable_ = status.code() == StatusCode::kIoError;
    if (status.code() == StatusCode::kNotFound) registered_ = false;
    if (first || backoff_ >= options_.backoff_max) {
      Log(what + " failed (" + status.ToString() + "); retrying in " +
          std::to_string(backoff_.value()) + " s");
    }
  };
  auto succeeded = [this]() GAVEL_REQUIRES(mu_) {  // caller holds mu_
    if (backoff_.value() != 0.0) Log("scheduler reachable again");
    backoff_ = Seconds(0.0);
    next_contact_ = Seconds(0.0);
    scheduler_unreachable_ = false;
  };

  // ---- Register ----
  if (do_register) {
    // Whatever the outcome, StartRounds waiting for the reply go on once it is applied (this
    // guard is destroyed after the lock below that applies it).
    struct RegistrationDone {
      Agent* agent;
      ~RegistrationDone() {
        {
          MutexLock lock(agent->mu_);
          agent->registering_ = false;
        }
        agent->registration_cv_.notify_all();
      }
    } registration_done{this};
    Result<wire::RegisterWorkerResponse> response = scheduler_->RegisterWorker(registration);
    if (!response.ok()) {
      // rpc::FromGrpc maps UNAUTHENTICATED and PERMISSION_DENIED (and nothing else) to
      // kPermissionDenied; FAILED_PRECONDITION ("not now") is retried without telling.
      if (response.status().code() == StatusCode::kPermissionDenied && options_.on_refused) {
        options_.on_refused(response.status());
      }
      return failed(response.status(), "RegisterWorker");
    }
    if (response->worker_ids_size() != options_.num_gpus) {
      return failed(
          Status::Internal("the scheduler gave " + std::to_string(response->worker_ids_size()) +
                           " worker ids for " + std::to_string(options_.num_gpus) + " GPUs"),
          "RegisterWorker");
    }
    const int partners = response->partner_worker_ids_size();
    if (partners != 0 && partners != options_.num_gpus) {
      return failed(Status::Internal("the scheduler gave " + std::to_string(partners) +
                                     " partner worker ids for " +
                                     std::to_string(options_.num_gpus) + " GPUs"),
                    "RegisterWorker");
    }
    MutexLock lock(mu_);
    const Seconds now = clock_->Now();
    // Space sharing: the scheduler packs two jobs per GPU; each GPU gets a partner slot on its
    // device (kept, idle and without an id, should a later scheduler not pack).
    if (partners > 0 && slots_.size() == static_cast<std::size_t>(options_.num_gpus)) {
      for (int g = 0; g < options_.num_gpus; ++g) {
        Slot partner;
        partner.index = static_cast<int>(slots_.size());
        partner.gpu = g;
        partner.partner = true;
        partner.device = slots_[static_cast<std::size_t>(g)].device;
        slots_.push_back(std::move(partner));
      }
    }
    std::string ids;
    for (Slot& slot : slots_) {
      if (slot.partner) {
        if (partners == 0) {
          slot.worker_id.reset();
        } else {
          slot.worker_id = WorkerId(response->partner_worker_ids(slot.gpu));
        }
        continue;
      }
      const WorkerId id(response->worker_ids(slot.gpu));
      if (slot.worker_id && *slot.worker_id != id) {
        Log("GPU " + std::to_string(slot.index) + " renumbered from worker " +
            slot.worker_id->ToString() + " to " + id.ToString());
      }
      slot.worker_id = id;
      ids += (ids.empty() ? "" : ", ") + id.ToString();
    }
    registered_ = true;
    if (registrations_ > 0 && last_round_) {
      // A scheduler that had to be re-registered with may have lost its round numbering
      // (a fresh state directory); accept whatever round it sends next.
      last_round_.reset();
    }
    ++registrations_;
    if (response->round_duration_s() > 0) round_duration_ = Seconds(response->round_duration_s());
    heartbeat_interval_ = options_.heartbeat_interval.value_or(
        Seconds(response->heartbeat_interval_s() > 0 ? response->heartbeat_interval_s() : 5.0));
    next_heartbeat_ = now + heartbeat_interval_;
    succeeded();
    Log("registered " + std::to_string(options_.num_gpus) + " " + options_.gpu_type +
        " GPU(s) as worker(s) " + ids +
        (partners > 0 ? " with a partner slot each (space sharing)" : "") + " (round " +
        std::to_string(round_duration_.value()) + " s, heartbeat every " +
        std::to_string(heartbeat_interval_.value()) + " s)");
    return;
  }

  // ---- Heartbeat ----
  if (do_heartbeat) {
    Result<wire::HeartbeatResponse> response = scheduler_->Heartbeat(heartbeat);
    if (!response.ok()) return failed(response.status(), "Heartbeat");
    MutexLock lock(mu_);
    ++heartbeats_;
    next_heartbeat_ = clock_->Now() + heartbeat_interval_;
    succeeded();
    if (!response->known()) {
      registered_ = false;
      Log("the scheduler does not know this agent (restarted, or declared it dead): registering "
          "again");
      return;
    }
  }

  // ---- Reports, oldest first ----
  for (const wire::ReportDoneRequest& report : reports) {
    const Status status = scheduler_->ReportDone(report);
    const StatusCode code = status.code();
    if (!status.ok() && (code == StatusCode::kIoError || code == StatusCode::kFailedPrecondition ||
                         code == StatusCode::kPermissionDenied ||
                         code == StatusCode::kNotFound)) {
      return failed(status, "ReportDone (job " + std::to_string(report.job_id()) + ")");
    }
    MutexLock lock(mu_);
    if (status.ok()) {
      ++reports_sent_;
      succeeded();
    } else {
      Log("the scheduler refused the report for job " + std::to_string(report.job_id()) +
          " round " + std::to_string(report.round_id()) + " (" + status.ToString() + "); dropped");
    }
    outbox_.pop_front();
  }
}

// ---------------------------------------------------------------------------------------
// Shutdown and queries
// ---------------------------------------------------------------------------------------

void Agent::BeginShutdown() {
  Deferred deferred;
  {
    MutexLock lock(mu_);
    if (shutting_down_) return;
    shutting_down_ = true;
    const Seconds now = clock_->Now();
    for (Slot& slot : slots_) {
      if (slot.pending) DropPending(slot, "agent shutting down");
      if (slot.run) StopRun(slot, wire::KILLED, "agent shutting down", now, deferred);
    }
    work_pending_ = true;
  }
  work_cv_.notify_all();
  registration_cv_.notify_all();  // StartRounds waiting for a registration give up
  Invoke(deferred);
}

bool Agent::ShutdownComplete() const {
  MutexLock lock(mu_);
  const bool idle =
      std::all_of(slots_.begin(), slots_.end(), [](const Slot& s) { return !s.run && !s.pending; });
  return shutting_down_ && idle && (outbox_.empty() || scheduler_unreachable_ || !registered_);
}

AgentSnapshot Agent::Snapshot() const {
  MutexLock lock(mu_);
  AgentSnapshot snapshot;
  snapshot.registered = registered_;
  snapshot.shutting_down = shutting_down_;
  snapshot.reports_pending = outbox_.size();
  snapshot.registrations = registrations_;
  snapshot.heartbeats = heartbeats_;
  snapshot.reports_sent = reports_sent_;
  snapshot.start_rounds_waiting = start_rounds_waiting_;
  for (const Slot& slot : slots_) {
    AgentSnapshot::Gpu gpu;
    gpu.worker_id = slot.worker_id;
    gpu.device = slot.device;
    gpu.partner_slot = slot.partner;
    if (slot.run) {
      const Run& run = *slot.run;
      gpu.job_id = run.task.job().job_id();
      gpu.round_id = run.round_id;
      gpu.pid = run.process->pid();
      gpu.checkpointed_steps = run.checkpointed_steps;
      switch (run.phase) {
        case Run::Phase::kRunning:
          gpu.phase = AgentSnapshot::Phase::kRunning;
          break;
        case Run::Phase::kPaused:
          gpu.phase = AgentSnapshot::Phase::kPaused;
          break;
        case Run::Phase::kStopping:
          gpu.phase = AgentSnapshot::Phase::kStopping;
          break;
      }
    } else if (slot.pending) {
      gpu.phase = AgentSnapshot::Phase::kStarting;
      gpu.job_id = slot.pending->first.job().job_id();
      gpu.round_id = slot.pending->second;
    }
    snapshot.gpus.push_back(gpu);
  }
  return snapshot;
}

}  // namespace gavel::agent
