// JobBook: the daemon's durable jobs and their states — what was submitted (validated specs),
// by whom, how far each job got (the checkpointed step count, the one record of progress the
// daemon keeps), its per-GPU-type throughput priors and measurements, failures and retry
// time. Job ids are the daemon's, durable, 1, 2, ... in submission order; the RoundScheduler
// books jobs under the same ids.
//
// Each job also has the throughput-table key the RoundScheduler books it under: its own type,
// or for a type the table lacks a stand-in of the same scale factor (the key that runs
// fastest on its slowest GPU type, so it can be placed anywhere).
// Learning: the JobBook is the one owner of every throughput estimate — the priors, the
// measured steps/s (alone, and next to each partner type under space sharing) and the
// re-solve threshold — and the only part that learns them, from the micro-tasks it credits.
// The mechanism holds copies and is fed one way, JobBook → mechanism, through the
// MechanismSeam: it never writes an estimate back (mechanism_seam.h, TakeEstimates).
// Every change is marked dirty in the Journal (Touch). Iterates in id order.
// Thread-safety: none (the core thread).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gavel/core/status.h"
#include "gavel/core/throughput_table.h"
#include "gavel/core/utility.h"
#include "gavel/daemon/journal.h"
#include "gavel/daemon/open_round.h"
#include "gavel/estimator/reference_rows.h"
#include "gavel/daemon/store.h"
#include "gavel/rpc/auth.h"
#include "gavel/wire/scheduler.pb.h"

namespace gavel::daemon {

// How measured steps/s become a job's estimates.
struct ThroughputLearning {
  // Each sample enters an EMA with this weight (the first is taken as it is).
  double ema_alpha = 0.5;
  // A new background solve is worth it once an estimate moved by more than this fraction
  // from the value the latest allocation used.
  double resolve_threshold = 0.1;
};

struct Job {
  JobRow row;
  bool table_type = false;  // spec.job_type names a table entry with this scale factor
  JobTypeKey mech_type;     // the key the RoundScheduler books the job under
  // Where the job ran last round and whether it is paused there (its lease ran out and it
  // waits for the next round): placed on exactly those GPUs again, it continues.
  std::vector<std::uint64_t> last_workers;
  bool paused = false;
  // Its processes were still starting when the last round ended (spared at the deadline):
  // a multi-GPU job's kept processes get no new steps for that round (they have not begun
  // the lease they hold).
  bool still_starting = false;
  // A task of it in the round before the open one had not reported when that round closed
  // (rounds close on time): its process may still run on last_workers, so it runs nowhere
  // else until that report is in (or that round's deadline passed).
  bool report_outstanding = false;
  bool last_launch_failed = false;
  // Round deadlines in a row this job missed as a straggler (CoreOptions::
  // deadline_misses_to_fail); in memory only: a restarted daemon starts counting afresh.
  int deadline_misses = 0;
  // Throughputs the latest allocation was computed with (for the re-solve threshold).
  mutable std::map<std::string, double> used_estimate;
  // Space sharing: the measured co-located rates are durable, in row.colocated.
  // The job it shares its GPU(s) with this round, or last shared with (0 = never shared).
  std::uint64_t partner_job = 0;
  std::string partner_type;      // that job's type (spec.job_type)
  std::string partner_gpu_type;  // the GPU type they shared
};

// One page of a listing (scheduler.proto, ListJobsRequest): jobs with ids above `after_id`
// (ids start at 1), at most `limit` of them and, beyond the first, at most kListPageBytes.
struct ListPage {
  std::uint64_t after_id = 0;
  std::uint32_t limit = 0;
};
inline constexpr std::uint32_t kDefaultListLimit = 100;
inline constexpr std::uint32_t kMaxListLimit = 1000;
// A page stops growing past 1 MiB: with every job's spec bounded (command and env 64 KiB
// each) a page stays far below gRPC's 4 MiB default message limit.
inline constexpr std::size_t kListPageBytes = 1 << 20;
// Errors name the field: a limit above kMaxListLimit, a page token that is not one we issued.
Result<ListPage> ParseListPage(const wire::ListJobsRequest& request);

// Queued or running: not yet done, failed or cancelled.
inline bool IsActiveState(wire::JobState state) {
  return state == wire::QUEUED || state == wire::RUNNING;
}

// The utility function of a validated spec (OASiS), if it has one.
std::optional<UtilityFunction> UtilityOf(const wire::JobSpec& spec);

// What crediting a micro-task did: the steps credited (the increment of the checkpointed
// count) and what its measurement taught.
struct Credited {
  std::uint64_t steps = 0;
  bool learned_colocated = false;  // a co-located rate changed (the job's pairs re-read)
  bool worth_resolve = false;      // an estimate moved past the re-solve threshold
};

class JobBook {
 public:
  using Map = std::map<std::uint64_t, Job>;

  JobBook(Journal* journal, std::shared_ptr<const ThroughputTable> throughputs,
          ThroughputLearning learning = {});

