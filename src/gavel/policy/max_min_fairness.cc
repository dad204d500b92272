#include "gavel/policy/max_min_fairness.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "gavel/core/parse_number.h"
#include "gavel/policy/common.h"
#include "gavel/policy/fast_path.h"
#include "gavel/policy/packed_classes.h"

namespace gavel::policy {
namespace {

// What turns job i's throughput on a type into its normalised level there, the quantity
// max-min fairness raises: its GPUs over its weight and its equal-share throughput prop_i.
double LevelScale(const PolicyJob& job, double prop) {
  return job.scale_factor / (job.priority_weight * prop);
}

double TotalGpus(const PolicyInput& input) {
  double gpus = 0.0;
  for (double c : input.gpu_counts) gpus += c;
  return gpus;
}

class MaxMinFairness final : public Policy {
 public:
  MaxMinFairness(Variant variant, const PolicyOptions& options, double stay = 0.0,
                 bool efficient = false, double share_floor = 0.0, double head = 0.0)
      : variant_(variant),
        options_(options),
        solvers_(options),
        stay_(stay),
        efficient_(efficient),
        share_floor_(share_floor),
        head_(head) {}

  // With `stay` = ε > 0 and a current allocation in the input: the max-min optimum t*, then
  // among the allocations that give every job at least (1 − ε)·t*, the one closest to the
  // current allocation in L1 distance. With `efficient`: first the most total normalised
  // throughput among those allocations (Refine).
  Result<PolicyOutput> Allocate(const PolicyInput& input) override {
    if (share_floor_ <= 0.0) return AllocateShared(input, {});
    const Sharing sharing = SharingJobs(input);
    if (sharing.jobs.size() < input.num_jobs()) return AllocateAmong(input, sharing);
    return AllocateShared(input, sharing.fraction);
  }

 private:
  // The jobs that share the cluster (rows of the input, ascending) and the fraction of its
  // time each is guaranteed (FloorLevels).
  struct Sharing {
    std::vector<std::size_t> jobs;
    std::vector<double> fraction;
  };

  // With share_floor = f > 0, taking the jobs oldest first (by time since arrival, then id):
  // while their GPUs add up to at most the cluster's GPUs C / f, everyone shares with a floor
  // of f of its time. Past that (overload) the queue has a head: the oldest jobs whose GPUs
  // add up to at most head·C are guaranteed their whole time, and the next share what is
  // left, f each, as long as the guarantees add up to at most C; the younger ones wait with
  // nothing allocated (the mechanism still runs them on GPUs the allocation leaves idle)
  // until older ones finish. Under light load this is max-min fairness; under overload the
  // jobs are served in arrival order, as a queue does, instead of every arrival diluting every
  // older job's share: a job that has waited longest runs as it would under FIFO, which is
  // what lets a long job finish while younger ones keep arriving (the shares alone only
  // guarantee a fraction of an average GPU's progress).
  Sharing SharingJobs(const PolicyInput& input) const {
    const double gpus = TotalGpus(input);
    double demand = 0.0;
    for (const PolicyJob& job : input.jobs) demand += job.scale_factor;
    Sharing sharing;
    if (demand <= gpus / share_floor_ || input.num_jobs() <= 1) {
      for (std::size_t i = 0; i < input.num_jobs(); ++i) sharing.jobs.push_back(i);
      // A lone job larger than C / f gets the fraction that fits.
      sharing.fraction.assign(input.num_jobs(), std::min(share_floor_, gpus / demand));
      return sharing;
    }
    std::vector<std::size_t> order(input.num_jobs());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return input.jobs[a].time_since_start.value() > input.jobs[b].time_since_start.value();
    });
    std::vector<double> fraction(input.num_jobs(), 0.0);
    double head = 0.0;        // GPUs of the head
    double guaranteed = 0.0;  // Σ s_i · fraction_i
    bool in_head = head_ > 0.0;
    for (std::size_t i : order) {
      const double s = input.jobs[i].scale_factor;
      if (in_head && head + s <= head_ * gpus) {
        head += s;
        guaranteed += s;
        fraction[i] = 1.0;
        continue;
      }
      in_head = false;
      const double share = std::min(share_floor_, (gpus - guaranteed) / s);
      if (guaranteed + share_floor_ * s > gpus * (1.0 + 1e-12) && guaranteed > 0.0) break;
      guaranteed += share * s;
      fraction[i] = share;
    }
    for (std::size_t i = 0; i < input.num_jobs(); ++i) {
      if (fraction[i] <= 0.0) continue;
      sharing.jobs.push_back(i);
      sharing.fraction.push_back(fraction[i]);
    }
    return sharing;
  }

