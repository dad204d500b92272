// AgentExecutor: the daemon's mechanism::Executor (mechanism/ports.h), the counterpart of the
// simulator's SimExecutor — simulator and runtime drive the RoundScheduler through the same
// seam: PlanRound → Executor::Execute(plan) → reports back to the mechanism.
//
// Execute carries a round plan out on the worker agents, in phases:
//   1. one StartRound request per live agent (an agent with no task stops whatever waits on
//      its GPUs);
//   2. each assignment whose job is runnable becomes tasks of the open round and a launch
//      with a lease on every one of its GPUs (the daemon's worker ids, translated by the
//      MechanismSeam), the job RUNNING; a pair's two jobs (space sharing) each get their own
//      tasks, launches and leases, the second on the GPUs' partner slots; an assignment
//      whose job (either job of a pair) cannot start now (backing off, gone) is skipped and
//      its GPUs idle (the mechanism hears at once that nothing ran);
//   3. every job not placed waits (QUEUED; a paused process of it is stopped by its agent);
//   4. the open round's row is staged in the Journal (durable with the next commit);
//   5. the requests go out, asynchronously; an undeliverable one calls `dispatch_failed`.
// The reports come back to the core as ReportDone RPCs and reach the mechanism through
// MechanismSeam::ReportMicroTask — the runtime's event path, as MicroTaskEnd events are the
// simulator's.
//
// The round itself (its id and times) is opened by the core before Execute; the executor
// fills the round it is pointed at (`round`, which must hold a round when Execute runs).
// Ownership: borrows every part; all must outlive it. Thread-safety: none (the core thread).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "gavel/core/status.h"
#include "gavel/core/units.h"
#include "gavel/daemon/agent_registry.h"
#include "gavel/daemon/agent_transport.h"
#include "gavel/daemon/core_options.h"
#include "gavel/daemon/job_book.h"
#include "gavel/daemon/journal.h"
#include "gavel/daemon/open_round.h"
#include "gavel/daemon/mechanism_seam.h"
#include "gavel/mechanism/ports.h"

namespace gavel::daemon {

struct AgentExecutorParts {
  JobBook* jobs = nullptr;
  const AgentRegistry* agents = nullptr;
  MechanismSeam* seam = nullptr;  // translates the plan's workers and GPU types
  AgentTransport* transport = nullptr;
  Journal* journal = nullptr;
  std::optional<OpenRound>* round = nullptr;  // the core's open round, filled by Execute
  // A StartRound to (agent id, round id) could not be delivered. May be empty.
  std::function<void(const std::string&, std::uint64_t)> dispatch_failed;
};

class AgentExecutor final : public mechanism::Executor {
 public:
  // `options`: the round length (each lease's duration) and the checkpoint root (jobs
  // checkpoint to <checkpoint_root>/job-<id> when set; empty = the agents choose).
  AgentExecutor(const CoreOptions* options, AgentExecutorParts parts);
  // Never fails on a real cluster's troubles (those come back as dispatch failures or task
  // reports); OK always, a bug aborts.
  Status Execute(const mechanism::RoundPlan& plan) override;

 private:
  // Phase 2 for one job of a runnable assignment (each member of a pair in turn, `partner`
  // the other; null for a single job): its tasks in the round and its launches.
  void Launch(const mechanism::Assignment& assignment, Job& job, const Job* partner,
              const std::vector<std::uint64_t>& workers,
              std::map<std::string, wire::StartRoundRequest>& requests);

  // The lease every rank of a job gets (worker.proto, Lease.step_bound_only): one process
  // stops at the job's total steps or its round's time; a multi-GPU job at one step bound for
  // all its ranks, from its throughput estimate, and restarts whole unless every rank keeps
  // its GPU.
  struct GangLease {
    std::uint64_t stop_at_step = 0;
    bool step_bound_only = false;
    bool restart = false;
  };
  // `estimate`: the job's steps/s on these GPUs (alone, or next to its partner).
  GangLease GangLeaseOf(const Job& job, double estimate,
                        const std::vector<std::uint64_t>& workers) const;

  const CoreOptions* options_;
  AgentExecutorParts parts_;
};

}  // namespace gavel::daemon
