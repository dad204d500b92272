// Tests of hierarchical max-min fairness by water filling. The truth they check against:
//   * an independent progressive-filling reference written here (its own LPs, solved by GLPK,
//     with one LP per job instead of the policy's MILP to decide who is bottlenecked);
//   * hand-worked cases, derived in the comments;
//   * invariants every allocation obeys (capacity per type, time per job, entries in [0, 1]).
#include "gavel/policy/water_filling.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gavel/lp/glpk_solver.h"
#include "gavel/lp/model.h"
#include "gavel/policy/policy_test_support.h"

namespace gavel::policy {
namespace {

struct JobSpec {
  std::vector<double> throughput;  // per type, in the order of the types given
  int scale_factor = 1;
  double priority_weight = 1.0;
  int entity = -1;
};

// Types must be given sorted by name, as PolicyInput requires.
// Job k gets id k; entity e is named "entity<e>".
PolicyInput MakeInput(const std::vector<std::string>& types, const std::vector<double>& counts,
                      const std::vector<JobSpec>& jobs,
                      const std::vector<double>& entity_weights = {}) {
  std::vector<TestJob> test_jobs;
  for (std::size_t k = 0; k < jobs.size(); ++k) {
    test_jobs.push_back(TestJob{.id = k,
                                .scale_factor = jobs[k].scale_factor,
                                .throughput = jobs[k].throughput,
                                .priority_weight = jobs[k].priority_weight,
                                .entity = jobs[k].entity});
  }
  PolicyInput input = policy::MakeInput(types, counts, test_jobs);
  for (std::size_t e = 0; e < entity_weights.size(); ++e) {
    input.entities.push_back("entity" + std::to_string(e));
  }
  input.entity_weights = entity_weights;
  return input;
}

// Normalised effective throughput of every job under an allocation, computed from the
// definitions: NET_k = (Σ_j T'[k][j] X[k][j] + Σ_{p ∋ k} Σ_j T_k[p][j] X[p][j]) / prop_k with
// T' = T (perf, packed) or 1 where T > 0 (agnostic), prop_k = Σ_j T'[k][j] c_j / Σ c
// (perf, packed) or 1 (agnostic). 0 for a job that can run nowhere.
class Normaliser {
 public:
  Normaliser(const PolicyInput& input, Variant variant) : input_(input), variant_(variant) {
    const std::size_t m = input.num_jobs();
    const std::size_t n = input.num_types();
    double total = 0.0;
    for (double c : input.gpu_counts) total += c;
    believed_ = Matrix(m, n);
    prop_.assign(m, 0.0);
    for (std::size_t k = 0; k < m; ++k) {
      for (std::size_t j = 0; j < n; ++j) {
        const double t = input.throughput(k, j);
        believed_(k, j) = variant == Variant::kAgnostic ? (t > 0.0 ? 1.0 : 0.0) : t;
        prop_[k] += believed_(k, j) * input.gpu_counts[j] / total;
      }
      if (variant == Variant::kAgnostic && prop_[k] > 0.0) prop_[k] = 1.0;
    }
  }

  bool Runs(std::size_t k) const { return prop_[k] > 0.0; }

  // Coefficient of X[k][j] in NET_k.
  double Single(std::size_t k, std::size_t j) const { return believed_(k, j) / prop_[k]; }
  // Coefficient of X[p][j] in NET_k (0 when k is not in pair p).
  double Pair(std::size_t k, std::size_t p, std::size_t j) const {
    if (variant_ != Variant::kPacked) return 0.0;
    const JobPair& pair = input_.pairs[p];
    if (static_cast<std::size_t>(pair.first) == k) {
      return input_.pair_throughput_first(p, j) / prop_[k];
    }
    if (static_cast<std::size_t>(pair.second) == k) {
      return input_.pair_throughput_second(p, j) / prop_[k];
    }
    return 0.0;
  }

  double Net(const PolicyOutput& output, std::size_t k) const {
    if (!Runs(k)) return 0.0;
    double net = 0.0;
    for (std::size_t j = 0; j < input_.num_types(); ++j) {
      net += Single(k, j) * output.allocation(k, j);
      for (std::size_t p = 0; p < output.pair_allocation.rows(); ++p) {
        net += Pair(k, p, j) * output.pair_allocation(p, j);
      }
    }
    return net;
  }

 private:
  const PolicyInput& input_;
  Variant variant_;
  Matrix believed_;
  std::vector<double> prop_;
};

// Progressive filling, written independently of the policy: repeatedly maximise t with
// NET_k >= level_k + t · pw_k / s_k for the jobs still rising (NET_k >= level_k for the
// others), then solve "maximise NET_k" for each rising job with every job held at its level;
// those that cannot exceed their level are frozen. pw follows the entity reweighting of
// docs/policies.md (water filling, step 1). All LPs are solved by GLPK.
//
// "Cannot exceed" allows for GLPK's accuracy: the best NET_k is within 1e-7 (relative) of the
// level.
constexpr double kStuck = 1e-7;
struct Filling {
  std::vector<double> level;
  double first_level = 0.0;
};

class ProgressiveFilling {
 public:
  ProgressiveFilling(const PolicyInput& input, Variant variant)
      : input_(input),
        packed_(variant == Variant::kPacked),
        net_(input, variant),
        glpk_(lp::MakeGlpkSolver()) {}

