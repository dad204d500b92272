// CoreOptions: the daemon's settings, made once from `gavel serve`'s flags (cli/serve_command.cc)
// with the policy already looked up in the registry (ChosenPolicy), and read from there by
// every part: the SchedulerCore owns its copy; the MechanismSeam (which builds the
// RoundScheduler's SchedulerOptions from it, in one place), the AgentExecutor and the
// AgentRegistry's rules borrow it. No part copies a setting into an options struct of its own.
//
// Thread-safety: plain values; read-only once the core is made.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "gavel/core/status.h"
#include "gavel/core/throughput_table.h"
#include "gavel/core/units.h"
#include "gavel/daemon/job_book.h"
#include "gavel/policy/policy.h"
#include "gavel/policy/registry.h"

namespace gavel::daemon {

// The policy `--policy` names, looked up once: the name as typed (its options included, e.g.
// `tiresias_2das:queues=3`, which the registry hands the policy when it is made) and its
// registry row, whose capabilities every part acts on.
struct ChosenPolicy {
  // The one lookup. Errors: an unknown policy, bad option syntax or keys (registry.h).
  static Result<ChosenPolicy> Resolve(std::string name);
  // A name the registry is known to hold (defaults, tests); aborts on any other.
  static ChosenPolicy Known(std::string name);

  const policy::PolicyCapabilities& capabilities() const { return info->capabilities; }
  // The policy itself, seeded (the registry checks the options' values here).
  Result<std::unique_ptr<policy::Policy>> Make(std::uint64_t seed) const;

  std::string name;
  const policy::PolicyInfo* info = nullptr;  // never null once resolved
};

struct CoreOptions {
  // The library's default, which its tests build on; `gavel serve` passes its own
  // (ServeOptions::policy, the recommended las_perf).
  ChosenPolicy policy = ChosenPolicy::Known("max_min_fairness_perf");
  std::shared_ptr<const ThroughputTable> throughputs;  // required
  Seconds round_length{360.0};
  // How long after a round's planned end the daemon waits for reports before it kills the
  // stragglers; default (0) = min(60 s, round/2), the original's 60-s buffer for long rounds.
  Seconds report_grace{0.0};
  // Rounds begin on time: a round closes at its end + boundary_wait() whatever reports are
  // still out, and takes them late (docs/runtime.md, "How a round runs"). Off: a round waits
  // for its last report, or its end + grace, which is what `gavel simulate` models
  // (`gavel replay --compare`): a late start-up lengthens the round instead of eating into
  // the next one.
  bool rounds_on_time = false;
  // A round that starts on an idle cluster waits up to this long after the submission that
  // wakes it (arrival_settle()). 0 = it starts at once, the library's default, which its
  // tests build on; `gavel serve` passes 1 s.
  Seconds max_arrival_settle{0.0};
  Seconds heartbeat_interval{2.0};
  Seconds heartbeat_timeout{10.0};
  std::uint64_t seed = 0;
  Seconds min_reset_interval{1920.0};
  // The bounded lag's K (mechanism::RealisationOptions::lag_bound_restarts): a running job
  // keeps its GPUs until a waiting one is owed more than K of its restart costs, each job's
  // being its measured start-up (MechanismSeam). 0 = off, the library's default; `gavel
  // serve` passes the simulator's default for the policies the mechanism time-slices.
  double lag_bound_restarts = 0.0;
  // How the JobBook turns measured steps/s into estimates (job_book.h).
  ThroughputLearning learning;
  // Crashes: a job is retried after retry_backoff · 2^(k−1) (k = crashes in a row, capped at
  // max_retry_backoff) and marked failed after more than max_retries crashes in all, after two
  // crashes in a row with the same exit code and no progress in between, or after two failed
  // launches in a row.
  int max_retries = 3;
  // A straggler (no report by its round's deadline while its agent heartbeats) is killed; it
  // counts as a crash only at its deadline_misses_to_fail-th deadline missed in a row: a job
  // that is merely late on a loaded machine does not use up its retries, one that hangs still
  // fails. Any report of its current launch resets the count.
  int deadline_misses_to_fail = 3;
  Seconds retry_backoff{10.0};
  Seconds max_retry_backoff{600.0};
  // Jobs' checkpoint directories are <checkpoint_root>/job-<id> when set (shared storage);
  // empty = the agents choose.
  std::string checkpoint_root;
  // The first round waits until this many GPUs are registered and alive (the original's
  // expected_num_workers), so that the first allocation sees the whole cluster.
  int expected_gpus = 0;
  // $/GPU-hour per GPU type name. The cost policies (max_sum_throughput_normalized_by_cost_*)
  // need one for every GPU type that registers (an agent of an unpriced type is refused);
  // other policies ignore them. Names must be GPU types of the throughput table.
  std::map<std::string, double> instance_costs;
  // Weight per entity for the hierarchical policies (jobs name theirs with spec.entity, by
  // default their user); an entity not listed weighs 1. Weights must be positive and finite.
  std::map<std::string, double> entity_weights;
  // Solve the policy in the background (AllocationService); false = synchronously (tests).
  bool background_solves = true;

  // How long a round that closed with reports still out takes them, from its end, before
  // its stragglers are killed (report_grace or its default).
  Seconds grace() const;
  // How long the next round waits after a round's end for reports still out: 0.5 % of the
  // round (at most the grace), so that rounds begin within 1 % of their time; reports that
  // come later are credited all the same (late).
  Seconds boundary_wait() const;
  // How long a round that starts on an idle cluster waits after the submission that wakes it:
  // 5 % of the round, at most max_arrival_settle (SchedulerCore::idle_arrival_ms_).
  Seconds arrival_settle() const;
};

// Errors name the option at fault: a missing table or policy, times out of range, entity
// weights that are not positive, prices for unknown types or a cost policy without them. Every
// policy `gavel policies` lists runs, the packing ones included (space sharing: two processes
// per GPU, docs/runtime.md).
Status ValidateCoreOptions(const CoreOptions& options);

}  // namespace gavel::daemon
