// The worker agent's ports to the outside world (design.md habit 4). The agent core
// (agent.h) is a state machine that touches nothing directly: it reads time from a Clock
// (gavel::Clock, core/clock.h; monotonic), talks to the scheduler through a SchedulerClient
// and starts job processes through a ProcessLauncher. Production plugs in SteadyClock,
// GrpcSchedulerClient (scheduler_client.h) and PosixProcessLauncher (process.h); the unit
// tests plug in ManualClock and the fakes of fakes.h.
//
// Ownership: the agent borrows every port; they must outlive it.
// Thread-safety: every implementation must be callable from any thread (the agent calls
// the clock from RPC threads and the launcher and client from its monitor thread).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gavel/core/clock.h"
#include "gavel/core/status.h"
#include "gavel/core/units.h"
#include "gavel/wire/worker.pb.h"

namespace gavel::agent {

// How the scheduler answered (or failed to). The agent reacts by code:
//   kIoError             transport failure or the scheduler is down: retry later with backoff;
//   kNotFound            the scheduler does not know this agent: register again, then retry;
//   kFailedPrecondition  refused for now: retry with backoff;
//   kPermissionDenied    the token was refused: retry with backoff (and tell on_refused);
//   anything else        the scheduler refused this message for good: drop it (logged).
class SchedulerClient {
 public:
  virtual ~SchedulerClient() = default;
  virtual Result<wire::RegisterWorkerResponse> RegisterWorker(
      const wire::RegisterWorkerRequest& request) = 0;
  virtual Result<wire::HeartbeatResponse> Heartbeat(const wire::HeartbeatRequest& request) = 0;
  virtual Status ReportDone(const wire::ReportDoneRequest& request) = 0;
};

// What to start: a complete description, so that the launcher decides nothing.
struct LaunchSpec {
  // argv[0] is an absolute path (the agent resolved it through its PATH) or contains a '/'
  // (relative to working_directory).
  std::vector<std::string> argv;
  std::string working_directory;  // absolute; must exist
  // The process's whole environment (the agent's own plus the job's and the GAVEL_* ones).
  std::vector<std::pair<std::string, std::string>> env;
  // Appended to (created if missing); stdin is /dev/null.
  std::string stdout_path;
  std::string stderr_path;
};

// How a process ended: an exit status (>= 0) or the number of the signal that killed it,
// negated (the convention of ReportDoneRequest.exit_code).
struct ExitStatus {
  int code = 0;
  bool signaled() const { return code < 0; }
  std::string ToString() const;
};

// One started job process, the leader of its own process group.
class Process {
 public:
  virtual ~Process() = default;
  virtual int pid() const = 0;
  // Sends `signal` to every process of the group (a no-op once the group is gone).
  virtual void SignalGroup(int signal) = 0;
  // Non-blocking: the exit status once the process has exited (and the rest of its group has
  // been killed). Repeated calls after the exit return the same status.
  virtual std::optional<ExitStatus> PollExit() = 0;
};

class ProcessLauncher {
 public:
  virtual ~ProcessLauncher() = default;
  // Starts the process in a new process group. An error means it could not be started at all
  // (the program does not exist or is not executable, the working directory is missing, ...)
  // and names what is wrong.
  virtual Result<std::unique_ptr<Process>> Launch(const LaunchSpec& spec) = 0;
};

}  // namespace gavel::agent