  // Errors name the spec's field.
  Status Validate(const wire::JobSpec& spec) const;
  // Takes the stored jobs back (running ones are queued until their round says otherwise).
  // Error: an active job's scale factor has no job type in the table.
  Status Restore(std::vector<JobRow> rows, std::uint64_t next_job_id);
  // Books a validated spec as a queued job (weight 0 = 1, entity empty = the user's name).
  Job& Add(const rpc::Principal& user, const wire::JobSpec& spec, std::int64_t now,
           const std::vector<std::string>& live_types);
  // A GPU type joined: active jobs get their prior for it.
  void AddPriors(const std::string& gpu_type);

  static bool IsActive(const Job& job) { return IsActiveState(job.row.state); }
  // An active job out of its retry backoff exists.
  bool AnyRunnable(std::int64_t now) const;
  // The user's estimate, else the table's for a table type, else 1 step/s (the original's
  // default) when the user gave none at all, else 0 (a type the user's list leaves out).
  double Prior(const Job& job, const std::string& gpu_type) const;
  // The measurement once there is one, else the prior.
  double Estimate(const Job& job, const std::string& gpu_type) const;
  // Space sharing: the job's steps/s while it shares a GPU of `gpu_type` with `partner` — its
  // measurement next to a job of the partner's type once there is one, else its Estimate
  // scaled by a normalised co-located throughput (co-located over isolated steps/s), so that a
  // user's own isolated estimate carries over: the table's for the pair of their table keys,
  // where a job whose type the table lacks stands in as the table type it was matched to
  // (RowOf) once it has measurements next to table types, and as its stand-in key before. 0
  // when that entry is 0 or missing (the pair is not used on that type).
  double ColocatedEstimate(const Job& job, const Job& partner, const std::string& gpu_type) const;
  // Space sharing, for a job whose type the table lacks: its row of normalised co-located
  // throughputs completed from its measurements next to table types of its scale factor
  // (estimator/reference_rows.h), and the table type it matches. nullptr for a table type, a
  // job with no such measurement, or a failed completion. Recomputed when the measurements
  // (or its isolated estimates) change; valid until the next call for the job.
  const estimator::CompletedRow* RowOf(const Job& job) const;
  void Touch(const Job& job) { journal_->dirty_jobs.insert(job.row.id); }

  // ---- Learning and crediting ----
  // The job's micro-task `m` of the open round ended at `now`: credits the checkpoint every
  // rank holds (absolute counts: never twice, never lost; a count past the total is logged
  // and clamped). For an active job also its time on the GPU type, its start-up, where it ran
  // and whether it waits paused there (its lease ran out), and learns from the measurement:
  // next to its partner when it shared its GPUs (LearnColocated), else alone (LearnIsolated).
  // A late micro-task (`late`: of the round before the open one) is credited in steps, time
  // and measurements only: where the job runs and waits now is the open round's.
  Credited CreditMicroTask(Job& job, const MicroTaskSummary& m, std::int64_t now,
                           bool late = false);
  // One sample (steps over training seconds) into the job's EMA for `gpu_type`. Returns
  // whether the estimate moved past the re-solve threshold; an empty sample teaches nothing.
  bool LearnIsolated(Job& job, const std::string& gpu_type, std::uint64_t steps,
                     double training_s);

  Map::iterator begin() { return jobs_.begin(); }
  Map::iterator end() { return jobs_.end(); }
  Map::const_iterator begin() const { return jobs_.begin(); }
  Map::const_iterator end() const { return jobs_.end(); }
  Map::iterator find(std::uint64_t id) { return jobs_.find(id); }
  Map::const_iterator find(std::uint64_t id) const { return jobs_.find(id); }
  Map::const_iterator upper_bound(std::uint64_t id) const { return jobs_.upper_bound(id); }
  bool contains(std::uint64_t id) const { return jobs_.contains(id); }
  Job& at(std::uint64_t id) { return jobs_.at(id); }
  const Job& at(std::uint64_t id) const { return jobs_.at(id); }

 private:
  // Space sharing: a sample taken next to `partner` into the job's co-located EMA for
  // (`gpu_type`, the partner's job type). Sets *worth_resolve as LearnIsolated returns; false
  // (nothing learned) for an empty sample.
  bool LearnColocated(Job& job, const Job& partner, const std::string& gpu_type,
                      std::uint64_t steps, double training_s, bool* worth_resolve);
  // Sets table_type and mech_type. False when the table has no job type of that scale factor.
  bool ResolveMechType(Job& job) const;

  // The table's rows of a scale factor (null when it has no job type of that size).
  const estimator::ReferenceRows* ReferenceRowsFor(int scale_factor) const;

  Journal* journal_;
  std::shared_ptr<const ThroughputTable> throughputs_;
  ThroughputLearning learning_;
  // Space sharing: derived from the table and the jobs' measurements, computed on demand.
  mutable std::map<int, std::unique_ptr<const estimator::ReferenceRows>> reference_rows_;
  struct RowCache {
    std::vector<estimator::RowObservation> observed;
    std::optional<estimator::CompletedRow> row;  // nullopt: the completion failed
  };
  mutable std::map<std::uint64_t, RowCache> rows_;  // by job id
  std::map<int, int> representative_key_;  // scale factor -> table key for unknown job types
  Map jobs_;
  std::uint64_t next_job_id_ = 1;
};

}  // namespace gavel::daemon