  // The allocation of the jobs `sharing` alone; 0 for the others.
  Result<PolicyOutput> AllocateAmong(const PolicyInput& input, const Sharing& sharing) {
    PolicyInput part = input;
    part.jobs.clear();
    part.throughput = Matrix(sharing.jobs.size(), input.num_types());
    for (std::size_t k = 0; k < sharing.jobs.size(); ++k) {
      part.jobs.push_back(input.jobs[sharing.jobs[k]]);
      for (std::size_t j = 0; j < input.num_types(); ++j) {
        part.throughput(k, j) = input.throughput(sharing.jobs[k], j);
      }
    }
    GAVEL_ASSIGN_OR_RETURN(PolicyOutput shared, AllocateShared(part, sharing.fraction));
    PolicyOutput output = shared;
    output.allocation = Matrix(input.num_jobs(), input.num_types());
    for (std::size_t k = 0; k < sharing.jobs.size(); ++k) {
      for (std::size_t j = 0; j < input.num_types(); ++j) {
        output.allocation(sharing.jobs[k], j) = shared.allocation(k, j);
      }
    }
    return output;
  }

  // `fraction`: each job's guaranteed fraction of its time (empty: none).
  Result<PolicyOutput> AllocateShared(const PolicyInput& input,
                                      const std::vector<double>& fraction) {
    const std::vector<double> floors = FloorLevels(input, fraction);
    GAVEL_ASSIGN_OR_RETURN(PolicyOutput optimum, AllocateOptimumAboveFloors(input, floors));
    const bool has_current = std::any_of(input.jobs.begin(), input.jobs.end(),
                                         [](const PolicyJob& j) {
                                           return !j.current_allocation.empty();
                                         });
    const bool stays = stay_ > 0.0 && has_current;
    if ((!stays && !efficient_) || !optimum.objective || *optimum.objective <= 0.0) {
      return optimum;
    }
    return Refine(input, optimum, floors, has_current);
  }

  // Each counted job's floor in level units: its level when it gets `fraction` of its time
  // spread over the types in proportion to their GPUs (for _perf, thr_i(X) / prop_i >=
  // fraction, the level fraction·s_i / w_i). Max-min fairness levels GPU-time, so without it
  // an 8-GPU gang sharing with 1-GPU jobs gets an eighth of their time share: under overload
  // the oldest gang, whose turn the queue is meant to bring, crawls for hundreds of hours
  // while one-GPU jobs pass through. Defined by that spread so that the floors are feasible
  // whenever Σ s_i · fraction_i <= C, as SharingJobs's are (the spreads fit every capacity; a
  // cell where the job cannot run is left out, counting nothing). Empty when `fraction` is.
  std::vector<double> FloorLevels(const PolicyInput& input,
                                  const std::vector<double>& fraction) const {
    if (fraction.empty()) return {};
    const Matrix throughput = ThroughputView(input);
    const std::vector<double> prop = NormalisingThroughputs(input, throughput);
    const double gpus = TotalGpus(input);
    std::vector<double> floors(input.num_jobs(), 0.0);
    for (std::size_t i = 0; i < floors.size(); ++i) {
      if (prop[i] <= 0.0) continue;
      double spread = 0.0;  // thr_i of the spread fraction_i · c_j / C
      for (std::size_t j = 0; j < input.num_types(); ++j) {
        spread += fraction[i] * throughput(i, j) * input.gpu_counts[j] / gpus;
      }
      floors[i] = spread * LevelScale(input.jobs[i], prop[i]);
    }
    return floors;
  }

  // maximise t subject to level_i >= t and level_i >= F_i for every counted job (F =
  // `floors`; none when empty). Solved as the plain max-min LP in which the jobs whose floor
  // lies above the level reached so far hold their floor (level_i >= F_i) instead of the
  // level row, re-solved until no other job's floor is above the level: the level only falls
  // as jobs are pinned, so every pinned job's floor stays above the final level t, every other
  // job's floor below it, and that relaxation's optimum meets both rows for every job. The
  // jobs with the lowest floor need no pinning (the optimum is at least the lowest floor) and
  // are never pinned, so the level stays bounded; at most one solve per distinct floor (a
  // floor depends on the job's GPUs, weight and speeds), in practice one or two.
  Result<PolicyOutput> AllocateOptimumAboveFloors(const PolicyInput& input,
                                                  const std::vector<double>& floors) {
    std::vector<double> pinned;  // F_i for the pinned jobs, 0 for the others
    if (!floors.empty()) pinned.assign(floors.size(), 0.0);
    // Never pinned, even where the LP's rounding puts the level a hair below it: with every
    // counted job pinned the level would be unbounded.
    double lowest = std::numeric_limits<double>::infinity();
    for (double f : floors) {
      if (f > 0.0) lowest = std::min(lowest, f);
    }
    for (;;) {
      GAVEL_ASSIGN_OR_RETURN(PolicyOutput optimum, AllocateOptimum(input, pinned));
      if (floors.empty() || !optimum.objective) return optimum;
      const double level = *optimum.objective;
      bool grew = false;
      for (std::size_t i = 0; i < floors.size(); ++i) {
        if (pinned[i] > 0.0 || floors[i] <= lowest ||
            floors[i] <= level * (1.0 + kLevelTolerance)) {
          continue;
        }
        pinned[i] = floors[i];
        grew = true;
      }
      if (!grew) return optimum;
    }
  }

