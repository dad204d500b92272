// Fakes of the agent's ports (ports.h) for tests (the clock is gavel::ManualClock): a
// scheduler that records what it is told and can be "down", and a launcher whose processes
// exit when the test says so (or when signalled).
//
// Thread-safety: every fake is internally synchronised, so tests may drive an Agent from
// several threads (e.g. the HTTP endpoint) while inspecting the fakes.
#pragma once

#include <signal.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "gavel/core/mutex.h"
#include "gavel/agent/ports.h"

namespace gavel::agent::testing {

// The tests' clock is the one fake, gavel::ManualClock (core/clock.h), started here so that
// no deadline the agent computes is at or below zero.
inline constexpr Seconds kTestClockStart{1000.0};

// What a fake process went through; shared between the launcher (the test's view) and the
// Process handed to the agent.
struct FakeProcessState {
  int pid = 0;
  LaunchSpec spec;
  std::vector<int> signals;        // every SignalGroup call, in order
  std::optional<ExitStatus> exit;  // set by Exit() or by a fatal signal
  bool exits_on_sigterm = true;    // a well-behaved job exits at SIGTERM (status -15)
};

class FakeProcess final : public Process {
 public:
  FakeProcess(std::shared_ptr<FakeProcessState> state, std::shared_ptr<Mutex> mu)
      : state_(std::move(state)), mu_(std::move(mu)) {}
  int pid() const override { return state_->pid; }
  void SignalGroup(int signal) override {
    MutexLock lock(*mu_);
    state_->signals.push_back(signal);
    if (state_->exit) return;
    if (signal == SIGKILL || (signal == SIGTERM && state_->exits_on_sigterm))
      state_->exit = ExitStatus{-signal};
  }
  std::optional<ExitStatus> PollExit() override {
    MutexLock lock(*mu_);
    return state_->exit;
  }

 private:
  std::shared_ptr<FakeProcessState> state_;
  std::shared_ptr<Mutex> mu_;
};

class FakeProcessLauncher final : public ProcessLauncher {
 public:
  Result<std::unique_ptr<Process>> Launch(const LaunchSpec& spec) override {
    MutexLock lock(*mu_);
    if (!next_error_.ok()) {
      Status error = next_error_;
      next_error_ = Status::Ok();
      return error;
    }
    auto state = std::make_shared<FakeProcessState>();
    state->pid = next_pid_++;
    state->spec = spec;
    state->exits_on_sigterm = exits_on_sigterm_;
    processes_.push_back(state);
    return std::unique_ptr<Process>(std::make_unique<FakeProcess>(state, mu_));
  }

  // The next Launch fails with `error`.
  void FailNextLaunch(Status error) {
    MutexLock lock(*mu_);
    next_error_ = std::move(error);
  }
  void set_exits_on_sigterm(bool value) {
    MutexLock lock(*mu_);
    exits_on_sigterm_ = value;
  }
  std::size_t num_launched() const {
    MutexLock lock(*mu_);
    return processes_.size();
  }
  // A copy of the i-th launched process's state.
  FakeProcessState process(std::size_t i) const {
    MutexLock lock(*mu_);
    return *processes_.at(i);
  }
  // Makes the i-th launched process exit with `code` (negative = killed by signal -code).
  void Exit(std::size_t i, int code) {
    MutexLock lock(*mu_);
    if (!processes_.at(i)->exit) processes_.at(i)->exit = ExitStatus{code};
  }
  // The environment value `key` of the i-th launch ("" when absent).
  std::string Env(std::size_t i, const std::string& key) const {
    MutexLock lock(*mu_);
    for (const auto& [k, v] : processes_.at(i)->spec.env) {
      if (k == key) return v;
    }
    return "";
  }