  Filling Run() {
    const std::size_t m = input_.num_jobs();
    Filling result;
    result.level.assign(m, 0.0);
    std::vector<bool> frozen(m, false);
    for (std::size_t k = 0; k < m; ++k) frozen[k] = !net_.Runs(k);
    bool first = true;
    for (int round = 0; round < 100; ++round) {
      const std::vector<double> weights = Weights(frozen);
      std::vector<bool> rising(m, false);
      for (std::size_t k = 0; k < m; ++k) rising[k] = !frozen[k] && weights[k] > 0.0;
      if (std::none_of(rising.begin(), rising.end(), [](bool b) { return b; })) break;

      lp::Model model = Base();
      const int t = model.AddColumn(0.0, lp::kInfinity, 1.0);
      for (std::size_t k = 0; k < m; ++k) {
        if (!net_.Runs(k)) continue;
        const double rate = rising[k] ? weights[k] / input_.jobs[k].scale_factor : 0.0;
        AddNetRow(model, k, result.level[k], t, -rate);
      }
      const double gain = Maximise(model);
      if (first) result.first_level = gain;
      first = false;
      for (std::size_t k = 0; k < m; ++k) {
        if (rising[k]) result.level[k] += gain * weights[k] / input_.jobs[k].scale_factor;
      }

      int newly_frozen = 0;
      for (std::size_t k = 0; k < m; ++k) {
        if (!rising[k]) continue;
        lp::Model probe = Base();
        for (std::size_t l = 0; l < m; ++l) {
          if (net_.Runs(l)) AddNetRow(probe, l, result.level[l], -1, 0.0);
        }
        for (std::size_t j = 0; j < input_.num_types(); ++j) {
          probe.SetObjective(x_[k * input_.num_types() + j], net_.Single(k, j));
          for (std::size_t p = 0; p < num_pairs(); ++p) {
            const double coef = net_.Pair(k, p, j);
            if (coef != 0.0) probe.SetObjective(y_[p * input_.num_types() + j], coef);
          }
        }
        if (Maximise(probe) <= result.level[k] + kStuck * std::max(1.0, result.level[k])) {
          frozen[k] = true;
          ++newly_frozen;
        }
      }
      if (newly_frozen == 0) {
        ADD_FAILURE() << "progressive filling made no progress";
        break;
      }
    }
    return result;
  }

 private:
  std::size_t num_pairs() const { return packed_ ? input_.pairs.size() : 0; }

  std::vector<double> Weights(const std::vector<bool>& frozen) const {
    std::vector<double> total(input_.entities.size(), 0.0);
    for (std::size_t k = 0; k < input_.num_jobs(); ++k) {
      const int e = input_.jobs[k].entity;
      if (e >= 0 && !frozen[k]) {
        total[static_cast<std::size_t>(e)] += input_.jobs[k].priority_weight;
      }
    }
    std::vector<double> weights(input_.num_jobs(), 0.0);
    for (std::size_t k = 0; k < input_.num_jobs(); ++k) {
      if (frozen[k]) continue;
      const int e = input_.jobs[k].entity;
      weights[k] = e < 0 ? input_.jobs[k].priority_weight
                         : input_.entity_weights[static_cast<std::size_t>(e)] *
                               input_.jobs[k].priority_weight / total[static_cast<std::size_t>(e)];
    }
    return weights;
  }