  // The max-min LP; a job with pinned[i] > 0 has the row level_i >= pinned[i] in place of
  // level_i >= t (pinned empty: none).
  Result<PolicyOutput> AllocateOptimum(const PolicyInput& input,
                                       const std::vector<double>& pinned) {
    const std::size_t m = input.num_jobs();
    const std::size_t n = input.num_types();
    const bool packed = variant_ == Variant::kPacked;
    const Matrix throughput = ThroughputView(input);
    const std::vector<double> prop = NormalisingThroughputs(input, throughput);

    const auto pinned_at = [&](std::size_t i) { return pinned.empty() ? 0.0 : pinned[i]; };
    const bool any_pinned = std::any_of(pinned.begin(), pinned.end(), [](double f) { return f > 0.0; });
    FastPathAttempt fast = TryFastPath(variant_, options_, m, [&] {
      return AllocateByDecomposition(input, throughput, prop, pinned);
    });
    if (fast.output.has_value()) return std::move(*fast.output);
    // Space sharing on the fast path: over classes of interchangeable jobs when they pay.
    if (packed && m > 0 && UsesColumnGeneration(options_)) {
      if (const std::optional<JobClasses> classes = FindInterchangeableJobs(input, throughput)) {
        return AllocateByClasses(input, throughput, prop, *classes);
      }
    }

    if (options_.compat_gavel && !packed && m > 0 && !any_pinned) {  // the original's LP form
      if (std::optional<PolicyOutput> output = SolveAsTheOriginal(input, throughput, prop)) {
        return std::move(*output);
      }
    }

    GAVEL_ASSIGN_OR_RETURN(BaseProblem problem,
                           BuildBaseProblem(input, throughput, lp::Sense::kMaximize,
                                            BaseProblemOptionsFor(variant_, options_)));
    if (m == 0) return ExtractAllocation(input, problem, lp::Solution{});

    const int level = problem.model.AddColumn(0.0, lp::kInfinity, 1.0);
    // Each job's normalised throughput, as (column, coefficient) terms.
    std::vector<std::vector<std::pair<int, double>>> terms(m);
    for (std::size_t i = 0; i < m; ++i) {
      const PolicyJob& job = input.jobs[i];
      // A job that can run nowhere has no share to be fair about; it is left out of the min.
      if (prop[i] <= 0.0) continue;
      const double scale = LevelScale(job, prop[i]);
      for (std::size_t j = 0; j < n; ++j) {
        terms[i].push_back({problem.job_columns[i * n + j], throughput(i, j) * scale});
      }
      if (!packed) continue;
      for (int p : problem.pairs_of_job[i]) {
        const JobPair& pair = input.pairs[static_cast<std::size_t>(p)];
        const Matrix& member = static_cast<std::size_t>(pair.first) == i
                                   ? input.pair_throughput_first
                                   : input.pair_throughput_second;
        for (std::size_t j = 0; j < n; ++j) {
          terms[i].push_back({problem.pair_columns[static_cast<std::size_t>(p) * n + j],
                              member(static_cast<std::size_t>(p), j) * scale});
        }
      }
    }
    if (packed && options_.compat_gavel) terms = RegroupLikeOriginal(terms);

    // With no job that can run anywhere there is no minimum to raise (the LP would be
    // unbounded): nobody gets anything.
    if (std::all_of(terms.begin(), terms.end(), [](const auto& t) { return t.empty(); })) {
      lp::Solution nothing;
      nothing.values.assign(static_cast<std::size_t>(problem.model.num_columns()), 0.0);
      PolicyOutput output = ExtractAllocation(input, problem, nothing);
      output.objective = 0.0;
      return output;
    }

    std::vector<int> cols;
    std::vector<double> coefs;
    for (std::size_t i = 0; i < m; ++i) {
      if (terms[i].empty()) continue;
      cols.clear();
      coefs.clear();
      if (pinned_at(i) <= 0.0) {
        cols.push_back(level);
        coefs.push_back(-1.0);
      }
      for (const auto& [col, coef] : terms[i]) {
        cols.push_back(col);
        coefs.push_back(coef);
      }
      problem.model.AddRow(pinned_at(i), lp::kInfinity, cols, coefs);
    }

    GAVEL_ASSIGN_OR_RETURN(const lp::Solution solution, solvers_.lp->Solve(problem.model));
    if (solution.outcome != lp::Outcome::kOptimal) {
      return UnexpectedOutcome("max_min_fairness", solution.outcome);
    }
    PolicyOutput output = ExtractAllocation(input, problem, solution);
    output.objective = solution.values[static_cast<std::size_t>(level)];
    output.note = fast.failure_note;
    return output;
  }

