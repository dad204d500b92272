#include "gavel/policy/common.h"

#include <algorithm>
#include <array>
#include <limits>
#include <numeric>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gavel/lp/column_generation.h"

namespace gavel::policy {
namespace {

// Scratch of n values for helpers called per job per solve: on the stack for the usual few
// GPU types, on the heap beyond. Value-initialised. Not copyable (the view points into it).
template <class T>
class TypeScratch {
 public:
  explicit TypeScratch(std::size_t n) {
    if (n > kFewTypes) many_.assign(n, T{});
    values_ = many_.empty() ? std::span<T>(few_.data(), n) : std::span<T>(many_);
  }
  TypeScratch(const TypeScratch&) = delete;
  TypeScratch& operator=(const TypeScratch&) = delete;

  std::span<T> values() { return values_; }

 private:
  static constexpr std::size_t kFewTypes = 16;
  std::array<T, kFewTypes> few_{};
  std::vector<T> many_;
  std::span<T> values_;
};

}  // namespace

const char* AllocationStatusName(AllocationStatus status) {
  switch (status) {
    case AllocationStatus::kOptimal:
      return "optimal";
    case AllocationStatus::kHeuristic:
      return "heuristic";
    case AllocationStatus::kFallback:
      return "fallback";
  }
  return "unknown";
}

InputRequirements RequirementsOf(const PolicyCapabilities& capabilities, bool compat_gavel) {
  InputRequirements requirements;
  requirements.pairs = capabilities.packing;
  requirements.keep_unusable_pairs = compat_gavel;
  requirements.steps_remaining = capabilities.needs_steps_remaining;
  requirements.instance_costs = capabilities.needs_instance_costs;
  return requirements;
}

bool UsesColumnGeneration(const PolicyOptions& options) {
  return !options.compat_gavel && options.solve_path == SolvePath::kFast;
}

BaseProblemOptions BaseProblemOptionsFor(Variant variant, const PolicyOptions& options) {
  BaseProblemOptions base;
  base.with_pairs = variant == Variant::kPacked;
  base.fix_unrunnable_to_zero = !options.compat_gavel;
  base.compat_packed_reshape = options.compat_gavel;
  base.lazy_pairs = base.with_pairs && UsesColumnGeneration(options);
  return base;
}

Result<BaseProblem> BuildBaseProblem(const PolicyInput& input, const Matrix& throughput,
                                     lp::Sense sense, const BaseProblemOptions& options) {
  const std::size_t m = input.num_jobs();
  const std::size_t n = input.num_types();
  const std::size_t num_pairs = options.with_pairs ? input.pairs.size() : 0;
  BaseProblem problem{lp::Model(sense), {}, {}, {}, {}, {}};
  // Every job column has an entry in its type's capacity row and its job's time row; every
  // pair column one in the capacity row and both members' time rows.
  const auto capped = [](std::size_t count) {
    return static_cast<int>(std::min<std::size_t>(count, std::numeric_limits<int>::max()));
  };
  problem.model.Reserve(capped((m + num_pairs) * n), capped(n + m),
                        capped((2 * m + 3 * num_pairs) * n));
  problem.job_columns.resize(m * n);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      const bool runnable = throughput(i, j) > 0.0;
      const double upper = (options.fix_unrunnable_to_zero && !runnable) ? 0.0 : 1.0;
      problem.job_columns[i * n + j] = problem.model.AddColumn(0.0, upper);
    }
  }
  problem.pairs_of_job.resize(m);
  problem.pair_columns.resize(num_pairs * n);
  for (std::size_t p = 0; p < num_pairs; ++p) {
    const JobPair& pair = input.pairs[p];
    problem.pairs_of_job[static_cast<std::size_t>(pair.first)].push_back(static_cast<int>(p));
    problem.pairs_of_job[static_cast<std::size_t>(pair.second)].push_back(static_cast<int>(p));
    for (std::size_t j = 0; j < n; ++j) {
      const bool runnable =
          input.pair_throughput_first(p, j) > 0.0 || input.pair_throughput_second(p, j) > 0.0;
      const double upper = (options.fix_unrunnable_to_zero && !runnable) ? 0.0 : 1.0;
      problem.pair_columns[p * n + j] = problem.model.AddColumn(0.0, upper);
      if (options.lazy_pairs) problem.model.SetColumnLazy(problem.pair_columns[p * n + j], true);
    }
  }

  std::vector<int> cols;
  std::vector<double> coefs;
  for (std::size_t j = 0; j < n; ++j) {
    cols.clear();
    coefs.clear();
    for (std::size_t i = 0; i < m; ++i) {
      cols.push_back(problem.job_columns[i * n + j]);
      coefs.push_back(input.jobs[i].scale_factor);
    }
    for (std::size_t p = 0; p < num_pairs; ++p) {
      const JobPair& pair = input.pairs[p];
      const int sf_first = input.jobs[static_cast<std::size_t>(pair.first)].scale_factor;
      const int sf_second = input.jobs[static_cast<std::size_t>(pair.second)].scale_factor;
      // A pair occupies its (common) scale factor's GPUs once. Mixed pairs are never built.
      GAVEL_CHECK(sf_first == sf_second);
      cols.push_back(problem.pair_columns[p * n + j]);
      coefs.push_back(sf_first);
    }
    problem.capacity_rows.push_back(
        problem.model.AddRow(-lp::kInfinity, input.gpu_counts[j], cols, coefs));
  }

  if (!options.compat_packed_reshape || num_pairs == 0) {
    for (std::size_t i = 0; i < m; ++i) {
      cols.clear();
      coefs.clear();
      for (std::size_t j = 0; j < n; ++j) cols.push_back(problem.job_columns[i * n + j]);
      for (int p : problem.pairs_of_job[i]) {
        for (std::size_t j = 0; j < n; ++j) {
          cols.push_back(problem.pair_columns[static_cast<std::size_t>(p) * n + j]);
        }
      }
      coefs.assign(cols.size(), 1.0);
      problem.time_rows.push_back(problem.model.AddRow(-lp::kInfinity, 1.0, cols, coefs));
    }
  } else {
    // The original gathers every job's relevant rows (its own, then its pairs in row order),
    // concatenates them and reshapes to (jobs, -1) in C order: job i's constraint sums the
    // i-th equal-length chunk, which is its own rows only when every job has as many pairs.
    std::vector<int> flat;
    for (std::size_t i = 0; i < m; ++i) {
      for (std::size_t j = 0; j < n; ++j) flat.push_back(problem.job_columns[i * n + j]);
      for (int p : problem.pairs_of_job[i]) {
        for (std::size_t j = 0; j < n; ++j) {
          flat.push_back(problem.pair_columns[static_cast<std::size_t>(p) * n + j]);
        }
      }
    }
    if (flat.size() % m != 0) {
      return Status::FailedPrecondition(
          "--compat gavel: the original's packed per-job constraint cannot be formed for these "
          "jobs (their numbers of space-sharing pairs differ; the original crashes here)");
    }
    const std::size_t chunk = flat.size() / m;
    for (std::size_t i = 0; i < m; ++i) {
      cols.assign(flat.begin() + static_cast<std::ptrdiff_t>(i * chunk),
                  flat.begin() + static_cast<std::ptrdiff_t>((i + 1) * chunk));
      coefs.assign(cols.size(), 1.0);
      problem.time_rows.push_back(problem.model.AddRow(-lp::kInfinity, 1.0, cols, coefs));
    }
  }
  return problem;
}

