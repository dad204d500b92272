// AllocationService: runs the policy for the daemon, off the round's critical path.
//
// The daemon's RoundScheduler asks for an allocation at a round boundary (inside PlanRound).
// Solving there would stall the round for as long as the LP takes, so the service answers
// from the latest finished solve instead and keeps the solver busy in the background:
//   * Prefetch(inputs, use) hands the problems the next round will most likely pose (the
//     daemon calls it at mid-round — the current jobs, and the current jobs minus those about
//     to finish — and whenever jobs arrive, finish or change throughput) to a background
//     thread;
//   * Allocate(input) returns a recent solve for the same jobs and cluster when there is one
//     (the usual case: the allocation is as fresh as a synchronous one, computed earlier);
//     otherwise the latest allocation restricted to the jobs still there (new jobs get 0 for
//     one round and run on leftover GPUs, as in the original's physical mode, whose allocation
//     thread also lags), and it starts a solve of the new problem;
//   * TakeFreshResult() tells the daemon that a solve it asked to be taken finished (a
//     Prefetch with kTakeWhenSolved, or the new problem of a stale answer), so it asks the
//     RoundScheduler to take the new allocation at the next round. The mid-round solves are
//     kCacheOnly: they are there to be found when the job set changes, and do not by
//     themselves replace the allocation in use. Re-solving the same jobs every round would
//     follow every small move of the measured throughputs, and a max-min optimum is seldom
//     unique: a few per cent moved the solver to another vertex, which reshuffled who runs
//     where for no gain (and away from what `gavel simulate` plans with the table's rates).
// Only the very first allocation (nothing solved yet) is computed synchronously.
//
// Rows are keyed by the daemon's durable job ids (the caller translates), so the policy's own
// state (FIFO's sticky assignments, FTF's history) survives the daemon rebuilding its
// RoundScheduler. With `background = false` every Allocate solves synchronously (tests).
//
// Thread-safety: all public methods may be called from any thread; the policy runs on one
// thread at a time. The notify callback runs on the background thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "gavel/core/mutex.h"
#include "gavel/core/status.h"
#include "gavel/policy/policy.h"

namespace gavel::daemon {

struct AllocationStats {
  std::uint64_t solves = 0;            // Policy::Allocate calls
  std::uint64_t synchronous_solves = 0;
  std::uint64_t served_fresh = 0;      // Allocate answered with a solve of the same jobs
  std::uint64_t served_stale = 0;      // Allocate answered with an older job set's solve
  double last_solve_seconds = 0.0;
  double max_solve_seconds = 0.0;
};

class AllocationService {
 public:
  AllocationService(std::unique_ptr<policy::Policy> policy, bool background,
                    std::function<void()> notify);
  ~AllocationService();
  AllocationService(const AllocationService&) = delete;
  AllocationService& operator=(const AllocationService&) = delete;

  // What a prefetched solve is for: to be taken at the next round (the job set or a
  // throughput changed enough to re-solve), or only to answer Allocate when the RoundScheduler
  // asks for that job set (the jobs likely at the next round).
  enum class PrefetchUse { kTakeWhenSolved, kCacheOnly };

  Result<policy::PolicyOutput> Allocate(const policy::PolicyInput& input);
  // Replaces the problems not yet started; solved in order. Replacing a problem that was to
  // be taken makes the new ones to be taken, so that no change is lost.
  void Prefetch(std::vector<policy::PolicyInput> inputs,
                PrefetchUse use = PrefetchUse::kTakeWhenSolved);
  bool TakeFreshResult();
  // Waits until no background solve is pending or running (tests, shutdown).
  void WaitIdle();
  AllocationStats stats() const;
  // Called with each solve's wall time (on the solving thread, under the service's lock: it
  // must not call back into the service). For the daemon's metrics (observations.h).
  void SetSolveObserver(std::function<void(double)> observer);

 private:
  struct Solved {
    std::vector<JobId> jobs;
    std::vector<std::string> gpu_types;
    std::vector<double> gpu_counts;
    policy::PolicyOutput output;
  };
  static bool SameProblem(const Solved& solved, const policy::PolicyInput& input);
  static policy::PolicyOutput Restrict(const Solved& solved, const policy::PolicyInput& input);
  // Runs the policy (solve_mutex_ held by the caller) and records the result as the latest.
  Result<policy::PolicyOutput> SolveLocked(const policy::PolicyInput& input)
      GAVEL_REQUIRES(solve_mutex_) GAVEL_EXCLUDES(mutex_);
  void BackgroundLoop();

  std::unique_ptr<policy::Policy> policy_ GAVEL_PT_GUARDED_BY(solve_mutex_);
  const bool background_;
  std::function<void()> notify_;

  Mutex solve_mutex_;  // serialises policy calls (and so the policy's own state)

  mutable Mutex mutex_;  // everything below
  std::condition_variable cv_;
  struct Pending {
    policy::PolicyInput input;
    bool take = false;  // sets fresh_ once solved
  };
  // Replaces pending_ (under mutex_), keeping a replaced problem's `take`.
  void ReplacePendingLocked(std::vector<policy::PolicyInput> inputs, bool take)
      GAVEL_REQUIRES(mutex_);

  std::deque<Pending> pending_ GAVEL_GUARDED_BY(mutex_);
  bool busy_ GAVEL_GUARDED_BY(mutex_) = false;
  std::function<void(double)> solve_observer_ GAVEL_GUARDED_BY(mutex_);
  bool fresh_ GAVEL_GUARDED_BY(mutex_) = false;
  bool stop_ GAVEL_GUARDED_BY(mutex_) = false;
  // Recent solves, newest first (a few: one per likely job set).
  std::deque<std::shared_ptr<const Solved>> solved_ GAVEL_GUARDED_BY(mutex_);
  AllocationStats stats_ GAVEL_GUARDED_BY(mutex_);
  std::thread thread_;
};

}  // namespace gavel::daemon