  // The second stages, over the allocations that keep every counted job's normalised
  // throughput at least (1 − ε)·t* (ε = stay, or a rounding tolerance without it):
  //   efficient: maximise Σ_i normalised throughput_i(X), the cluster's total progress among
  //     (nearly) max-min optimal allocations: E*.
  //   stay: minimise Σ_ij |X[i][j] − current[i][j]| (current = 0 where the job has none),
  //     with, after the efficient stage, Σ_i normalised throughput_i(X) >= (1 − ε)·E*.
  // The reported objective stays t*.
  Result<PolicyOutput> Refine(const PolicyInput& input, const PolicyOutput& optimum_output,
                              const std::vector<double>& floors, bool has_current) {
    const double optimum = *optimum_output.objective;
    // Each job keeps (1 − ε) of what the optimum guarantees it: t*, or its floor above t*.
    const double keep = 1.0 - std::max(stay_, kLevelTolerance);
    std::vector<double> floor(input.num_jobs(), keep * optimum);
    for (std::size_t i = 0; i < floors.size(); ++i) floor[i] = keep * std::max(optimum, floors[i]);
    std::optional<double> total;
    if (efficient_) {
      GAVEL_ASSIGN_OR_RETURN(Stage efficient,
                             SolveEfficientStage(input, floor, optimum_output.allocation));
      if (!(stay_ > 0.0 && has_current)) {
        efficient.output.objective = optimum;
        return std::move(efficient.output);
      }
      total = (1.0 - stay_) * efficient.total;
    }
    GAVEL_ASSIGN_OR_RETURN(PolicyOutput stay, SolveStayStage(input, floor, total));
    stay.objective = optimum;
    return stay;
  }