PolicyOutput ExtractAllocation(const PolicyInput& input, const BaseProblem& problem,
                               const lp::Solution& solution) {
  const std::size_t m = input.num_jobs();
  const std::size_t n = input.num_types();
  const std::size_t num_pairs = problem.pair_columns.size() / std::max<std::size_t>(n, 1);
  PolicyOutput output;
  output.allocation = Matrix(m, n);
  output.pair_allocation = Matrix(num_pairs, n);
  const auto clip = [](double v) { return std::clamp(v, 0.0, 1.0); };
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      output.allocation(i, j) =
          clip(solution.values[static_cast<std::size_t>(problem.job_columns[i * n + j])]);
    }
  }
  for (std::size_t p = 0; p < num_pairs; ++p) {
    for (std::size_t j = 0; j < n; ++j) {
      output.pair_allocation(p, j) =
          clip(solution.values[static_cast<std::size_t>(problem.pair_columns[p * n + j])]);
    }
  }
  output.status = AllocationStatus::kOptimal;
  return output;
}

std::vector<double> ProportionalThroughputs(const PolicyInput& input, const Matrix& throughput) {
  const double total = std::accumulate(input.gpu_counts.begin(), input.gpu_counts.end(), 0.0);
  std::vector<double> prop(input.num_jobs(), 0.0);
  for (std::size_t i = 0; i < input.num_jobs(); ++i) {
    for (std::size_t j = 0; j < input.num_types(); ++j) {
      prop[i] += throughput(i, j) * input.gpu_counts[j] / total;
    }
  }
  return prop;
}