  // X >= 0 for jobs and pairs; Σ s X <= c per type; Σ of a job's time (alone or in a pair) <= 1.
  lp::Model Base() {
    const std::size_t m = input_.num_jobs();
    const std::size_t n = input_.num_types();
    lp::Model model(lp::Sense::kMaximize);
    x_.clear();
    y_.clear();
    for (std::size_t i = 0; i < m * n; ++i) x_.push_back(model.AddColumn(0.0, lp::kInfinity));
    for (std::size_t i = 0; i < num_pairs() * n; ++i) {
      y_.push_back(model.AddColumn(0.0, lp::kInfinity));
    }
    for (std::size_t j = 0; j < n; ++j) {
      std::vector<int> cols;
      std::vector<double> coefs;
      for (std::size_t k = 0; k < m; ++k) {
        cols.push_back(x_[k * n + j]);
        coefs.push_back(input_.jobs[k].scale_factor);
      }
      for (std::size_t p = 0; p < num_pairs(); ++p) {
        cols.push_back(y_[p * n + j]);
        coefs.push_back(input_.jobs[static_cast<std::size_t>(input_.pairs[p].first)].scale_factor);
      }
      model.AddRow(-lp::kInfinity, input_.gpu_counts[j], cols, coefs);
    }
    for (std::size_t k = 0; k < m; ++k) {
      std::vector<int> cols;
      for (std::size_t j = 0; j < n; ++j) cols.push_back(x_[k * n + j]);
      for (std::size_t p = 0; p < num_pairs(); ++p) {
        const JobPair& pair = input_.pairs[p];
        const bool member =
            static_cast<std::size_t>(pair.first) == k || static_cast<std::size_t>(pair.second) == k;
        if (!member) continue;
        for (std::size_t j = 0; j < n; ++j) cols.push_back(y_[p * n + j]);
      }
      model.AddRow(-lp::kInfinity, 1.0, cols, std::vector<double>(cols.size(), 1.0));
    }
    return model;
  }

  // NET_k + extra_coef · x[extra] >= lower (no extra term when extra < 0).
  void AddNetRow(lp::Model& model, std::size_t k, double lower, int extra, double extra_coef) {
    const std::size_t n = input_.num_types();
    std::vector<int> cols;
    std::vector<double> coefs;
    for (std::size_t j = 0; j < n; ++j) {
      cols.push_back(x_[k * n + j]);
      coefs.push_back(net_.Single(k, j));
      for (std::size_t p = 0; p < num_pairs(); ++p) {
        const double coef = net_.Pair(k, p, j);
        if (coef == 0.0) continue;
        cols.push_back(y_[p * n + j]);
        coefs.push_back(coef);
      }
    }
    if (extra >= 0) {
      cols.push_back(extra);
      coefs.push_back(extra_coef);
    }
    model.AddRow(lower, lp::kInfinity, cols, coefs);
  }

  double Maximise(const lp::Model& model) {
    const Result<lp::Solution> solution = glpk_->Solve(model);
    EXPECT_TRUE(solution.ok()) << solution.status().ToString();
    if (!solution.ok()) return 0.0;
    EXPECT_EQ(solution->outcome, lp::Outcome::kOptimal);
    return solution->objective;
  }