  struct Stage {
    PolicyOutput output;
    double total = 0.0;  // Σ_i normalised throughput_i of the allocation
  };
  // The efficient stage: the base constraints, every counted job at `floor`, the most total
  // normalised throughput; started from `start` (the optimum's allocation, feasible here).
  Result<Stage> SolveEfficientStage(const PolicyInput& input, const std::vector<double>& floor,
                                    const Matrix& start) {
    const std::size_t m = input.num_jobs();
    const std::size_t n = input.num_types();
    const Matrix throughput = ThroughputView(input);
    const std::vector<double> prop = NormalisingThroughputs(input, throughput);
    GAVEL_ASSIGN_OR_RETURN(BaseProblem problem,
                           BuildBaseProblem(input, throughput, lp::Sense::kMaximize,
                                            BaseProblemOptionsFor(variant_, options_)));
    std::vector<int> cols;
    std::vector<double> coefs;
    std::vector<int> all_cols;
    std::vector<double> all_coefs;
    std::vector<double> start_point(static_cast<std::size_t>(problem.model.num_columns()), 0.0);
    for (std::size_t i = 0; i < m; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        start_point[static_cast<std::size_t>(problem.job_columns[i * n + j])] = start(i, j);
      }
      if (prop[i] <= 0.0) continue;
      const double scale = LevelScale(input.jobs[i], prop[i]);
      cols.clear();
      coefs.clear();
      for (std::size_t j = 0; j < n; ++j) {
        cols.push_back(problem.job_columns[i * n + j]);
        coefs.push_back(throughput(i, j) * scale);
        problem.model.SetObjective(cols.back(), coefs.back());
      }
      problem.model.AddRow(floor[i], lp::kInfinity, cols, coefs);
      all_cols.insert(all_cols.end(), cols.begin(), cols.end());
      all_coefs.insert(all_coefs.end(), coefs.begin(), coefs.end());
    }
    GAVEL_ASSIGN_OR_RETURN(std::unique_ptr<lp::Session> session, solvers_.lp->Load(problem.model));
    session->SetStartPoint(start_point);
    GAVEL_ASSIGN_OR_RETURN(const lp::Solution solution, session->Solve());
    if (solution.outcome != lp::Outcome::kOptimal) {
      return UnexpectedOutcome("max_min_fairness (efficient)", solution.outcome);
    }
    Stage stage{ExtractAllocation(input, problem, solution), 0.0};
    for (std::size_t k = 0; k < all_cols.size(); ++k) {
      stage.total += all_coefs[k] * solution.values[static_cast<std::size_t>(all_cols[k])];
    }
    return stage;
  }

  // The stay stage: among the allocations of the base constraints that keep every counted job
  // at `floor` (and Σ normalised throughput >= `total` when given), the one closest to the
  // current allocation c in L1 distance. Written in the moves from c: x = c + up − down with
  // up in [0, 1 − c] (0 where the job cannot run) and down in [0, c] (= c where it cannot),
  // minimising Σ (up + down). At an optimum a cell never moves both ways, so the sum is
  // Σ |x − c|, and x's bounds are the moves' bounds: the LP has only the base and floor
  // rows, where |x − c| >= d as two rows per cell would triple them (and the solve time).
  Result<PolicyOutput> SolveStayStage(const PolicyInput& input, const std::vector<double>& floor,
                                      std::optional<double> total) {
    const std::size_t m = input.num_jobs();
    const std::size_t n = input.num_types();
    const Matrix throughput = ThroughputView(input);
    const std::vector<double> prop = NormalisingThroughputs(input, throughput);
    const bool fix_unrunnable = BaseProblemOptionsFor(variant_, options_).fix_unrunnable_to_zero;
    lp::Model model(lp::Sense::kMinimize);
    Matrix current(m, n);
    std::vector<int> up(m * n);
    std::vector<int> down(m * n);
    for (std::size_t i = 0; i < m; ++i) {
      const std::vector<double>& given = input.jobs[i].current_allocation;
      for (std::size_t j = 0; j < n; ++j) {
        const double c = j < given.size() ? std::clamp(given[j], 0.0, 1.0) : 0.0;
        current(i, j) = c;
        const bool fixed_zero = fix_unrunnable && throughput(i, j) <= 0.0;
        up[i * n + j] = model.AddColumn(0.0, fixed_zero ? 0.0 : 1.0 - c, 1.0);
        down[i * n + j] = model.AddColumn(fixed_zero ? c : 0.0, c, 1.0);
      }
    }
    // A row over x written over the moves: Σ coef·(up − down) against its bounds less Σ coef·c.
    std::vector<int> cols;
    std::vector<double> coefs;
    const auto add_row = [&](double lower, double upper,
                             const std::vector<std::pair<std::size_t, double>>& cells) {
      cols.clear();
      coefs.clear();
      double at_current = 0.0;
      for (const auto& [cell, coef] : cells) {
        cols.push_back(up[cell]);
        coefs.push_back(coef);
        cols.push_back(down[cell]);
        coefs.push_back(-coef);
        at_current += coef * current(cell / n, cell % n);
      }
      model.AddRow(lower - at_current, upper - at_current, cols, coefs);
    };
    std::vector<std::pair<std::size_t, double>> cells;
    for (std::size_t j = 0; j < n; ++j) {
      cells.clear();
      for (std::size_t i = 0; i < m; ++i) cells.push_back({i * n + j, input.jobs[i].scale_factor});
      add_row(-lp::kInfinity, input.gpu_counts[j], cells);
    }
    for (std::size_t i = 0; i < m; ++i) {
      cells.clear();
      for (std::size_t j = 0; j < n; ++j) cells.push_back({i * n + j, 1.0});
      add_row(-lp::kInfinity, 1.0, cells);
    }
    std::vector<std::pair<std::size_t, double>> all_cells;
    for (std::size_t i = 0; i < m; ++i) {
      if (prop[i] <= 0.0) continue;
      const double scale = LevelScale(input.jobs[i], prop[i]);
      cells.clear();
      for (std::size_t j = 0; j < n; ++j) cells.push_back({i * n + j, throughput(i, j) * scale});
      add_row(floor[i], lp::kInfinity, cells);
      all_cells.insert(all_cells.end(), cells.begin(), cells.end());
    }
    if (total) add_row(*total, lp::kInfinity, all_cells);
    GAVEL_ASSIGN_OR_RETURN(const lp::Solution solution, solvers_.lp->Solve(model));
    if (solution.outcome != lp::Outcome::kOptimal) {
      return UnexpectedOutcome("max_min_fairness (stay)", solution.outcome);
    }
    PolicyOutput output;
    output.allocation = Matrix(m, n);
    output.pair_allocation = Matrix(0, n);
    output.status = AllocationStatus::kOptimal;
    for (std::size_t cell = 0; cell < m * n; ++cell) {
      const double x = current(cell / n, cell % n) +
                       solution.values[static_cast<std::size_t>(up[cell])] -
                       solution.values[static_cast<std::size_t>(down[cell])];
      output.allocation(cell / n, cell % n) = std::clamp(x, 0.0, 1.0);
    }
    return output;
  }

  // The throughputs the variant believes, and each job's normaliser (prop; 1 when agnostic,
  // 0 for a job that can run nowhere, which is left out of the minimum).
  Matrix ThroughputView(const PolicyInput& input) const {
    return variant_ == Variant::kAgnostic ? UnitThroughput(input, options_.compat_gavel)
                                          : input.throughput;
  }
  std::vector<double> NormalisingThroughputs(const PolicyInput& input,
                                             const Matrix& throughput) const {
    if (variant_ != Variant::kAgnostic) return ProportionalThroughputs(input, throughput);
    // Agnostic: prop = 1 (the original's T ≡ 1 makes Σ_j c_j / Σ_t c_t = 1), except for a job
    // that can run nowhere, which has no share to be fair about (prop = 0 leaves it out).
    std::vector<double> prop(input.num_jobs(), 1.0);
    for (std::size_t i = 0; i < input.num_jobs(); ++i) {
      if (throughput.RowSum(i) <= 0.0) prop[i] = 0.0;
    }
    return prop;
  }

  // The same LP by per-job decomposition: demand rows gain·x >= t with the normalised
  // throughputs as gains, for the jobs in the minimum.
  Result<PolicyOutput> AllocateByDecomposition(const PolicyInput& input, const Matrix& throughput,
                                               const std::vector<double>& prop,
                                               const std::vector<double>& pinned) {
    decomp::JobProblem problem = BaseJobProblem(input, throughput);
    PrepareDemandRows(problem);
    problem.t_weight = 1.0;
    bool any = false;
    for (std::size_t i = 0; i < input.num_jobs(); ++i) {
      if (prop[i] <= 0.0) continue;
      const PolicyJob& job = input.jobs[i];
      const double scale = LevelScale(job, prop[i]);
      for (std::size_t j = 0; j < input.num_types(); ++j) {
        problem.gain(i, j) = throughput(i, j) * scale;
      }
      problem.has_demand[i] = 1;
      if (!pinned.empty() && pinned[i] > 0.0) {
        problem.level[i] = pinned[i];  // rate 0: its floor, not the level
      } else {
        problem.rate[i] = 1.0;
      }
      any = true;
    }
    if (!any) {  // nobody can run anywhere: nothing to raise
      decomp::JobSolution nothing;
      nothing.x = Matrix(input.num_jobs(), input.num_types());
      PolicyOutput output = AllocationOf(input, nothing);
      output.objective = 0.0;
      return output;
    }
    GAVEL_ASSIGN_OR_RETURN(const decomp::JobSolution solution,
                           decomp::SolveJobProblem(problem, *solvers_.master));
    if (solution.outcome != decomp::JobOutcome::kOptimal) {
      return Status::Internal("max_min_fairness: the decomposition found no optimum");
    }
    PolicyOutput output = AllocationOf(input, solution);
    output.objective = solution.t;
    return output;
  }

  // The original's LP (max_min_fairness.py) as cvxpy 1.1 hands it to ECOS, solved by ECOS's
  // iterations (lp/ecos_lp.h): where the optimum is not unique, and under load almost every
  // job's share above the minimum is free, the original scheduled by the point where ECOS
  // stopped, which the mechanism turns into a different schedule than any other optimal
  // point (docs/differences.md, S1 and "Fidelity"). cvxpy's form: Maximize(min(v)) becomes
  // Minimize(t) with −v <= t (max_canon of −v), over the columns [t, X flattened
  // column-major] (the objective's variable first); rows in cvxpy's order, the objective's
  // epigraph rows first: −Σ_j C[i][j] X[i][j] − t <= 0 per job; −X <= 0; Σ_i s_i X[i][j] <=
  // c_j per type; Σ_j X[i][j] <= 1 per job. C[i][j] = T[i][j] s_i / (w_i prop_i). Empty when
  // ECOS ends without an answer cvxpy would hand back (the caller then solves the LP as we
  // do without --compat); "optimal_inaccurate" is an answer, as it was there.
  std::optional<PolicyOutput> SolveAsTheOriginal(const PolicyInput& input, const Matrix& throughput,
                                                 const std::vector<double>& prop) const {
    const int m = static_cast<int>(input.num_jobs());
    const int n = static_cast<int>(input.num_types());
    const int t = 0;
    const auto var = [m](int i, int j) { return 1 + i + j * m; };
    lp::InequalityLp lp;
    lp.num_columns = 1 + m * n;
    lp.c.assign(static_cast<std::size_t>(lp.num_columns), 0.0);
    lp.c[static_cast<std::size_t>(t)] = 1.0;
    std::vector<int> columns;
    std::vector<double> coefficients;
    bool any = false;
    for (int i = 0; i < m; ++i) {
      const PolicyJob& job = input.jobs[static_cast<std::size_t>(i)];
      // A job that can run nowhere is left out of the minimum, as on every other path.
      if (prop[static_cast<std::size_t>(i)] <= 0.0) continue;
      any = true;
      const double scale = LevelScale(job, prop[static_cast<std::size_t>(i)]);
      columns.assign({t});
      coefficients.assign({-1.0});
      for (int j = 0; j < n; ++j) {
        columns.push_back(var(i, j));
        coefficients.push_back(-throughput(static_cast<std::size_t>(i), static_cast<std::size_t>(j)) *
                               scale);
      }
      lp.AddRow(columns, coefficients, 0.0);
    }
    if (!any) return std::nullopt;
    AppendOriginalBaseRows(input, /*first_x=*/1, lp);
    const lp::EcosResult solved = lp::SolveEcosLp(lp);
    if (solved.exit != lp::EcosExit::kOptimal && solved.exit != lp::EcosExit::kOptimalInaccurate) {
      return std::nullopt;
    }
    PolicyOutput output;
    output.allocation = Matrix(input.num_jobs(), input.num_types());
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < n; ++j) {
        output.allocation(static_cast<std::size_t>(i), static_cast<std::size_t>(j)) =
            std::clamp(solved.x[static_cast<std::size_t>(var(i, j))], 0.0, 1.0);
      }
    }
    output.objective = -solved.x[static_cast<std::size_t>(t)];  // t bounds −v from above
    return output;
  }

  // The packed LP over classes of interchangeable jobs (packed_classes.h): x[a][j] is each
  // member's time on type j alone, y[q][j] the total time of class pair q's job pairs on j.
  //   capacity j:  Σ_a |a| s_a x[a][j] + Σ_q s_q y[q][j] <= c_j
  //   time a:      Σ_j x[a][j] + Σ_{q ∋ a} Σ_j (y[q][j] / |a|, twice that when q = (a, a)) <= 1
  //   demand a:    its member's normalised throughput, the same terms weighted by T, >= t
  // Its optimum is the whole LP's: spread back (SpreadPairTime) an allocation gives every
  // member exactly these amounts, and an optimum of the whole LP averaged over swaps of
  // interchangeable jobs is one of these.
  Result<PolicyOutput> AllocateByClasses(const PolicyInput& input, const Matrix& throughput,
                                         const std::vector<double>& prop,
                                         const JobClasses& classes) {
    const std::size_t n = input.num_types();
    BaseProblem problem =
        BuildClassBaseProblem(input, classes, throughput, lp::Sense::kMaximize,
                              UsesColumnGeneration(options_));
    const int level = problem.model.AddColumn(0.0, lp::kInfinity, 1.0);
    bool any_demand = false;
    std::vector<int> cols;
    std::vector<double> coefs;
    for (std::size_t a = 0; a < classes.size(); ++a) {
      const std::size_t i = classes.members[a].front();
      if (prop[i] <= 0.0) continue;
      any_demand = true;
      const PolicyJob& job = input.jobs[i];
      const double scale = LevelScale(job, prop[i]);
      cols.assign({level});
      coefs.assign({-1.0});
      for (std::size_t j = 0; j < n; ++j) {
        cols.push_back(problem.job_columns[a * n + j]);
        coefs.push_back(throughput(i, j) * scale);
      }
      for (const JobClasses::PairShare& pair : classes.pairs_of_class[a]) {
        for (std::size_t j = 0; j < n; ++j) {
          cols.push_back(problem.pair_columns[pair.q * n + j]);
          coefs.push_back(MemberPairThroughput(classes, a, pair, j) * scale);
        }
      }
      problem.model.AddRow(0.0, lp::kInfinity, cols, coefs);
    }
    lp::Solution solution;
    solution.values.assign(static_cast<std::size_t>(problem.model.num_columns()), 0.0);
    if (any_demand) {  // else nobody can run anywhere: nothing to raise
      GAVEL_ASSIGN_OR_RETURN(solution, solvers_.lp->Solve(problem.model));
      if (solution.outcome != lp::Outcome::kOptimal) {
        return UnexpectedOutcome("max_min_fairness", solution.outcome);
      }
    }
    PolicyOutput output = SpreadClassAllocation(input, classes, problem, solution);
    output.objective = solution.values[static_cast<std::size_t>(level)];
    return output;
  }

  // The original's vectorised packed objective concatenates every job's terms and reshapes
  // them into equal chunks, one per job (the same quirk as the packed time constraint; the
  // base problem has already refused inputs where the chunks cannot be equal).
  static std::vector<std::vector<std::pair<int, double>>> RegroupLikeOriginal(
      const std::vector<std::vector<std::pair<int, double>>>& terms) {
    std::vector<std::pair<int, double>> flat;
    for (const auto& t : terms) flat.insert(flat.end(), t.begin(), t.end());
    std::vector<std::vector<std::pair<int, double>>> regrouped(terms.size());
    const std::size_t chunk = flat.size() / terms.size();
    for (std::size_t i = 0; i < terms.size(); ++i) {
      regrouped[i].assign(flat.begin() + static_cast<std::ptrdiff_t>(i * chunk),
                          flat.begin() + static_cast<std::ptrdiff_t>((i + 1) * chunk));
    }
    return regrouped;
  }

  Variant variant_;
  PolicyOptions options_;
  PolicySolvers solvers_;
  // What the efficient stage may give up of t* without stay: the LP's rounding, so that t*
  // itself stays feasible.
  static constexpr double kLevelTolerance = 1e-7;
  double stay_ = 0.0;  // ε of the stay stage; 0 = off
  bool efficient_ = false;
  double share_floor_ = 0.0;  // f of SharingJobs; 0 = every job shares
  double head_ = 0.0;         // the head of SharingJobs's queue, a fraction of the GPUs
};

}  // namespace