Matrix IsolatedAllocation(const PolicyInput& input) {
  const std::size_t m = input.num_jobs();
  const std::size_t n = input.num_types();
  Matrix x(m, n);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      x(i, j) = input.gpu_counts[j] /
                (static_cast<double>(m) * static_cast<double>(input.jobs[i].scale_factor));
    }
    const double scale = std::max(1.0, x.RowSum(i));
    for (std::size_t j = 0; j < n; ++j) x(i, j) /= scale;
  }
  return x;
}

std::vector<double> IsolatedThroughputs(const PolicyInput& input, const Matrix& throughput) {
  const Matrix x = IsolatedAllocation(input);
  std::vector<double> iso(input.num_jobs(), 0.0);
  for (std::size_t i = 0; i < input.num_jobs(); ++i) {
    for (std::size_t j = 0; j < input.num_types(); ++j) iso[i] += throughput(i, j) * x(i, j);
  }
  return iso;
}

std::vector<std::vector<ThroughputTerm>> ThroughputTerms(const PolicyInput& input,
                                                         const BaseProblem& problem,
                                                         const Matrix& throughput, bool packed) {
  const std::size_t n = input.num_types();
  std::vector<std::vector<ThroughputTerm>> terms(input.num_jobs());
  for (std::size_t i = 0; i < input.num_jobs(); ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      if (throughput(i, j) > 0.0) {
        terms[i].push_back({problem.job_columns[i * n + j], throughput(i, j)});
      }
    }
    if (!packed) continue;
    for (int p : problem.pairs_of_job[i]) {
      const auto pair = static_cast<std::size_t>(p);
      const Matrix& member = static_cast<std::size_t>(input.pairs[pair].first) == i
                                 ? input.pair_throughput_first
                                 : input.pair_throughput_second;
      for (std::size_t j = 0; j < n; ++j) {
        if (member(pair, j) > 0.0) {
          terms[i].push_back({problem.pair_columns[pair * n + j], member(pair, j)});
        }
      }
    }
  }
  return terms;
}

double MaxThroughputAlone(const PolicyInput& input, const Matrix& throughput,
                          std::span<const int> pairs, std::size_t job) {
  TypeScratch<double> scratch(input.num_types());
  const std::span<double> best_per_type = scratch.values();
  for (std::size_t j = 0; j < input.num_types(); ++j) {
    double best = throughput(job, j);
    for (int p : pairs) {
      const auto pair = static_cast<std::size_t>(p);
      const Matrix& member = static_cast<std::size_t>(input.pairs[pair].first) == job
                                 ? input.pair_throughput_first
                                 : input.pair_throughput_second;
      best = std::max(best, member(pair, j));
    }
    best_per_type[j] = best;
  }
  return MaxThroughputAtSpeeds(input, best_per_type, job);
}

