// The real implementation of the agent's process port (ports.h) on Linux (its clock is
// gavel::SteadyClock, core/clock.h).
//
// PosixProcessLauncher starts each job with fork + execve:
//   * in a new process group (setpgid), so that ending a job ends everything it started;
//   * with PR_SET_PDEATHSIG = SIGKILL, so that a job dies with the agent thread that started
//     it (the agent's monitor thread, alive as long as the agent): a job must never outlive
//     its agent, or it could keep checkpointing while the scheduler restarts it elsewhere;
//   * with an empty signal mask and default signal dispositions, stdin on /dev/null and
//     stdout/stderr appended to the given files.
// argv, environment and paths are prepared before fork; the child only makes async-signal-safe
// calls. An exec failure is reported back through a close-on-exec pipe, so Launch returns an
// error instead of a process that exits 127.
//
// Thread-safety: the launcher is stateless and callable from any thread; a Process is used by
// one thread at a time (the agent's lock serialises it). A Process that is destroyed while
// its group still runs kills the group (SIGKILL) and reaps the leader.
#pragma once

#include <memory>

#include "gavel/agent/ports.h"

namespace gavel::agent {

class PosixProcessLauncher final : public ProcessLauncher {
 public:
  Result<std::unique_ptr<Process>> Launch(const LaunchSpec& spec) override;
};

// Resolves a program name through a PATH-style list ("/usr/bin:/bin"); a name containing '/'
// is returned unchanged. Error: not found, or found but not executable.
Result<std::string> ResolveProgram(const std::string& name, const std::string& path_list);

}  // namespace gavel::agent