 private:
  // Shared with the FakeProcesses (their states are guarded by it too).
  std::shared_ptr<Mutex> mu_ = std::make_shared<Mutex>();
  std::vector<std::shared_ptr<FakeProcessState>> processes_ GAVEL_GUARDED_BY(*mu_);
  Status next_error_ GAVEL_GUARDED_BY(*mu_);
  bool exits_on_sigterm_ GAVEL_GUARDED_BY(*mu_) = true;
  int next_pid_ GAVEL_GUARDED_BY(*mu_) = 100;
};

class FakeSchedulerClient final : public SchedulerClient {
 public:
  Result<wire::RegisterWorkerResponse> RegisterWorker(
      const wire::RegisterWorkerRequest& request) override {
    std::function<void()> hook;
    {
      MutexLock lock(mu_);
      hook = on_register_;
    }
    if (hook) hook();  // e.g. the scheduler sends a round before its reply arrives
    MutexLock lock(mu_);
    registrations_.push_back(request);
    if (!down_.ok()) return down_;
    wire::RegisterWorkerResponse response;
    for (std::uint32_t i = 0; i < request.num_gpus(); ++i)
      response.add_worker_ids(first_worker_id_ + i);
    if (first_partner_id_ != 0) {
      for (std::uint32_t i = 0; i < request.num_gpus(); ++i)
        response.add_partner_worker_ids(first_partner_id_ + i);
    }
    response.set_round_duration_s(round_duration_s_);
    response.set_heartbeat_interval_s(2.0);
    response.set_heartbeat_timeout_s(10.0);
    return response;
  }
  Result<wire::HeartbeatResponse> Heartbeat(const wire::HeartbeatRequest& request) override {
    MutexLock lock(mu_);
    heartbeats_.push_back(request);
    if (!down_.ok()) return down_;
    wire::HeartbeatResponse response;
    response.set_known(known_);
    return response;
  }
  Status ReportDone(const wire::ReportDoneRequest& request) override {
    MutexLock lock(mu_);
    report_attempts_.push_back(request);
    if (!down_.ok()) return down_;
    if (!refuse_reports_.ok()) return refuse_reports_;
    reports_.push_back(request);
    return Status::Ok();
  }

  // Every call fails with `status` (e.g. IoError: the scheduler is down) until Ok is set.
  void SetDown(Status status) {
    MutexLock lock(mu_);
    down_ = std::move(status);
  }
  void SetKnown(bool known) {
    MutexLock lock(mu_);
    known_ = known;
  }
  void RefuseReports(Status status) {
    MutexLock lock(mu_);
    refuse_reports_ = std::move(status);
  }
  // Runs inside every RegisterWorker call, before it answers (unlocked).
  void SetOnRegister(std::function<void()> hook) {
    MutexLock lock(mu_);
    on_register_ = std::move(hook);
  }
  void SetFirstWorkerId(std::uint64_t id) {
    MutexLock lock(mu_);
    first_worker_id_ = id;
  }
  // A packing scheduler: a partner slot per GPU, numbered from `id` (0 = none).
  void SetFirstPartnerId(std::uint64_t id) {
    MutexLock lock(mu_);
    first_partner_id_ = id;
  }
  std::vector<wire::RegisterWorkerRequest> registrations() const {
    MutexLock lock(mu_);
    return registrations_;
  }
  std::vector<wire::HeartbeatRequest> heartbeats() const {
    MutexLock lock(mu_);
    return heartbeats_;
  }
  // Acknowledged reports, in order.
  std::vector<wire::ReportDoneRequest> reports() const {
    MutexLock lock(mu_);
    return reports_;
  }
  std::size_t report_attempts() const {
    MutexLock lock(mu_);
    return report_attempts_.size();
  }

 private:
  mutable Mutex mu_;
  Status down_ GAVEL_GUARDED_BY(mu_);
  Status refuse_reports_ GAVEL_GUARDED_BY(mu_);
  bool known_ GAVEL_GUARDED_BY(mu_) = true;
  std::uint64_t first_worker_id_ GAVEL_GUARDED_BY(mu_) = 10;
  std::uint64_t first_partner_id_ GAVEL_GUARDED_BY(mu_) = 0;
  std::function<void()> on_register_ GAVEL_GUARDED_BY(mu_);
  double round_duration_s_ GAVEL_GUARDED_BY(mu_) = 60.0;
  std::vector<wire::RegisterWorkerRequest> registrations_ GAVEL_GUARDED_BY(mu_);
  std::vector<wire::HeartbeatRequest> heartbeats_ GAVEL_GUARDED_BY(mu_);
  std::vector<wire::ReportDoneRequest> report_attempts_ GAVEL_GUARDED_BY(mu_);
  std::vector<wire::ReportDoneRequest> reports_ GAVEL_GUARDED_BY(mu_);
};

}  // namespace gavel::agent::testing