  const PolicyInput& input_;
  bool packed_;
  Normaliser net_;
  std::unique_ptr<lp::Solver> glpk_;
  std::vector<int> x_, y_;
};

PolicyOutput AllocateOrDie(Variant variant, const PolicyInput& input,
                           const PolicyOptions& options = {}) {
  const std::unique_ptr<Policy> policy = MakeMaxMinFairnessWaterFilling(variant, options);
  Result<PolicyOutput> output = policy->Allocate(input);
  EXPECT_TRUE(output.ok()) << output.status().ToString();
  if (!output.ok()) return PolicyOutput{};
  return std::move(output).value();
}

bool Near(double actual, double expected) {
  return std::abs(actual - expected) <= 1e-6 * std::abs(expected) + 1e-8;
}

// Whether `t` is within 1% of one of `others`. A job almost equally fast on two types makes
// the problem ill-conditioned: moving its time between them costs it almost nothing, so a
// level broken by a solver's tolerance (1e-9) can free capacity worth 1e-5 to others, and
// neither the policy nor the reference resolves the answer to the test's precision.
bool NearlyTied(double t, const std::vector<double>& others) {
  return std::any_of(others.begin(), others.end(),
                     [&](double o) { return std::abs(t - o) < 0.01 * std::max(t, o); });
}

// Random instances: 3-6 jobs, 2-3 types of 1-4 GPUs, throughputs in [0.5, 10] with a quarter
// zeros (and 0 where a type has fewer GPUs than the job needs; none within 1% of another of
// the same job), scale factors 1-2, weights 1-3, optionally two weighted entities (some jobs
// in neither) and space-sharing pairs.
PolicyInput RandomInput(std::mt19937_64& rng, bool entities, bool pairs) {
  std::uniform_int_distribution<int> num_types(2, 3), num_jobs(3, 6), gpus(1, 4), scale(1, 2),
      entity(-1, 1);
  std::uniform_real_distribution<double> speed(0.5, 10.0), unit(0.0, 1.0), weight(1.0, 3.0),
      slowdown(0.3, 0.9);
  const std::vector<std::string> all_types = {"k80", "p100", "v100"};
  const auto n = static_cast<std::size_t>(num_types(rng));
  const std::vector<std::string> types(all_types.begin(),
                                       all_types.begin() + static_cast<std::ptrdiff_t>(n));
  std::vector<double> counts;
  for (std::size_t j = 0; j < n; ++j) counts.push_back(gpus(rng));
  std::vector<JobSpec> jobs(static_cast<std::size_t>(num_jobs(rng)));
  for (JobSpec& job : jobs) {
    job.scale_factor = scale(rng);
    job.priority_weight = unit(rng) < 0.5 ? 1.0 : weight(rng);
    for (std::size_t j = 0; j < n; ++j) {
      const bool runs = unit(rng) >= 0.25 && counts[j] >= job.scale_factor;
      double t = runs ? speed(rng) : 0.0;
      while (t > 0.0 && NearlyTied(t, job.throughput)) t = speed(rng);
      job.throughput.push_back(t);
    }
    if (entities) job.entity = entity(rng);
  }
  std::vector<double> entity_weights;
  if (entities) entity_weights = {weight(rng), weight(rng) / 2.0};
  PolicyInput input = MakeInput(types, counts, jobs, entity_weights);
  if (!pairs) return input;

  for (std::size_t a = 0; a < jobs.size(); ++a) {
    for (std::size_t b = a + 1; b < jobs.size(); ++b) {
      if (jobs[a].scale_factor != jobs[b].scale_factor) continue;
      std::vector<double> fa, fb;
      bool any = false;
      for (std::size_t j = 0; j < n; ++j) {
        const bool both = jobs[a].throughput[j] > 0.0 && jobs[b].throughput[j] > 0.0;
        fa.push_back(both ? jobs[a].throughput[j] * slowdown(rng) : 0.0);
        fb.push_back(both ? jobs[b].throughput[j] * slowdown(rng) : 0.0);
        any = any || both;
      }
      if (any) AddPair(input, static_cast<int>(a), static_cast<int>(b), fa, fb);
    }
  }
  return input;
}

void ExpectMatchesProgressiveFilling(Variant variant, bool entities, std::uint64_t seed,
                                     int instances,
                                     std::shared_ptr<lp::Solver> lp_solver = nullptr) {
  std::mt19937_64 rng(seed);
  for (int instance = 0; instance < instances; ++instance) {
    SCOPED_TRACE("instance " + std::to_string(instance));
    const PolicyInput input = RandomInput(rng, entities, variant == Variant::kPacked);
    PolicyOptions options;
    options.lp_solver = lp_solver;
    if (!lp_solver && instance % 4 == 3) {  // the answer must not depend on the solver
      options.lp_solver = lp::MakeGlpkSolver();
    }
    const PolicyOutput output = AllocateOrDie(variant, input, options);
    ExpectValidAllocation(input, output);
    EXPECT_EQ(output.status, AllocationStatus::kOptimal) << output.note;

    const Filling truth = ProgressiveFilling(input, variant).Run();
    const Normaliser net(input, variant);
    bool any_runs = false;
    for (std::size_t k = 0; k < input.num_jobs(); ++k) any_runs = any_runs || net.Runs(k);
    EXPECT_EQ(output.objective.has_value(), any_runs);
    if (output.objective.has_value()) {
      EXPECT_TRUE(Near(*output.objective, truth.first_level))
          << *output.objective << " vs " << truth.first_level;
    }
    for (std::size_t k = 0; k < input.num_jobs(); ++k) {
      EXPECT_TRUE(Near(net.Net(output, k), truth.level[k]))
          << "job " << k << ": " << net.Net(output, k) << " vs " << truth.level[k];
      if (!net.Runs(k)) {
        EXPECT_EQ(output.allocation.RowSum(k), 0.0) << "job " << k;
      }
    }
  }
}

TEST(WaterFillingTest, PerfIsLeximinOptimal) {
  ExpectMatchesProgressiveFilling(Variant::kPerf, /*entities=*/false, 11, 500);
}

TEST(WaterFillingTest, AgnosticIsLeximinOptimalOverTimeShares) {
  ExpectMatchesProgressiveFilling(Variant::kAgnostic, /*entities=*/false, 12, 500);
}

TEST(WaterFillingTest, PackedIsLeximinOptimal) {
  ExpectMatchesProgressiveFilling(Variant::kPacked, /*entities=*/false, 13, 300);
}

TEST(WaterFillingTest, EntityReweightingMatchesProgressiveFilling) {
  ExpectMatchesProgressiveFilling(Variant::kPerf, /*entities=*/true, 14, 500);
  ExpectMatchesProgressiveFilling(Variant::kPacked, /*entities=*/true, 15, 200);
}

// Clp with the row multipliers of every answer withheld, so that the policy must find the
// stuck jobs with its sum test alone.
class WithoutMultipliers final : public lp::Solver {
 public:
  std::string_view name() const override { return "clp-without-multipliers"; }
  bool SupportsIntegers() const override { return false; }
  Result<std::unique_ptr<lp::Session>> Load(const lp::Model& model,
                                            const lp::SolveOptions& options) override {
    GAVEL_ASSIGN_OR_RETURN(std::unique_ptr<lp::Session> inner, clp_->Load(model, options));
    return std::unique_ptr<lp::Session>(std::make_unique<Session>(std::move(inner)));
  }