double MaxThroughputAtSpeeds(const PolicyInput& input, std::span<const double> best_per_type,
                             std::size_t job) {
  // (std::sort over the scratch sorts the same sequence as over a vector: ties end in the
  // same order.)
  const std::size_t n = input.num_types();
  TypeScratch<std::pair<double, double>> scratch(n);
  const std::span<std::pair<double, double>> speed_and_time = scratch.values();
  for (std::size_t j = 0; j < n; ++j) {
    speed_and_time[j] = {best_per_type[j],
                         input.gpu_counts[j] / static_cast<double>(input.jobs[job].scale_factor)};
  }
  std::sort(speed_and_time.begin(), speed_and_time.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  double time_left = 1.0;
  double total = 0.0;
  for (const auto& [speed, time] : speed_and_time) {
    const double used = std::min(time, time_left);
    total += speed * used;
    time_left -= used;
  }
  return total;
}

void ZeroUnrunnableCells(const PolicyInput& input, PolicyOutput& output) {
  for (std::size_t i = 0; i < output.allocation.rows(); ++i) {
    for (std::size_t j = 0; j < input.num_types(); ++j) {
      if (input.throughput(i, j) <= 0.0) output.allocation(i, j) = 0.0;
    }
  }
  for (std::size_t p = 0; p < output.pair_allocation.rows(); ++p) {
    for (std::size_t j = 0; j < input.num_types(); ++j) {
      if (input.pair_throughput_first(p, j) <= 0.0 && input.pair_throughput_second(p, j) <= 0.0) {
        output.pair_allocation(p, j) = 0.0;
      }
    }
  }
}

double EffectiveThroughput(const PolicyInput& input, const PolicyOutput& output, std::size_t job) {
  double total = 0.0;
  for (std::size_t j = 0; j < input.num_types(); ++j) {
    total += input.throughput(job, j) * output.allocation(job, j);
  }
  for (std::size_t p = 0; p < output.pair_allocation.rows(); ++p) {
    const JobPair& pair = input.pairs[p];
    for (std::size_t j = 0; j < input.num_types(); ++j) {
      if (static_cast<std::size_t>(pair.first) == job) {
        total += input.pair_throughput_first(p, j) * output.pair_allocation(p, j);
      } else if (static_cast<std::size_t>(pair.second) == job) {
        total += input.pair_throughput_second(p, j) * output.pair_allocation(p, j);
      }
    }
  }
  return total;
}

Matrix UnitThroughput(const PolicyInput& input, bool compat) {
  Matrix ones(input.num_jobs(), input.num_types(), 1.0);
  if (compat) return ones;
  for (std::size_t i = 0; i < input.num_jobs(); ++i) {
    for (std::size_t j = 0; j < input.num_types(); ++j) {
      if (input.throughput(i, j) <= 0.0) ones(i, j) = 0.0;
    }
  }
  return ones;
}

Result<Matrix> AverageThroughput(const PolicyInput& input, bool compat) {
  Matrix believed(input.num_jobs(), input.num_types());
  if (compat) {
    const int v100 = input.TypeIndex("v100");
    if (v100 < 0) {
      return Status::FailedPrecondition(
          "--compat gavel: the original's heterogeneity-agnostic policy reads the v100 column, "
          "and the cluster has no v100");
    }
    for (std::size_t i = 0; i < input.num_jobs(); ++i) {
      for (std::size_t j = 0; j < input.num_types(); ++j) {
        believed(i, j) = input.throughput(i, static_cast<std::size_t>(v100));
      }
    }
    return believed;
  }
  const std::vector<double> average = ProportionalThroughputs(input, input.throughput);
  for (std::size_t i = 0; i < input.num_jobs(); ++i) {
    for (std::size_t j = 0; j < input.num_types(); ++j) {
      believed(i, j) = input.throughput(i, j) > 0.0 ? average[i] : 0.0;
    }
  }
  return believed;
}

Result<Matrix> PlanningThroughput(Variant variant, const PolicyInput& input, bool compat) {
  if (variant == Variant::kAgnostic) return AverageThroughput(input, compat);
  return input.throughput;
}

namespace {

// Under --compat gavel every LP is solved to a central optimal point, as the original's
// interior-point solver (ECOS) does: when the optimum is not unique, a simplex vertex and the
// centre of the optimal face are different allocations, and the mechanism turns that
// difference into different schedules.
class CentralSolutionSolver final : public lp::Solver {
 public:
  explicit CentralSolutionSolver(std::shared_ptr<lp::Solver> inner) : inner_(std::move(inner)) {}
  std::string_view name() const override { return inner_->name(); }
  bool SupportsIntegers() const override { return inner_->SupportsIntegers(); }
  Result<std::unique_ptr<lp::Session>> Load(const lp::Model& model,
                                            const lp::SolveOptions& options) override {
    lp::SolveOptions central = options;
    central.algorithm = lp::Algorithm::kCentral;
    return inner_->Load(model, central);
  }

 private:
  std::shared_ptr<lp::Solver> inner_;
};

}  // namespace

std::shared_ptr<lp::Solver> LpSolverOf(const PolicyOptions& options) {
  std::shared_ptr<lp::Solver> solver = SimplexSolverOf(options);
  if (options.compat_gavel) return std::make_shared<CentralSolutionSolver>(std::move(solver));
  return solver;
}

std::shared_ptr<lp::Solver> SimplexSolverOf(const PolicyOptions& options) {
  std::shared_ptr<lp::Solver> solver =
      options.lp_solver ? options.lp_solver : std::shared_ptr<lp::Solver>(lp::MakeClpSolver());
  if (UsesColumnGeneration(options)) return lp::MakeColumnGenerationSolver(std::move(solver));
  return solver;
}

std::shared_ptr<lp::Solver> MilpSolverOf(const PolicyOptions& options) {
  return options.milp_solver ? options.milp_solver
                             : std::shared_ptr<lp::Solver>(lp::MakeCbcSolver());
}

std::shared_ptr<lp::Solver> MasterSolverOf(const PolicyOptions& options) {
  return options.lp_solver ? options.lp_solver : std::shared_ptr<lp::Solver>(lp::MakeClpSolver());
}

PolicySolvers::PolicySolvers(const PolicyOptions& options)
    : lp(LpSolverOf(options)),
      simplex(SimplexSolverOf(options)),
      milp(MilpSolverOf(options)),
      master(MasterSolverOf(options)) {}

Status UnexpectedOutcome(const char* policy, lp::Outcome outcome) {
  return Status::Internal(std::string(policy) + ": the LP ended " + lp::OutcomeName(outcome) +
                          ", which its formulation cannot produce");
}

void AppendOriginalBaseRows(const PolicyInput& input, int first_x, lp::InequalityLp& lp) {
  const int m = static_cast<int>(input.num_jobs());
  const int n = static_cast<int>(input.num_types());
  const auto var = [m, first_x](int i, int j) { return first_x + i + j * m; };
  for (int v = first_x; v < first_x + m * n; ++v) lp.AddRow({v}, {-1.0}, 0.0);
  std::vector<int> columns;
  std::vector<double> coefficients;
  for (int j = 0; j < n; ++j) {
    columns.clear();
    coefficients.clear();
    for (int i = 0; i < m; ++i) {
      columns.push_back(var(i, j));
      coefficients.push_back(input.jobs[static_cast<std::size_t>(i)].scale_factor);
    }
    lp.AddRow(columns, coefficients, input.gpu_counts[static_cast<std::size_t>(j)]);
  }
  for (int i = 0; i < m; ++i) {
    columns.clear();
    for (int j = 0; j < n; ++j) columns.push_back(var(i, j));
    lp.AddRow(columns, std::vector<double>(static_cast<std::size_t>(n), 1.0), 1.0);
  }
}

}  // namespace gavel::policy
