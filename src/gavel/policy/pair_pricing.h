// Space-sharing pairs priced per pair of job classes, never listed: the packed LPs whose jobs
// are not interchangeable (finish-time fairness, makespan, cost with SLOs: the jobs differ in
// remaining steps and deadlines) but whose co-located throughputs depend only on the jobs'
// models. With 2,048 jobs of 26 models there are 2 million job pairs (6 million pair columns
// on 3 types) and only 351 pairs of models; the LP is solved over the jobs' own columns and
// the pair columns column generation finds (lp::ColumnOracle), without building a model, or a
// list, of every pair.
//
// Why it is exact (docs/policies.md, "Fast paths"): a pair column (a, b) on type j has
// entries s in capacity row j, 1 in both members' time rows, w_a T_a in a's throughput row
// and w_b T_b in b's (T_a, T_b the members' co-located steps/s, the same for every pair of
// the same two classes), and objective α_j (T_a + T_b) + β_a T_a + β_b T_b. Its reduced cost
// is −s·y_cap_j + g_a + g_b with g_x = (α_j + β_x − w_x y_row_x) T_x − y_time_x: a term of a
// plus a term of b. The best pair of classes (A, B) on type j is A's member with the largest
// g plus B's (the two largest of A when A = B), so one pass over the members of each class
// pair prices all |A|·|B| pairs at once; when that best pair does not improve, none does.
//
// Thread-compatible: one oracle per session, used by that session's thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <unordered_set>
#include <utility>
#include <vector>

#include "gavel/core/matrix.h"
#include "gavel/lp/column_generation.h"
#include "gavel/lp/model.h"
#include "gavel/lp/solver.h"
#include "gavel/policy/common.h"
#include "gavel/policy/packed_classes.h"
#include "gavel/policy/policy.h"
#include "gavel/policy/policy_input.h"

namespace gavel::policy {

// Classes of jobs whose co-located throughputs with every partner depend only on the classes
// (FindInterchangeableJobs keyed by scale factor and single-job throughputs, weights ignored),
// or nullopt when there are none worth pricing by (more than half as many classes as jobs, a
// pair missing or unlike its class pair) or no pairs at all.
std::optional<JobClasses> FindPairClasses(const PolicyInput& input, const Matrix& throughput);

// Every job's best steps/s on each type (jobs × types), alone or in any of its pairs, its
// pairs read from the classes: the largest coefficient of its throughput in a column.
Matrix BestSpeedsByClasses(const PolicyInput& input, const Matrix& throughput,
                           const JobClasses& classes);

// MaxThroughputAlone (common.h) of every job, its pairs read from the classes (a job's best
// co-located steps/s on a type is its class's best over the class pairs it belongs to).
std::vector<double> MaxThroughputsAloneByClasses(const PolicyInput& input,
                                                 const Matrix& throughput,
                                                 const JobClasses& classes);

// The LP the oracle's pair columns join: the base problem over the jobs alone
// (BuildBaseProblem without pair columns, otherwise as the packed variant builds it).
Result<BaseProblem> BuildJobsOnlyProblem(const PolicyInput& input, const Matrix& throughput,
                                         const PolicyOptions& options);

class PairOracle final : public lp::ColumnOracle {
 public:
  // `capacity_rows` (one per type) and `time_rows` (one per job) are the base problem's rows
  // (BuildBaseProblem without pairs). `sense` is the LP's.
  PairOracle(const PolicyInput& input, const JobClasses& classes, std::vector<int> capacity_rows,
             std::vector<int> time_rows, lp::Sense sense);

  // Job k's steps/s enter row `row` with coefficient `scale` per step/s (-1: no such row).
  void SetThroughputRow(std::size_t job, int row, double scale);
  // The objective: `per_step` per step/s of job k (β_k), `per_step` per step/s of both members
  // on type j (α_j). Both 0 unless set.
  void SetJobObjective(std::size_t job, double per_step);
  void SetTypeObjective(std::size_t type, double per_step);
  // Gives the pair columns added so far their objective after the setters above changed it.
  void UpdateObjectives(lp::Session& session) const;

  void Price(std::span<const double> row_duals, bool phase1, std::size_t max_columns,
             lp::ColumnBatch& batch) override;
  void Added(int first_column) override;
  // When enabled (EnableSeed): each job once with a partner of the class pair and type where
  // the two together progress most (T_a / best_a + T_b / best_b, best_x the job's best
  // steps/s), members dealt in turn. It pays in finish-time fairness (4.5 s instead of 7.2 s
  // of CPU at 2,048 jobs), not in makespan or cost/SLO (no gain measured), so it is opt-in.
  void Seed(lp::ColumnBatch& batch) override;
  void EnableSeed() { seed_ = true; }
  // A pair of jobs on a type, with its time in a start point.
  struct StartPair {
    std::size_t a = 0;
    std::size_t b = 0;
    std::size_t type = 0;
    double time = 0.0;
  };
  // Seeds these pairs instead (EnableSeed's dealing is skipped): the pair columns of a start
  // point. SeedTimes then gives their session columns and times, once seeded.
  void SetStartPairs(std::vector<StartPair> pairs);
  std::vector<std::pair<int, double>> SeedTimes() const;

  // Each job's steps/s from its pairs in a solution over the session's columns.
  std::vector<double> PairThroughputs(std::span<const double> values) const;
  // The pair allocation (input.pairs × types) of such a solution, clipped to [0, 1].
  Matrix PairAllocation(std::span<const double> values) const;
  std::size_t num_added() const { return added_.size(); }

 private:
  struct PairColumn {
    int a = 0;  // member of class_pair.a
    int b = 0;  // member of class_pair.b
    int type = 0;
    int q = 0;  // class pair
    int column = -1;
  };
  double Objective(const PairColumn& c) const;
  double MemberThroughput(const PairColumn& c, bool first) const;
  void AddColumnTo(const PairColumn& c, lp::ColumnBatch& batch) const;
  std::uint64_t Key(int a, int b, int type) const;

  const PolicyInput& input_;
  const JobClasses& classes_;
  std::vector<int> capacity_rows_;
  std::vector<int> time_rows_;
  double direction_;  // +1 maximise, -1 minimise
  std::vector<int> throughput_row_;
  std::vector<double> row_scale_;
  std::vector<double> job_objective_;
  std::vector<double> type_objective_;
  std::vector<PairColumn> added_;
  std::vector<PairColumn> pending_;  // the last batch, until Added names its columns
  std::unordered_set<std::uint64_t> added_keys_;
  bool seed_ = false;
  std::vector<StartPair> start_pairs_;
};

}  // namespace gavel::policy