 private:
  class Session final : public ForwardingSession {
   public:
    using ForwardingSession::ForwardingSession;
    Result<lp::Solution> Solve() override {
      GAVEL_ASSIGN_OR_RETURN(lp::Solution solution, ForwardingSession::Solve());
      solution.row_duals.clear();
      return solution;
    }
  };

  std::unique_ptr<lp::Solver> clp_ = lp::MakeClpSolver();
};

TEST(WaterFillingTest, FindsStuckJobsWithoutMultipliers) {
  const auto solver = std::make_shared<WithoutMultipliers>();
  ExpectMatchesProgressiveFilling(Variant::kPerf, /*entities=*/true, 16, 150, solver);
  ExpectMatchesProgressiveFilling(Variant::kPacked, /*entities=*/false, 17, 60, solver);
}

TEST(WaterFillingTest, PackedLevelIsAtLeastPerfLevel) {
  // Space sharing only adds options: every perf allocation is a packed one with no pairs, so
  // the packed max-min level (its first LP) cannot be lower.
  std::mt19937_64 rng(18);
  for (int instance = 0; instance < 100; ++instance) {
    SCOPED_TRACE("instance " + std::to_string(instance));
    const PolicyInput input = RandomInput(rng, /*entities=*/false, /*pairs=*/true);
    const PolicyOutput packed = AllocateOrDie(Variant::kPacked, input);
    const PolicyOutput perf = AllocateOrDie(Variant::kPerf, input);
    ExpectValidAllocation(input, packed);
    ASSERT_TRUE(packed.objective.has_value() && perf.objective.has_value());
    EXPECT_GE(*packed.objective, *perf.objective * (1.0 - 1e-9) - 1e-9);
    // The same from the allocations themselves: min over running jobs of NET_k · s_k / w_k.
    const Normaliser packed_net(input, Variant::kPacked), perf_net(input, Variant::kPerf);
    double packed_min = lp::kInfinity, perf_min = lp::kInfinity;
    for (std::size_t k = 0; k < input.num_jobs(); ++k) {
      if (!perf_net.Runs(k)) continue;
      const double scale = input.jobs[k].scale_factor / input.jobs[k].priority_weight;
      packed_min = std::min(packed_min, packed_net.Net(packed, k) * scale);
      perf_min = std::min(perf_min, perf_net.Net(perf, k) * scale);
    }
    EXPECT_GE(packed_min, perf_min - 1e-6);
  }
}

double JobTime(const PolicyOutput& output, std::size_t k) { return output.allocation.RowSum(k); }

TEST(WaterFillingTest, EntitiesSplitOneGpuByTheirWeights) {
  // One GPU; entity A (weight 2) has one job, entity B (weight 1) three; all jobs equal
  // (T = 1, s = 1, w = 1), so NET_k = X_k. Job weights: a = 2, b_i = 1/3. The first LP
  // maximises t with X_a >= 2t, X_bi >= t/3: capacity 2t + t <= 1 gives t = 1/3, so
  // X_a = 2/3 and X_bi = 1/9. The GPU is full, so every job is bottlenecked: A gets 2/3, B
  // 1/3, the entities' 2:1.
  const PolicyInput input = MakeInput(
      {"v100"}, {1.0},
      {{{1.0}, 1, 1.0, 0}, {{1.0}, 1, 1.0, 1}, {{1.0}, 1, 1.0, 1}, {{1.0}, 1, 1.0, 1}}, {2.0, 1.0});
  const PolicyOutput output = AllocateOrDie(Variant::kPerf, input);
  ExpectValidAllocation(input, output);
  EXPECT_NEAR(JobTime(output, 0), 2.0 / 3.0, 1e-7);
  for (std::size_t k = 1; k < 4; ++k) EXPECT_NEAR(JobTime(output, k), 1.0 / 9.0, 1e-7);
  ASSERT_TRUE(output.objective.has_value());
  EXPECT_NEAR(*output.objective, 1.0 / 3.0, 1e-7);
}

TEST(WaterFillingTest, AnEntityCappedByItsJobsLeavesTheRestToTheOther) {
  // As above with two GPUs. First LP: X_a = 2t <= 1 binds first (capacity 3t <= 2 allows
  // t = 2/3), so t = 1/2: X_a = 1, X_bi = 1/6, 0.5 GPU left; a cannot rise and is frozen.
  // Second LP: X_bi = 1/6 + t/3 with 1 + 3 X_bi <= 2, so t = 1/2 and X_bi = 1/3.
  const PolicyInput input = MakeInput(
      {"v100"}, {2.0},
      {{{1.0}, 1, 1.0, 0}, {{1.0}, 1, 1.0, 1}, {{1.0}, 1, 1.0, 1}, {{1.0}, 1, 1.0, 1}}, {2.0, 1.0});
  const PolicyOutput output = AllocateOrDie(Variant::kPerf, input);
  ExpectValidAllocation(input, output);
  EXPECT_NEAR(JobTime(output, 0), 1.0, 1e-7);
  for (std::size_t k = 1; k < 4; ++k) EXPECT_NEAR(JobTime(output, k), 1.0 / 3.0, 1e-7);
  EXPECT_NEAR(*output.objective, 0.5, 1e-7);
}

TEST(WaterFillingTest, AFrozenJobsWeightPassesToItsSiblings) {
  // One type of 5 GPUs, every job on 2 GPUs with T = 1 (NET_k = X_k; a job's level rises by
  // t · pw / 2). Entity A (weight 0.5): job a. Entity B (weight 1): b1 (w = 3), b2 (w = 1).
  // First LP, pw = (0.5, 0.75, 0.25): X = (t/4, 3t/8, t/8); X_b1 <= 1 binds at t = 8/3
  // before capacity 2 · 3t/4 <= 5 (t = 10/3): X = (2/3, 1, 1/3), 4 GPUs used; b1 is frozen.
  // Second LP: b2 is B's only rising job, so pw = (0.5, -, 1): X_a = 2/3 + t/4,
  // X_b2 = 1/3 + t/2, capacity 2 (2 + 3t/4) <= 5 gives t = 2/3: X = (5/6, 1, 2/3), full.
  // Entity totals 5/6 : 5/3 = 0.5 : 1. Had b2 kept pw = 1/4, the answer would be
  // X = (1, 1, 1/2) instead.
  const PolicyInput input = MakeInput(
      {"v100"}, {5.0}, {{{1.0}, 2, 1.0, 0}, {{1.0}, 2, 3.0, 1}, {{1.0}, 2, 1.0, 1}}, {0.5, 1.0});
  // Levels stay above 0.1 and t below the original's M = 2 (T s / prop), so the original's
  // MILP and cap change nothing here: --compat gavel agrees.
  PolicyOptions compat;
  compat.compat_gavel = true;
  for (const PolicyOptions& options : {PolicyOptions{}, compat}) {
    const PolicyOutput output = AllocateOrDie(Variant::kPerf, input, options);
    ExpectValidAllocation(input, output);
    EXPECT_NEAR(JobTime(output, 0), 5.0 / 6.0, 1e-7);
    EXPECT_NEAR(JobTime(output, 1), 1.0, 1e-7);
    EXPECT_NEAR(JobTime(output, 2), 2.0 / 3.0, 1e-7);
    EXPECT_NEAR(*output.objective, 8.0 / 3.0, 1e-7);
  }

  // Without entities the weights stay (1, 3, 1): first LP X = (t/2, 3t/2, t/2), b1 caps at
  // t = 2/3: X = (1/3, 1, 1/3); then a and b2 rise together, 2 (1 + 2/3 + t) <= 5 gives
  // t = 5/6 and X_a = X_b2 = 1/3 + 5/12 = 3/4.
  const PolicyInput flat =
      MakeInput({"v100"}, {5.0}, {{{1.0}, 2, 1.0}, {{1.0}, 2, 3.0}, {{1.0}, 2, 1.0}});
  const PolicyOutput flat_output = AllocateOrDie(Variant::kPerf, flat);
  EXPECT_NEAR(JobTime(flat_output, 0), 0.75, 1e-7);
  EXPECT_NEAR(JobTime(flat_output, 1), 1.0, 1e-7);
  EXPECT_NEAR(JobTime(flat_output, 2), 0.75, 1e-7);
}

TEST(WaterFillingTest, IdenticalJobsShareEqually) {
  // Seven identical jobs (2 steps/s on k80, 3 on v100) on one k80 and two v100s; all are
  // stuck at once (a degenerate optimum, where the LP's multipliers mark only some of them).
  // Agnostic: 3 GPUs of time shared by 7, 3/7 each. Perf: NET equal means equal steps/s, and
  // the cluster gives 2 + 2 · 3 = 8 steps/s in all, 8/7 each.
  const std::vector<JobSpec> jobs(7, JobSpec{{2.0, 3.0}});
  const PolicyInput input = MakeInput({"k80", "v100"}, {1.0, 2.0}, jobs);
  const PolicyOutput agnostic = AllocateOrDie(Variant::kAgnostic, input);
  const PolicyOutput perf = AllocateOrDie(Variant::kPerf, input);
  ExpectValidAllocation(input, agnostic);
  ExpectValidAllocation(input, perf);
  for (std::size_t k = 0; k < jobs.size(); ++k) {
    EXPECT_NEAR(JobTime(agnostic, k), 3.0 / 7.0, 1e-7) << "job " << k;
    const double steps = 2.0 * perf.allocation(k, 0) + 3.0 * perf.allocation(k, 1);
    EXPECT_NEAR(steps, 8.0 / 7.0, 1e-7) << "job " << k;
  }
}

TEST(WaterFillingTest, PerfUsesSpeedUpsThatAgnosticIgnores) {
  // One k80 and one v100. j0 runs at 1 step/s on k80 and 4 on v100; j1 and j2 at 1 on both.
  // Agnostic: NET = time, three jobs on two GPUs: 2/3 each, and nobody can rise.
  // Perf: prop_0 = (1 + 4)/2 = 2.5, prop_1 = prop_2 = 1, so NET_0 = 0.4 X_0k + 1.6 X_0v and
  // NET_1,2 = their time. j0 is 4x as efficient on v100, so at the optimum it uses only
  // v100: with level L, X_0v = L / 1.6 and j1, j2 need 2L of the remaining 2 − L/1.6 GPU
  // time: L = 2 / 2.625 = 16/21, X_0v = 10/21. Both GPUs are then full and every job is
  // bottlenecked. j0's throughput is 16/21 · 2.5 = 40/21 steps/s.
  const PolicyInput input =
      MakeInput({"k80", "v100"}, {1.0, 1.0}, {{{1.0, 4.0}}, {{1.0, 1.0}}, {{1.0, 1.0}}});
  const PolicyOutput agnostic = AllocateOrDie(Variant::kAgnostic, input);
  ExpectValidAllocation(input, agnostic);
  for (std::size_t k = 0; k < 3; ++k) EXPECT_NEAR(JobTime(agnostic, k), 2.0 / 3.0, 1e-7);
  EXPECT_NEAR(*agnostic.objective, 2.0 / 3.0, 1e-7);

  const PolicyOutput perf = AllocateOrDie(Variant::kPerf, input);
  ExpectValidAllocation(input, perf);
  EXPECT_NEAR(*perf.objective, 16.0 / 21.0, 1e-7);
  EXPECT_NEAR(perf.allocation(0, 0), 0.0, 1e-7);
  EXPECT_NEAR(perf.allocation(0, 1), 10.0 / 21.0, 1e-7);
  EXPECT_NEAR(JobTime(perf, 1), 16.0 / 21.0, 1e-7);
  EXPECT_NEAR(JobTime(perf, 2), 16.0 / 21.0, 1e-7);
}

TEST(WaterFillingTest, JobsThatCannotRunAreLeftOut) {
  // j1 runs nowhere. It gets nothing and does not hold the others' level at 0: j0 and j2
  // share the one GPU, 1/2 each (agnostic, and perf where both have T = 2 so NET = time).
  const PolicyInput input = MakeInput({"v100"}, {1.0}, {{{2.0}}, {{0.0}}, {{2.0}}});
  for (Variant variant : {Variant::kAgnostic, Variant::kPerf}) {
    const PolicyOutput output = AllocateOrDie(variant, input);
    ExpectValidAllocation(input, output);
    EXPECT_NEAR(JobTime(output, 0), 0.5, 1e-7);
    EXPECT_EQ(JobTime(output, 1), 0.0);
    EXPECT_NEAR(JobTime(output, 2), 0.5, 1e-7);
    EXPECT_NEAR(*output.objective, 0.5, 1e-7);
  }
  // With no job able to run there is nothing to solve: an empty allocation.
  const PolicyInput none = MakeInput({"v100"}, {1.0}, {{{0.0}}});
  const PolicyOutput output = AllocateOrDie(Variant::kPerf, none);
  EXPECT_EQ(JobTime(output, 0), 0.0);
  EXPECT_FALSE(output.objective.has_value());
  EXPECT_EQ(AllocateOrDie(Variant::kPerf, MakeInput({"v100"}, {1.0}, {})).allocation.rows(), 0u);
}

// Types a and b, one GPU each. Jobs 0..29 run only on a (T = (1, 0), prop = 1/2, so
// NET = 2 X_a); job 30 runs on both (T = (1, 1), prop = 1). Max-min: the 30 share a, X_a =
// 1/30 and NET = 1/15 each; job 30 needs nothing of a. Only job 30 can rise: it gets b
// whole, NET_30 = 1.
PolicyInput ThirtyOneJobs() {
  std::vector<JobSpec> jobs(30, JobSpec{{1.0, 0.0}});
  jobs.push_back(JobSpec{{1.0, 1.0}});
  return MakeInput({"a", "b"}, {1.0, 1.0}, jobs);
}

TEST(WaterFillingTest, LowLevelsStillWaterFill) {
  const PolicyInput input = ThirtyOneJobs();
  const PolicyOutput output = AllocateOrDie(Variant::kPerf, input);
  ExpectValidAllocation(input, output);
  EXPECT_EQ(output.status, AllocationStatus::kOptimal);
  EXPECT_NEAR(*output.objective, 1.0 / 15.0, 1e-7);
  for (std::size_t k = 0; k < 30; ++k) EXPECT_NEAR(output.allocation(k, 0), 1.0 / 30.0, 1e-7);
  EXPECT_NEAR(output.allocation(30, 0), 0.0, 1e-7);
  EXPECT_NEAR(output.allocation(30, 1), 1.0, 1e-7);
}

TEST(WaterFillingTest, CompatStopsWhenLevelsAreBelowOneTenth) {
  // The original's MILP also demands NET_k <= 1.0001 level_k − 1e-5 of a job that cannot
  // rise, which contradicts NET_k >= level_k when level_k < 0.1: the MILP is infeasible, so
  // every job is frozen after the first LP and job 30 keeps only what that LP gave it (at
  // least the common level 1/15).
  const PolicyInput input = ThirtyOneJobs();
  PolicyOptions options;
  options.compat_gavel = true;
  const PolicyOutput output = AllocateOrDie(Variant::kPerf, input, options);
  ExpectValidAllocation(input, output);
  EXPECT_EQ(output.status, AllocationStatus::kFallback);
  EXPECT_NE(output.note.find("MILP"), std::string::npos) << output.note;
  EXPECT_NEAR(*output.objective, 1.0 / 15.0, 1e-7);
  const Normaliser net(input, Variant::kPerf);
  for (std::size_t k = 0; k < 30; ++k) EXPECT_NEAR(net.Net(output, k), 1.0 / 15.0, 1e-7);
  EXPECT_GE(net.Net(output, 30), 1.0 / 15.0 - 1e-7);
}

TEST(WaterFillingTest, LevelsAboveTheOriginalsBigMStillRise) {
  // One type, 4 GPUs, T = 1, s = 1 (NET = time, M = max T s / prop = 1). Entity A (weight 1):
  // job a; entity B (weight 1): three jobs, pw = 1/3 each. First LP: X_a = t <= 1 binds
  // before capacity 2t <= 4, so t = 1: a = 1 (frozen), b_i = 1/3. Second LP: X_bi = 1/3 +
  // t/3 <= 1 and capacity 1 + 1 + t <= 4 both give t = 2: every job gets a whole GPU.
  const PolicyInput input = MakeInput(
      {"v100"}, {4.0},
      {{{1.0}, 1, 1.0, 0}, {{1.0}, 1, 1.0, 1}, {{1.0}, 1, 1.0, 1}, {{1.0}, 1, 1.0, 1}}, {1.0, 1.0});
  const PolicyOutput output = AllocateOrDie(Variant::kPerf, input);
  ExpectValidAllocation(input, output);
  for (std::size_t k = 0; k < 4; ++k) EXPECT_NEAR(JobTime(output, k), 1.0, 1e-7);

  // The original's objective is min over all jobs with M added for frozen ones, so its
  // second LP stops at t = M = 1 (b_i >= 2/3); the MILP then finds every b_i can still rise,
  // freezes none, and the loop ends. Only the guaranteed part is certain here.
  PolicyOptions options;
  options.compat_gavel = true;
  const PolicyOutput compat = AllocateOrDie(Variant::kPerf, input, options);
  ExpectValidAllocation(input, compat);
  EXPECT_NEAR(JobTime(compat, 0), 1.0, 1e-7);
  for (std::size_t k = 1; k < 4; ++k) EXPECT_GE(JobTime(compat, k), 2.0 / 3.0 - 1e-7);
}

TEST(WaterFillingTest, CompatAgnosticBelievesEveryJobRunsEverywhere) {
  // The original's T ≡ 1 gives j1 (which runs nowhere) an equal share of the GPU: the three
  // jobs get 1/3 each; by default j1 is left out and the others get 1/2.
  const PolicyInput input = MakeInput({"v100"}, {1.0}, {{{2.0}}, {{0.0}}, {{2.0}}});
  PolicyOptions options;
  options.compat_gavel = true;
  const PolicyOutput output = AllocateOrDie(Variant::kAgnostic, input, options);
  ExpectValidAllocation(input, output);
  for (std::size_t k = 0; k < 3; ++k) EXPECT_NEAR(JobTime(output, k), 1.0 / 3.0, 1e-7);
}

TEST(WaterFillingTest, RepeatedCallsGiveTheSameAnswer) {
  // The policy is stateless across calls: a second Allocate on the same object repeats the
  // first exactly.
  std::mt19937_64 rng(19);
  const PolicyInput input = RandomInput(rng, /*entities=*/true, /*pairs=*/false);
  const std::unique_ptr<Policy> policy = MakeMaxMinFairnessWaterFilling(Variant::kPerf, {});
  const Result<PolicyOutput> first = policy->Allocate(input);
  const Result<PolicyOutput> second = policy->Allocate(input);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->allocation.data(), second->allocation.data());
}

}  // namespace
}  // namespace gavel::policy