std::unique_ptr<Policy> MakeMaxMinFairness(Variant variant, const PolicyOptions& options) {
  return std::make_unique<MaxMinFairness>(variant, options);
}

Result<std::unique_ptr<Policy>> MakeMaxMinFairnessWithParams(Variant variant,
                                                             const PolicyOptions& options) {
  double stay = 0.0;
  bool efficient = false;
  double share_floor = 0.0;
  double head = 0.0;
  for (const auto& param : options.params) {
    const std::string& key = param.first;
    const std::string& text = param.second;
    // A fraction in [0, 1]; `of` says of what, for the error.
    const auto fraction = [&](const char* of) -> Result<double> {
      const std::optional<double> value = ParseFiniteDouble(text);
      if (!value || *value < 0.0 || *value > 1.0) {
        return Status::InvalidArgument("option " + key + "=" + text + ": must be a fraction of " +
                                       of + " in [0, 1]");
      }
      return *value;
    };
    if (key == "head") {
      GAVEL_ASSIGN_OR_RETURN(head, fraction("the cluster's GPUs"));
      continue;
    }
    if (key == "share_floor") {
      GAVEL_ASSIGN_OR_RETURN(share_floor, fraction("a job's GPUs"));
      continue;
    }
    if (key == "efficient") {
      if (text != "0" && text != "1") {
        return Status::InvalidArgument("option efficient=" + text + ": must be 0 or 1");
      }
      efficient = text == "1";
      continue;
    }
    if (key != "stay") return Status::InvalidArgument("unknown option " + key);
    const std::optional<double> value = ParseFiniteDouble(text);
    if (!value || *value < 0.0 || *value >= 1.0) {
      return Status::InvalidArgument("option stay=" + text +
                                     ": must be a fraction of the optimum in [0, 1)");
    }
    stay = *value;
  }
  if ((stay > 0.0 || efficient || share_floor > 0.0 || head > 0.0) &&
      variant == Variant::kPacked) {
    return Status::InvalidArgument(
        "options stay, efficient, share_floor and head: not offered with space sharing "
        "(_packed)");
  }
  return std::unique_ptr<Policy>(
      std::make_unique<MaxMinFairness>(variant, options, stay, efficient, share_floor, head));
}

Result<std::unique_ptr<Policy>> MakeMaxMinFairnessByName(Variant variant,
                                                         const PolicyOptions& options) {
  if (options.compat_gavel || variant == Variant::kPacked) {
    return MakeMaxMinFairnessWithParams(variant, options);
  }
  const auto given = [&](const char* key) {
    return std::any_of(options.params.begin(), options.params.end(),
                       [&](const auto& p) { return p.first == key; });
  };
  PolicyOptions with_defaults = options;
  if (!given("share_floor")) {
    with_defaults.params.emplace_back("share_floor", std::to_string(kDefaultShareFloor));
  }
  if (!given("head")) with_defaults.params.emplace_back("head", std::to_string(kDefaultHead));
  return MakeMaxMinFairnessWithParams(variant, with_defaults);
}

}  // namespace gavel::policy
