#include "gavel/policy/water_filling.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gavel/policy/common.h"
#include "gavel/policy/fast_path.h"
#include "gavel/policy/packed_classes.h"

// Formulation (docs/policies.md). Job k's normalised effective throughput is
//   NET_k(X) = (Σ_j T[k][j] X[k][j] + Σ_{p ∋ k} Σ_j T_k[p][j] X[p][j]) / prop_k,
// pw_k its weight this iteration, rate_k = pw_k / s_k, and level_k its level so far (0 at
// first; a frozen job keeps its level). A job is active when it is neither frozen nor of zero
// weight. Each iteration:
//
//   LP  maximise t  s.t.  base constraints,  NET_k >= level_k + rate_k t   (active jobs)
//                                            NET_k >= level_k              (the others)
//       then level_k += rate_k t, and the active jobs that cannot rise any further while
//       every job keeps its level are frozen.
//
// The loop ends when no job is active or an iteration froze none. The answer is the last
// LP's X; the objective, the first LP's t (the weighted max-min level).
//
// Which jobs cannot rise (default). By LP duality, the optimal multipliers μ_k >= 0 on the
// job rows give Σ_k μ_k (NET_k(X) − level_k) <= 0 for every X meeting the base constraints
// (levels already raised), so while every job keeps its level a job with μ_k > 0 cannot
// exceed it; and Σ_k μ_k rate_k = 1, so some job has one. A degenerate optimum can leave a
// stuck job at μ_k = 0: it stays active, and when the next LP cannot raise t, the remaining
// jobs are also put to "maximise the sum of their NETs with every level kept": one that ends
// above its level can rise; if none does, none can (one rising would raise the sum), so all
// are frozen; otherwise the question is asked again of those that did not. That test also
// serves when the solver gives no multipliers.
//
// Under --compat gavel, the original's test instead
// (scheduler/policies/max_min_fairness_water_filling.py): a MILP maximising Σ z_k over
// binaries z_k, with big-M rows that let z_k = 1 only when job k reaches 1.0001 · level_k
// while the others keep their levels, and that demand NET_k <= 1.0001 · level_k − 1e-5 when
// z_k = 0; a MILP without an optimum freezes every active job.
//
// The LP stays loaded in one solver session, written over cumulative clocks so that an
// iteration changes only the rows of newly frozen jobs and of reweighted entities (LevelLp). Solver
// tolerances: where a job runs almost equally fast on two types, breaking its level by the
// solver's feasibility tolerance (1e-7) lets it move time between the types and free far more
// capacity for the others, so an answer that leans on that raises levels past what is
// feasible and later LPs fail. Every LP answer is therefore checked, and solved again (from
// its basis, then in a fresh session) when it breaks a row by more than 1e-9.
//
// On the fast path (docs/policies.md, "Fast paths"): over lazy pair columns, NET_k is a
// column of its own and the level rows read it (LevelLp::through_net_columns_); and where
// jobs stop at their own caps, one LP checks a predicted run of several freezes instead of
// one LP per freeze (TryCapFreezes, with the proof that the result is the same).

namespace gavel::policy {
namespace {

using Terms = std::vector<std::pair<int, double>>;

// The most an LP answer may break a row or a level by to be trusted (see the top), at first;
// and the most that may ever be tolerated.
constexpr double kCleanViolation = 1e-9;
constexpr double kMostTolerated = 1e-6;
// A multiplier above this marks a job that cannot rise. The multipliers sum (weighted by
// rate) to 1, so those of binding jobs are far above it; a stuck job below it is caught by a
// later iteration.
constexpr double kBindingMultiplier = 1e-7;
// A job counts as able to rise only if it can exceed its level by this much (relative, and
// absolute below 1): smaller rises are within what the solvers resolve.
constexpr double kMinimumRise = 1e-7;
// The original's slack and epsilon in its bottleneck MILP (compat only).
constexpr double kCompatRiseFactor = 1.0001;
constexpr double kCompatEpsilon = 1e-5;

// What every iteration shares.
struct Formulation {
  BaseProblem base;
  std::vector<Terms> net;      // NET_k as (column, coefficient); empty for excluded jobs
  std::vector<bool> included;  // the job can run somewhere (prop_k > 0)
  double big_m = 0.0;          // the original's M = max_k s_k · max coefficient of NET_k
};

// Where the filling stands.
struct Levels {
  Levels(std::size_t m, std::size_t num_entities)
      : level(m, 0.0), frozen(m, false), rate(m, 0.0), active(m), share(num_entities, 0.0) {}
  std::vector<double> level;
  std::vector<bool> frozen;
  std::vector<double> rate;  // pw_k / s_k this iteration for active jobs, 0 for the others
  std::vector<bool> active;  // included, not frozen, weight > 0
  // Per entity, W_e / Σ_{unfrozen included l in e} w_l (0 when none is left): a job's rate is
  // its own w_k / s_k times its entity's share.
  std::vector<double> share;
};

// Σ coefficient · value over `terms`.
double Evaluate(const Terms& terms, std::span<const double> values) {
  double total = 0.0;
  for (const auto& [col, coef] : terms) total += coef * values[static_cast<std::size_t>(col)];
  return total;
}

std::vector<int> ColumnsOf(const Terms& terms) {
  std::vector<int> cols;
  for (const auto& term : terms) cols.push_back(term.first);
  return cols;
}

std::vector<double> CoefficientsOf(const Terms& terms) {
  std::vector<double> coefs;
  for (const auto& term : terms) coefs.push_back(term.second);
  return coefs;
}

// Sets each job's rate from its weight pw_k for this iteration (the original's 'fairness'
// reweighting): a job of entity e gets W_e · w_k / Σ_{unfrozen included l in e} w_l while
// unfrozen and 0 once frozen; a job without an entity keeps w_k; an excluded job gets 0.
// Returns whether any job is active.
bool UpdateWeights(const PolicyInput& input, const std::vector<bool>& included, Levels& s) {
  const std::size_t m = input.num_jobs();
  std::vector<double> entity_total(input.entities.size(), 0.0);
  for (std::size_t k = 0; k < m; ++k) {
    const int e = input.jobs[k].entity;
    if (e >= 0 && included[k] && !s.frozen[k]) {
      entity_total[static_cast<std::size_t>(e)] += input.jobs[k].priority_weight;
    }
  }
  for (std::size_t e = 0; e < entity_total.size(); ++e) {
    s.share[e] = entity_total[e] > 0.0 ? input.entity_weights[e] / entity_total[e] : 0.0;
  }
  bool any_active = false;
  for (std::size_t k = 0; k < m; ++k) {
    const PolicyJob& job = input.jobs[k];
    double weight = 0.0;
    if (included[k] && !s.frozen[k]) {
      weight = job.priority_weight;
      if (job.entity >= 0) weight *= s.share[static_cast<std::size_t>(job.entity)];
    }
    s.active[k] = weight > 0.0;
    s.rate[k] = weight / job.scale_factor;
    any_active = any_active || s.active[k];
  }
  return any_active;
}

// Raises every job's level by rate_k · gain; returns whether some job rose by more than the
// solvers resolve (kMinimumRise).
bool RaiseLevels(double gain, Levels& s) {
  bool progress = false;
  for (std::size_t k = 0; k < s.level.size(); ++k) {
    const double rise = gain * s.rate[k];
    progress = progress || rise > kMinimumRise * std::max(1.0, s.level[k]);
    s.level[k] += rise;
  }
  return progress;
}

struct Raised {
  lp::Solution solution;
  double gain = 0.0;  // t, when the solution is optimal
};

// The LP of every iteration, kept loaded in one solver session. Refers to the Formulation it
// was loaded from, which must outlive it.
//
// It is written over clocks rather than each iteration's gain t, so that an iteration changes
// only the rows of the jobs just frozen. The global clock τ grows by t; entity e's clock σ_e
// by share_e · t, through the link row σ_e − share_e τ = σ_e⁰ − share_e τ⁰ (⁰: before the
// solve); an active job's level row reads NET_k − b_k c >= level_k − b_k c⁰, where
// b_k = w_k / s_k and c is its entity's clock (τ for a job without one). When level_k then
// grows by b_k (c − c⁰) = rate_k t and the clocks advance, the row's bound stays the same;
// a freeze that changes an entity's share replaces only its link row.
class LevelLp {
 public:
  static Result<LevelLp> Load(const PolicyInput& input, const Formulation& f, lp::Solver& solver) {
    LevelLp lp(input, f, solver);
    GAVEL_RETURN_IF_ERROR(lp.Reload());
    return lp;
  }

  double Net(std::size_t k, const lp::Solution& solution) const {
    return Evaluate(f_->net[k], solution.values);
  }

  // maximise t s.t. NET_k >= level_k + rate_k t for active jobs, NET_k >= level_k for the
  // others, 0 <= t <= t_cap. Advances the clocks by the gain t.
  // `retry` false: an answer that is not clean or not optimal is returned as it is (for a
  // trial the caller can do without).
  Result<Raised> Raise(const Levels& s, double t_cap, bool retry = true) {
    const auto required = [&](std::size_t k, const lp::Solution& solution) {
      return s.level[k] + s.rate[k] * (solution.values[static_cast<std::size_t>(tau_)] - clock_);
    };
    const auto set_up = [&] {
      SetLevels(s);
      session_->SetColumnBounds(tau_, clock_, clock_ + t_cap);
    };
    lp::Solution solution;
    if (retry) {
      GAVEL_ASSIGN_OR_RETURN(solution, SolveWithRetry(required, set_up));
    } else {
      set_up();
      GAVEL_ASSIGN_OR_RETURN(solution, session_->Solve());
      if (solution.outcome == lp::Outcome::kOptimal && !Clean(solution, required)) {
        solution.outcome = lp::Outcome::kLimitReached;  // (not trusted: the trial fails)
      }
    }
    double gain = 0.0;
    if (solution.outcome == lp::Outcome::kOptimal) {
      gain = std::max(0.0, solution.values[static_cast<std::size_t>(tau_)] - clock_);
      clock_ += gain;
      for (std::size_t e = 0; e < entity_clock_.size(); ++e) entity_clock_[e] += s.share[e] * gain;
    }
    return Raised{std::move(solution), gain};
  }

  // The clocks (τ, then σ_e per entity), to move them along a predicted filling and back.
  struct Clocks {
    double global = 0.0;
    std::vector<double> entity;
  };
  Clocks clocks() const { return Clocks{clock_, entity_clock_}; }
  void set_clocks(const Clocks& clocks) {
    clock_ = clocks.global;
    entity_clock_ = clocks.entity;
  }

  // U_k, an upper bound on NET_k over the base constraints alone (kInfinity when none is
  // found): from a base row Σ a_c x_c <= u with a_c >= 0 over columns >= 0 that holds every
  // column of NET_k (a job's, or a class's, time row), U_k = u · max_c g_c / a_c.
  std::vector<double> Caps() const {
    const lp::Model& base = f_->base.model;
    const auto num_rows = static_cast<std::size_t>(base.num_rows());
    std::vector<bool> packing(num_rows, false);
    for (std::size_t row = 0; row < num_rows; ++row) {
      bool ok = base.row_upper()[row] < lp::kInfinity;
      for (int e = base.row_start()[row]; ok && e < base.row_start()[row + 1]; ++e) {
        const auto entry = static_cast<std::size_t>(e);
        const auto column = static_cast<std::size_t>(base.entry_column()[entry]);
        ok = base.entry_value()[entry] >= 0.0 && base.columns()[column].lower >= 0.0;
      }
      packing[row] = ok;
    }
    std::vector<double> caps(f_->net.size(), lp::kInfinity);
    std::vector<double> in_row(static_cast<std::size_t>(base.num_columns()), 0.0);
    for (std::size_t k = 0; k < f_->net.size(); ++k) {
      if (!f_->included[k] || f_->net[k].empty()) continue;
      const auto first = static_cast<std::size_t>(f_->net[k].front().first);
      for (std::size_t e = by_column_.start[first]; e < by_column_.start[first + 1]; ++e) {
        const auto row = static_cast<std::size_t>(by_column_.entries[e].first);
        if (row >= num_rows || !packing[row]) continue;
        const auto begin = static_cast<std::size_t>(base.row_start()[row]);
        const auto end = static_cast<std::size_t>(base.row_start()[row + 1]);
        if (end - begin > 8 * f_->net[k].size() + 64) continue;  // a capacity row: not it
        for (std::size_t q = begin; q < end; ++q) {
          in_row[static_cast<std::size_t>(base.entry_column()[q])] = base.entry_value()[q];
        }
        double bound = 0.0;
        bool covers = true;
        for (const auto& [column, coef] : f_->net[k]) {
          const auto c = static_cast<std::size_t>(column);
          if (coef <= 0.0 || base.columns()[c].upper <= 0.0) continue;
          if (in_row[c] <= 0.0 || base.columns()[c].lower < 0.0) {
            covers = false;
            break;
          }
          bound = std::max(bound, coef / in_row[c]);
        }
        for (std::size_t q = begin; q < end; ++q) {
          in_row[static_cast<std::size_t>(base.entry_column()[q])] = 0.0;
        }
        if (covers) caps[k] = std::min(caps[k], base.row_upper()[row] * bound);
      }
    }
    return caps;
  }

  // The multiplier on job k's rows in `solution`, the last answer of Raise; nullopt when the
  // solver gave none.
  std::optional<double> Multiplier(std::size_t k, const lp::Solution& solution) const {
    const std::vector<double>& duals = solution.row_duals;
    if (duals.empty()) return std::nullopt;
    const auto dual = [&](int row) {
      return row >= 0 && static_cast<std::size_t>(row) < duals.size()
                 ? std::abs(duals[static_cast<std::size_t>(row)])
                 : 0.0;
    };
    if (net_columns_.empty()) return dual(level_rows_[k]) + dual(floor_rows_[k]);
    // Through a NET column the floor is the column's bound: its reduced cost is the floor's
    // multiplier (the defining row's dual is NET_k's price, not a multiplier).
    const std::vector<double>& reduced = solution.reduced_costs;
    const auto column = static_cast<std::size_t>(net_columns_[k]);
    return dual(level_rows_[k]) + (column < reduced.size() ? std::abs(reduced[column]) : 0.0);
  }

  // maximise Σ_{k ∈ jobs} NET_k s.t. NET_l >= level_l for every job.
  Result<lp::Solution> MaximiseSum(const std::vector<std::size_t>& jobs, const Levels& s) {
    std::map<int, double> objective;
    for (std::size_t k : jobs) {
      for (const auto& [col, coef] : f_->net[k]) objective[col] += coef;
    }
    const auto required = [&](std::size_t l, const lp::Solution&) { return s.level[l]; };
    const auto set_up = [&] {
      SetLevels(s);
      session_->SetColumnBounds(tau_, clock_, clock_);
      session_->SetObjective(tau_, 0.0);
      for (const auto& [col, coef] : objective) session_->SetObjective(col, coef);
    };
    GAVEL_ASSIGN_OR_RETURN(lp::Solution solution, SolveWithRetry(required, set_up));
    for (const auto& term : objective) session_->SetObjective(term.first, 0.0);
    session_->SetObjective(tau_, 1.0);
    return solution;
  }

 private:
  struct LinkRow {
    int row = -1;
    double share = 0.0;
  };

  LevelLp(const PolicyInput& input, const Formulation& f, lp::Solver& solver)
      : input_(&input),
        f_(&f),
        solver_(&solver),
        entity_clock_(input.entities.size(), 0.0),
        through_net_columns_(HasLazyColumns(f.base.model)),
        by_column_(ByColumn(f)) {}

  static bool HasLazyColumns(const lp::Model& model) {
    return std::any_of(model.columns().begin(), model.columns().end(),
                       [](const lp::Column& c) { return c.lazy; });
  }

  // The base rows' entries and the NET terms, column by column (CSR over the base model's
  // columns), so that an answer is checked over its nonzero values only: of the hundreds of
  // thousands of pair columns the formulation lists, an answer uses a few thousand.
  struct ByColumn {
    explicit ByColumn(const Formulation& f) {
      const lp::Model& base = f.base.model;
      const auto n = static_cast<std::size_t>(base.num_columns());
      start.assign(n + 1, 0);
      for (int column : base.entry_column()) ++start[static_cast<std::size_t>(column) + 1];
      for (const Terms& terms : f.net) {
        for (const auto& term : terms) ++start[static_cast<std::size_t>(term.first) + 1];
      }
      for (std::size_t c = 0; c < n; ++c) start[c + 1] += start[c];
      std::vector<std::size_t> next(start.begin(), start.end() - 1);
      entries.resize(start[n]);
      for (int i = 0; i < base.num_rows(); ++i) {
        const auto row = static_cast<std::size_t>(i);
        for (int e = base.row_start()[row]; e < base.row_start()[row + 1]; ++e) {
          const auto entry = static_cast<std::size_t>(e);
          const auto column = static_cast<std::size_t>(base.entry_column()[entry]);
          entries[next[column]++] = {i, base.entry_value()[entry]};
        }
      }
      // NET terms as rows after the base rows: num_rows + k for job k.
      for (std::size_t k = 0; k < f.net.size(); ++k) {
        for (const auto& [column, coef] : f.net[k]) {
          entries[next[static_cast<std::size_t>(column)]++] = {
              base.num_rows() + static_cast<int>(k), coef};
        }
      }
    }
    std::vector<std::size_t> start;
    std::vector<std::pair<int, double>> entries;  // (row, coefficient)
  };

  // (Re)loads the base problem, the clocks and the floor rows NET_k >= 0 into a fresh
  // session; level and link rows are added by SetLevels as needed.
  Status Reload() {
    lp::Model model = f_->base.model;
    model.SetSense(lp::Sense::kMaximize);
    tau_ = model.AddColumn(clock_, lp::kInfinity, 1.0);
    entity_columns_.clear();
    for (double clock : entity_clock_) entity_columns_.push_back(model.AddColumn(clock, clock));
    floor_rows_.assign(f_->net.size(), -1);
    net_columns_.clear();
    if (through_net_columns_) net_columns_.assign(f_->net.size(), -1);
    for (std::size_t k = 0; k < f_->net.size(); ++k) {
      if (!f_->included[k]) continue;
      std::vector<int> cols = ColumnsOf(f_->net[k]);
      std::vector<double> coefs = CoefficientsOf(f_->net[k]);
      if (!through_net_columns_) {
        floor_rows_[k] = model.AddRow(0.0, lp::kInfinity, cols, coefs);
        continue;
      }
      net_columns_[k] = model.AddColumn(0.0, lp::kInfinity);
      cols.push_back(net_columns_[k]);
      coefs.push_back(-1.0);
      floor_rows_[k] = model.AddRow(0.0, 0.0, cols, coefs);
    }
    level_rows_.assign(f_->net.size(), -1);
    link_rows_.assign(entity_clock_.size(), LinkRow{});
    GAVEL_ASSIGN_OR_RETURN(session_, solver_->Load(model));
    return Status::Ok();
  }

  // Ties each entity's clock to τ by its share (or holds it still when it has no active job),
  // holds every inactive job at its level by its floor row, and raises every active job with
  // its clock by its level row (an active job's floor is implied, and left as it was).
  void SetLevels(const Levels& s) {
    for (std::size_t e = 0; e < entity_clock_.size(); ++e) {
      LinkRow& link = link_rows_[e];
      if (link.row >= 0 && link.share == s.share[e]) continue;
      if (link.row >= 0) session_->SetRowBounds(link.row, -lp::kInfinity, lp::kInfinity);
      link = LinkRow{};
      const int column = entity_columns_[e];
      if (s.share[e] <= 0.0) {
        session_->SetColumnBounds(column, entity_clock_[e], entity_clock_[e]);
        continue;
      }
      session_->SetColumnBounds(column, -lp::kInfinity, lp::kInfinity);
      const double bound = entity_clock_[e] - s.share[e] * clock_;
      const std::vector<int> cols = {column, tau_};
      const std::vector<double> coefs = {1.0, -s.share[e]};
      link = LinkRow{session_->AddRow(bound, bound, cols, coefs), s.share[e]};
    }
    for (std::size_t k = 0; k < s.level.size(); ++k) {
      if (!f_->included[k]) continue;
      int& row = level_rows_[k];
      if (!s.active[k]) {
        SetFloor(k, s.level[k]);
        if (row >= 0) session_->SetRowBounds(row, -lp::kInfinity, lp::kInfinity);
        row = -1;
        continue;
      }
      if (row >= 0) continue;
      // (0 unless a failed trial held it at its cap: PredictCapFreezes.)
      SetFloor(k, 0.0);
      const int entity = input_->jobs[k].entity;
      const int column = entity < 0 ? tau_ : entity_columns_[static_cast<std::size_t>(entity)];
      const double clock = entity < 0 ? clock_ : entity_clock_[static_cast<std::size_t>(entity)];
      const double own_rate = input_->jobs[k].priority_weight / input_->jobs[k].scale_factor;
      std::vector<int> cols;
      std::vector<double> coefs;
      if (through_net_columns_) {
        cols = {net_columns_[k]};
        coefs = {1.0};
      } else {
        cols = ColumnsOf(f_->net[k]);
        coefs = CoefficientsOf(f_->net[k]);
      }
      cols.push_back(column);
      coefs.push_back(-own_rate);
      row = session_->AddRow(s.level[k] - own_rate * clock, lp::kInfinity, cols, coefs);
    }
  }

  // NET_k >= floor: its floor row's bound, or its NET column's.
  void SetFloor(std::size_t k, double floor) {
    if (through_net_columns_) {
      session_->SetColumnBounds(net_columns_[k], floor, lp::kInfinity);
    } else {
      session_->SetRowBounds(floor_rows_[k], floor, lp::kInfinity);
    }
  }

  // Applies `set_up` to the session and solves from the previous basis. An answer that is
  // not clean (see the top) is solved again from its own basis, which often recomputes it
  // cleanly, and if that does not help, or the answer is not optimal, in a fresh session. The
  // levels may themselves overshoot what is feasible by a hair, so a fresh answer's
  // violation, doubled, becomes the tolerance for later answers. `required(k, solution)` is
  // the least NET_k the problem demands.
  template <class Required, class SetUp>
  Result<lp::Solution> SolveWithRetry(const Required& required, const SetUp& set_up) {
    set_up();
    GAVEL_ASSIGN_OR_RETURN(lp::Solution solution, session_->Solve());
    if (solution.outcome == lp::Outcome::kOptimal) {
      if (Clean(solution, required)) return solution;
      GAVEL_ASSIGN_OR_RETURN(solution, session_->Solve());
      if (solution.outcome == lp::Outcome::kOptimal && Clean(solution, required)) {
        return solution;
      }
    }
    GAVEL_RETURN_IF_ERROR(Reload());
    set_up();
    GAVEL_ASSIGN_OR_RETURN(solution, session_->Solve());
    if (solution.outcome == lp::Outcome::kOptimal) {
      tolerated_violation_ =
          std::clamp(2.0 * Violation(solution, required), tolerated_violation_, kMostTolerated);
    }
    return solution;
  }

  template <class Required>
  bool Clean(const lp::Solution& solution, const Required& required) const {
    return Violation(solution, required) <= tolerated_violation_;
  }

  // How far `solution` breaks a base row (capacity, time) or a job's required NET. Column
  // bounds are left to the solver's own tolerance: a time fraction a hair below 0 or above 1
  // cannot free more than that hair of capacity.
  template <class Required>
  double Violation(const lp::Solution& solution, const Required& required) const {
    const lp::Model& base = f_->base.model;
    const auto num_rows = static_cast<std::size_t>(base.num_rows());
    // Base rows' activities, then each job's NET.
    std::vector<double> activity(num_rows + f_->net.size(), 0.0);
    const auto num_columns = static_cast<std::size_t>(base.num_columns());
    for (std::size_t c = 0; c < num_columns; ++c) {
      const double value = solution.values[c];
      if (value == 0.0) continue;
      for (std::size_t e = by_column_.start[c]; e < by_column_.start[c + 1]; ++e) {
        const auto& [row, coef] = by_column_.entries[e];
        activity[static_cast<std::size_t>(row)] += coef * value;
      }
    }
    double worst = 0.0;
    for (std::size_t row = 0; row < num_rows; ++row) {
      worst = std::max(
          {worst, base.row_lower()[row] - activity[row], activity[row] - base.row_upper()[row]});
    }
    for (std::size_t k = 0; k < f_->net.size(); ++k) {
      if (!f_->included[k]) continue;
      worst = std::max(worst, required(k, solution) - activity[num_rows + k]);
    }
    return worst;
  }

  const PolicyInput* input_;
  const Formulation* f_;
  lp::Solver* solver_;
  std::unique_ptr<lp::Session> session_;
  int tau_ = -1;
  double clock_ = 0.0;                // τ after the last Raise
  std::vector<int> entity_columns_;   // σ_e
  std::vector<double> entity_clock_;  // σ_e after the last Raise
  std::vector<int> floor_rows_;       // per job
  std::vector<int> level_rows_;       // per job; -1 while it has none
  std::vector<LinkRow> link_rows_;    // per entity
  // With lazy columns, NET_k is a column of its own, defined by its floor row (NET_k's terms
  // − NET_k = 0), and level rows read that column: a level row over NET_k's terms would carry
  // every left-out pair column, which column generation must scatter duals onto in every
  // pricing round and gather entries from in every load (most of the solve at 2,048 varied
  // jobs). Without them, the rows as they were (and the same answers as before).
  bool through_net_columns_;
  std::vector<int> net_columns_;  // per job; empty unless through_net_columns_
  ByColumn by_column_;
  double tolerated_violation_ = kCleanViolation;
};

// The original's bottleneck MILP (compat only): maximise Σ z_k s.t. the base constraints,
// NET_k >= level_k for every job, and for every job, z_k binary (fixed at 0 unless active),
//   NET_k − M z_k >= 1.0001 level_k − M   and   NET_k − M z_k <= 1.0001 level_k − 1e-5.
// `rises[k]` is z_k's column.
struct CompatMilp {
  lp::Model model;
  std::vector<int> rises;
};

CompatMilp BuildCompatMilp(const Formulation& f, const Levels& s) {
  CompatMilp milp{f.base.model, std::vector<int>(s.level.size(), -1)};
  milp.model.SetSense(lp::Sense::kMaximize);
  for (std::size_t k = 0; k < s.level.size(); ++k) {
    if (!f.included[k]) continue;
    std::vector<int> cols = ColumnsOf(f.net[k]);
    std::vector<double> coefs = CoefficientsOf(f.net[k]);
    milp.model.AddRow(s.level[k], lp::kInfinity, cols, coefs);
    milp.rises[k] = milp.model.AddColumn(0.0, s.active[k] ? 1.0 : 0.0, 1.0, /*integer=*/true);
    cols.push_back(milp.rises[k]);
    coefs.push_back(-f.big_m);
    const double rise = kCompatRiseFactor * s.level[k];
    milp.model.AddRow(rise - f.big_m, lp::kInfinity, cols, coefs);
    milp.model.AddRow(-lp::kInfinity, rise - kCompatEpsilon, cols, coefs);
  }
  return milp;
}

// FreezeStuck's second test, shared by both paths: `reaches(undecided)` maximises the sum of
// their NETs with every level kept and returns each one's NET at that optimum (nullopt when
// the solve gave no optimum: then none is shown to rise). A job that ends above its level can
// rise; if none does, none can (any one rising would raise the sum), so all are frozen;
// otherwise the question is asked again of those that did not. Returns how many were frozen.
template <class Reaches>
Result<int> FreezeThoseThatCannotRise(std::vector<std::size_t> undecided, Levels& s,
                                      const Reaches& reaches) {
  int frozen = 0;
  while (!undecided.empty()) {
    GAVEL_ASSIGN_OR_RETURN(const std::optional<std::vector<double>> nets, reaches(undecided));
    std::vector<std::size_t> not_rising;
    for (std::size_t q = 0; q < undecided.size(); ++q) {
      const std::size_t k = undecided[q];
      const bool rises = nets.has_value() &&
                         (*nets)[q] > s.level[k] + kMinimumRise * std::max(1.0, s.level[k]);
      if (!rises) not_rising.push_back(k);
    }
    if (not_rising.size() == undecided.size()) {
      for (std::size_t k : not_rising) s.frozen[k] = true;
      frozen += static_cast<int>(not_rising.size());
      break;
    }
    undecided = std::move(not_rising);
  }
  return frozen;
}

class WaterFilling final : public Policy {
 public:
  WaterFilling(Variant variant, const PolicyOptions& options)
      : variant_(variant),
        options_(options),
        solvers_(options) {}

  Result<PolicyOutput> Allocate(const PolicyInput& input) override {
    FastPathAttempt fast = TryFastPath(variant_, options_, input.num_jobs(),
                                       [&] { return AllocateByDecomposition(input); });
    if (fast.output.has_value()) return std::move(*fast.output);
    const Matrix throughput = BelievedThroughput(input);
    // Space sharing on the fast path: over classes of interchangeable jobs when they pay.
    if (variant_ == Variant::kPacked && input.num_jobs() > 0 && UsesColumnGeneration(options_)) {
      if (const std::optional<JobClasses> classes =
              FindInterchangeableJobs(input, throughput, /*by_entity=*/true)) {
        return AllocateByClasses(input, *classes, throughput);
      }
    }
    GAVEL_ASSIGN_OR_RETURN(const Formulation f, Formulate(input, throughput));
    GAVEL_ASSIGN_OR_RETURN(Filled filled, Fill(input, f));
    return Finish(input, f, std::move(filled), fast.failure_note,
                  [&](const lp::Solution& solution) {
                    return ExtractAllocation(input, f.base, solution);
                  });
  }

 private:
  struct Filled {
    lp::Solution last;                // the last LP's answer
    std::optional<double> objective;  // the first LP's optimum; none when nothing could rise
    std::string note;                 // why the filling stopped early, if it did
  };

  // The filling itself (docs/policies.md), over the jobs of `input` and their formulation.
  Result<Filled> Fill(const PolicyInput& input, const Formulation& f) const {
    const bool compat = options_.compat_gavel;
    GAVEL_ASSIGN_OR_RETURN(LevelLp lp, LevelLp::Load(input, f, *solvers_.lp));
    Levels s(input.num_jobs(), input.entities.size());
    lp::Solution last;  // the last LP's answer
    std::optional<double> objective;
    std::string note;  // why the filling stopped early, if it did

    // Fast path only: several freezes per LP where jobs stop at their caps (TryCapFreezes).
    const bool by_caps = !compat && UsesColumnGeneration(options_);
    const std::vector<double> caps = by_caps ? lp.Caps() : std::vector<double>();
    std::size_t cap_batch = 0;  // how many cap freezes the next trial predicts; 0: no trial

    while (UpdateWeights(input, f.included, s)) {
      if (cap_batch > 0 && objective.has_value()) {
        GAVEL_ASSIGN_OR_RETURN(const std::optional<int> batched,
                               TryCapFreezes(input, f, caps, cap_batch, lp, s, last));
        if (batched.has_value()) {
          cap_batch *= 2;
          if (*batched == 0) break;
          continue;
        }
        cap_batch = 0;
      }
      // Raise the active jobs. The original takes the minimum over every job, adding M for
      // inactive ones: under compat, t cannot exceed M once a job is inactive.
      GAVEL_ASSIGN_OR_RETURN(Raised raised,
                             lp.Raise(s, compat && AnyInactive(f, s) ? f.big_m : lp::kInfinity));
      const lp::Outcome outcome = raised.solution.outcome;
      if (outcome != lp::Outcome::kOptimal) {
        if (!objective.has_value()) return UnexpectedOutcome("water_filling", outcome);
        // Keep the previous allocation, as the original does.
        note = std::string("water filling stopped early: an LP ended ") + lp::OutcomeName(outcome) +
               "; the previous iteration's allocation is kept";
        break;
      }
      if (!objective.has_value()) objective = raised.gain;
      const std::vector<bool> before = s.frozen;
      const bool progress = RaiseLevels(raised.gain, s);
      last = std::move(raised.solution);

      GAVEL_ASSIGN_OR_RETURN(const int newly_frozen,
                             compat ? FreezeLikeOriginal(f, s, note)
                                    : FreezeStuck(lp, last, /*thorough=*/!progress, s));
      if (newly_frozen == 0) break;
      if (by_caps && AllFrozenAtCaps(before, s, caps)) cap_batch = std::max<std::size_t>(cap_batch, 1);
    }

    return Filled{std::move(last), objective, std::move(note)};
  }

  // Whether every job frozen since `before` ended at its cap (Caps).
  static bool AllFrozenAtCaps(const std::vector<bool>& before, const Levels& s,
                              const std::vector<double>& caps) {
    for (std::size_t k = 0; k < before.size(); ++k) {
      if (before[k] || !s.frozen[k]) continue;
      if (!(std::abs(s.level[k] - caps[k]) <= kMinimumRise * std::max(1.0, caps[k]))) return false;
    }
    return true;
  }

  // Several freezes with one LP, where jobs stop at their caps U_k (Caps). The filling from
  // here is predicted as if the next `batch` freezes were each the active job that reaches
  // its cap first (rates as UpdateWeights sets them after each): P those jobs, r(T) every
  // job's level at the end. One LP then raises the rest from r(T) with P frozen at their
  // caps. When it has an optimum, the prediction was the filling's own: levels only rise
  // along it, so r(τ) <= r(T) is feasible for every τ <= T; at each predicted freeze the job
  // is at its cap and cannot rise, and every other active job can (r just after is
  // feasible), so the filling freezes exactly that job there. The LP then goes on as an
  // iteration of its own, with its freezes. Returns how many jobs were frozen, or nullopt
  // when the trial failed (the LP had no trusted optimum): nothing changed, and the caller
  // raises as usual.
  Result<std::optional<int>> TryCapFreezes(const PolicyInput& input, const Formulation& f,
                                           const std::vector<double>& caps, std::size_t batch,
                                           LevelLp& lp, Levels& s, lp::Solution& last) const {
    Levels trial = s;
    const LevelLp::Clocks saved = lp.clocks();
    LevelLp::Clocks clocks = saved;
    std::size_t predicted = 0;
    for (; predicted < batch; ++predicted) {
      std::size_t first = s.level.size();
      double wait = lp::kInfinity;
      std::size_t active = 0;
      for (std::size_t k = 0; k < trial.level.size(); ++k) {
        if (!trial.active[k]) continue;
        ++active;
        if (caps[k] >= lp::kInfinity) continue;
        const double until = std::max(0.0, (caps[k] - trial.level[k]) / trial.rate[k]);
        if (until < wait) {
          wait = until;
          first = k;
        }
      }
      if (first == s.level.size() || active < 2) break;  // (the LP needs an active job)
      for (std::size_t k = 0; k < trial.level.size(); ++k) trial.level[k] += trial.rate[k] * wait;
      clocks.global += wait;
      for (std::size_t e = 0; e < clocks.entity.size(); ++e) clocks.entity[e] += trial.share[e] * wait;
      trial.level[first] = caps[first];
      trial.frozen[first] = true;
      UpdateWeights(input, f.included, trial);
    }
    if (predicted == 0) return std::optional<int>();
    lp.set_clocks(clocks);
    GAVEL_ASSIGN_OR_RETURN(Raised raised, lp.Raise(trial, lp::kInfinity, /*retry=*/false));
    if (raised.solution.outcome != lp::Outcome::kOptimal) {
      lp.set_clocks(saved);
      return std::optional<int>();
    }
    const bool progress = RaiseLevels(raised.gain, trial);
    s = std::move(trial);
    last = std::move(raised.solution);
    GAVEL_ASSIGN_OR_RETURN(const int frozen, FreezeStuck(lp, last, /*thorough=*/!progress, s));
    return std::optional<int>(static_cast<int>(predicted) + frozen);
  }

  // The filling over classes of interchangeable jobs (packed_classes.h), spread back over
  // the jobs and their pairs.
  Result<PolicyOutput> AllocateByClasses(const PolicyInput& input, const JobClasses& classes,
                                         const Matrix& throughput) const {
    const PolicyInput classed = ClassInput(input, classes, throughput);
    const Formulation f = FormulateClasses(input, classes, throughput);
    GAVEL_ASSIGN_OR_RETURN(Filled filled, Fill(classed, f));
    // (A packed variant never takes the decomposition fast path: no failure to note.)
    return Finish(input, f, std::move(filled), /*fast_path_note=*/"",
                  [&](const lp::Solution& solution) {
                    return SpreadClassAllocation(input, classes, f.base, solution);
                  });
  }

  // The allocation a filling ends with: `extract(solution)` over f's columns of its last LP,
  // or of all zeros when no job could be raised (none can run, or none has a positive
  // weight). Its note says why the filling stopped early, else why the fast path failed.
  template <class Extract>
  static PolicyOutput Finish(const PolicyInput& input, const Formulation& f, Filled filled,
                             const std::string& fast_path_note, const Extract& extract) {
    if (!filled.objective.has_value()) {
      filled.last.values.assign(static_cast<std::size_t>(f.base.model.num_columns()), 0.0);
      PolicyOutput output = extract(filled.last);
      if (input.num_jobs() > 0) output.note = "no job with a positive weight can run anywhere";
      return output;
    }
    PolicyOutput output = extract(filled.last);
    output.objective = filled.objective;
    output.status = filled.note.empty() ? AllocationStatus::kOptimal : AllocationStatus::kFallback;
    output.note = filled.note.empty() ? fast_path_note : filled.note;
    return output;
  }

  // The classes as jobs, for the filling's weights and rates: a class is one job of weight
  // Σ_members w_k (so its entity's total and share are the jobs'), and its formulation's NET
  // is the sum of its members' (FormulateClasses), so that NET_a >= level_a + rate_a t reads
  // |a| times a member's row.
  static PolicyInput ClassInput(const PolicyInput& input, const JobClasses& classes,
                                const Matrix& throughput) {
    PolicyInput classed;
    classed.gpu_types = input.gpu_types;
    classed.gpu_counts = input.gpu_counts;
    classed.gpus_per_server = input.gpus_per_server;
    classed.entities = input.entities;
    classed.entity_weights = input.entity_weights;
    classed.throughput = Matrix(classes.size(), input.num_types());
    for (std::size_t a = 0; a < classes.size(); ++a) {
      const std::size_t i = classes.members[a].front();
      PolicyJob job = input.jobs[i];
      job.priority_weight *= static_cast<double>(classes.members[a].size());
      classed.jobs.push_back(job);
      for (std::size_t j = 0; j < input.num_types(); ++j) classed.throughput(a, j) = throughput(i, j);
    }
    classed.pair_throughput_first = Matrix(0, input.num_types());
    classed.pair_throughput_second = Matrix(0, input.num_types());
    return classed;
  }

  // The formulation over classes (packed_classes.h): NET_a = Σ_members NET_k.
  Formulation FormulateClasses(const PolicyInput& input, const JobClasses& classes,
                               const Matrix& throughput) const {
    const std::size_t n = input.num_types();
    const std::vector<double> prop = NormalisingShares(input, throughput);
    Formulation f{BuildClassBaseProblem(input, classes, throughput, lp::Sense::kMaximize,
                                        UsesColumnGeneration(options_)),
                  std::vector<Terms>(classes.size()), std::vector<bool>(classes.size(), false),
                  0.0};
    for (std::size_t a = 0; a < classes.size(); ++a) {
      const std::size_t i = classes.members[a].front();
      const double size = static_cast<double>(classes.members[a].size());
      const std::vector<JobClasses::PairShare>& shares = classes.pairs_of_class[a];
      if (prop[i] <= 0.0) {  // left out at 0, and so are its pairs (as in Formulate)
        for (std::size_t j = 0; j < n; ++j) {
          f.base.model.SetColumnBounds(f.base.job_columns[a * n + j], 0.0, 0.0);
          for (const JobClasses::PairShare& pair : shares) {
            f.base.model.SetColumnBounds(f.base.pair_columns[pair.q * n + j], 0.0, 0.0);
          }
        }
        continue;
      }
      f.included[a] = true;
      for (std::size_t j = 0; j < n; ++j) {
        f.net[a].push_back({f.base.job_columns[a * n + j], size * throughput(i, j) / prop[i]});
      }
      for (const JobClasses::PairShare& pair : shares) {
        for (std::size_t j = 0; j < n; ++j) {
          f.net[a].push_back({f.base.pair_columns[pair.q * n + j],
                              size * MemberPairThroughput(classes, a, pair, j) / prop[i]});
        }
      }
    }
    return f;
  }

  // The same filling by per-job decomposition: each iteration's LP is a JobProblem with the
  // jobs' levels and rates as demand rows (started from the previous iteration's allocation,
  // which meets every level), and a job is frozen when its marginal cost at the optimum is
  // positive: with optimal capacity prices p, Σ_k φ_k(level_k) + p·c = 0 at the optimum
  // (φ_k the job's best priced value, non-increasing in its demand), and every allocation
  // within capacity has Σ_k φ_k(NET_k) + p·c >= 0, so no job whose φ_k falls right of its
  // level can rise while the others keep theirs. The rest are tested as in FreezeStuck, by
  // maximising the sum of their NETs with every level kept.
  Result<PolicyOutput> AllocateByDecomposition(const PolicyInput& input) const {
    const std::size_t m = input.num_jobs();
    const std::size_t n = input.num_types();
    const Matrix throughput = BelievedThroughput(input);
    const std::vector<double> prop = NormalisingShares(input, throughput);
    decomp::JobProblem problem = BaseJobProblem(input, throughput);
    PrepareDemandRows(problem);
    problem.t_weight = 1.0;
    std::vector<bool> included(m, false);
    for (std::size_t k = 0; k < m; ++k) {
      if (prop[k] <= 0.0) continue;
      included[k] = true;
      problem.has_demand[k] = 1;
      for (std::size_t j = 0; j < n; ++j) problem.gain(k, j) = throughput(k, j) / prop[k];
    }
    auto net = [&](std::size_t k, const Matrix& x) {
      double total = 0.0;
      for (std::size_t j = 0; j < n; ++j) total += problem.gain(k, j) * x(k, j);
      return total;
    };

    Levels s(m, input.entities.size());
    std::optional<Matrix> last;
    std::optional<double> objective;
    decomp::JobSolveOptions options;
    while (UpdateWeights(input, included, s)) {
      problem.level = s.level;
      problem.rate = s.rate;
      // Levels are what the last allocation reaches, up to round-off: hold each job to what
      // it actually reaches where that is a hair lower, so that allocation starts this LP.
      if (last.has_value()) {
        for (std::size_t k = 0; k < m; ++k) {
          if (included[k]) problem.level[k] = std::min(problem.level[k], net(k, *last));
        }
      }
      GAVEL_ASSIGN_OR_RETURN(decomp::JobSolution raised,
                             decomp::SolveJobProblem(problem, *solvers_.master, options));
      if (raised.outcome != decomp::JobOutcome::kOptimal) {
        return Status::Internal(std::string("water_filling: the decomposition ended ") +
                                (raised.outcome == decomp::JobOutcome::kInfeasible ? "infeasible"
                                                                                   : "unbounded"));
      }
      const double gain = std::max(0.0, raised.t);
      if (!objective.has_value()) objective = gain;
      const bool progress = RaiseLevels(gain, s);
      last = raised.x;
      options.start_points.assign(1, raised.x);

      int frozen = 0;
      std::vector<std::size_t> undecided;
      for (std::size_t k = 0; k < m; ++k) {
        if (!s.active[k]) continue;
        if (raised.marginal_cost[k] > kBindingMultiplier) {
          s.frozen[k] = true;
          ++frozen;
        } else {
          undecided.push_back(k);
        }
      }
      if (frozen == 0 || !progress) {
        GAVEL_ASSIGN_OR_RETURN(const int stuck, FreezeStuckByDecomposition(problem, s, *last,
                                                                           undecided, net));
        frozen += stuck;
      }
      if (frozen == 0) break;
    }
    if (!objective.has_value()) {
      PolicyOutput output;
      output.allocation = Matrix(m, n);
      output.pair_allocation = Matrix(0, n);
      output.note = "no job with a positive weight can run anywhere";
      return output;
    }
    decomp::JobSolution final_point;
    final_point.x = *last;
    PolicyOutput output = AllocationOf(input, final_point);
    output.objective = objective;
    return output;
  }

  // FreezeStuck's second test over `undecided`, by decomposition: maximise the sum of their
  // NETs with every level kept; returns how many were frozen.
  template <class Net>
  Result<int> FreezeStuckByDecomposition(decomp::JobProblem problem, Levels& s,
                                         const Matrix& start, std::vector<std::size_t> undecided,
                                         const Net& net) const {
    problem.t_weight = 0.0;
    for (std::size_t k = 0; k < problem.num_jobs(); ++k) {
      if (problem.has_demand[k]) problem.level[k] = std::min(s.level[k], net(k, start));
    }
    std::fill(problem.rate.begin(), problem.rate.end(), 0.0);
    decomp::JobSolveOptions options;
    options.start_points.assign(1, start);
    using Nets = std::optional<std::vector<double>>;
    return FreezeThoseThatCannotRise(
        std::move(undecided), s, [&](const std::vector<std::size_t>& jobs) -> Result<Nets> {
          problem.profit = Matrix(problem.num_jobs(), problem.num_types());
          for (std::size_t k : jobs) {
            for (std::size_t j = 0; j < problem.num_types(); ++j) {
              problem.profit(k, j) = problem.gain(k, j);
            }
          }
          GAVEL_ASSIGN_OR_RETURN(const decomp::JobSolution best,
                                 decomp::SolveJobProblem(problem, *solvers_.master, options));
          if (best.outcome != decomp::JobOutcome::kOptimal) return Nets();
          std::vector<double> nets;
          for (std::size_t k : jobs) nets.push_back(net(k, best.x));
          return Nets(std::move(nets));
        });
  }

  // The throughputs the variant believes: UnitThroughput when agnostic.
  Matrix BelievedThroughput(const PolicyInput& input) const {
    return variant_ == Variant::kAgnostic ? UnitThroughput(input, options_.compat_gavel)
                                          : input.throughput;
  }

  // prop_k, by which NET_k is normalised. Agnostic: 1 (the original's T ≡ 1 gives
  // Σ_j c_j / Σ_t c_t = 1), as max-min fairness does; a job that can run nowhere still gets 0.
  std::vector<double> NormalisingShares(const PolicyInput& input, const Matrix& throughput) const {
    std::vector<double> prop = ProportionalThroughputs(input, throughput);
    if (variant_ == Variant::kAgnostic) {
      for (double& p : prop) p = p > 0.0 ? 1.0 : 0.0;
    }
    return prop;
  }

  // The formulation over the jobs, with the throughputs the variant believes.
  Result<Formulation> Formulate(const PolicyInput& input, const Matrix& throughput) const {
    const std::size_t m = input.num_jobs();
    const std::size_t n = input.num_types();
    const bool packed = variant_ == Variant::kPacked;

    const BaseProblemOptions base_options = BaseProblemOptionsFor(variant_, options_);
    GAVEL_ASSIGN_OR_RETURN(BaseProblem base,
                           BuildBaseProblem(input, throughput, lp::Sense::kMaximize, base_options));
    const std::vector<double> prop = NormalisingShares(input, throughput);

    Formulation f{std::move(base), std::vector<Terms>(m), std::vector<bool>(m, false), 0.0};
    for (std::size_t k = 0; k < m; ++k) {
      // A job that can run nowhere has no share to be fair about: it is left out at 0, and so
      // are its pairs.
      if (prop[k] <= 0.0) {
        for (std::size_t j = 0; j < n; ++j) {
          f.base.model.SetColumnBounds(f.base.job_columns[k * n + j], 0.0, 0.0);
        }
        for (int p : f.base.pairs_of_job[k]) {
          for (std::size_t j = 0; j < n; ++j) {
            f.base.model.SetColumnBounds(f.base.pair_columns[static_cast<std::size_t>(p) * n + j],
                                         0.0, 0.0);
          }
        }
        continue;
      }
      f.included[k] = true;
      Terms& terms = f.net[k];
      for (std::size_t j = 0; j < n; ++j) {
        terms.push_back({f.base.job_columns[k * n + j], throughput(k, j) / prop[k]});
      }
      if (packed) {
        for (int p : f.base.pairs_of_job[k]) {
          const JobPair& pair = input.pairs[static_cast<std::size_t>(p)];
          const Matrix& member = static_cast<std::size_t>(pair.first) == k
                                     ? input.pair_throughput_first
                                     : input.pair_throughput_second;
          for (std::size_t j = 0; j < n; ++j) {
            terms.push_back({f.base.pair_columns[static_cast<std::size_t>(p) * n + j],
                             member(static_cast<std::size_t>(p), j) / prop[k]});
          }
        }
      }
      for (const auto& term : terms) {
        f.big_m = std::max(f.big_m, term.second * input.jobs[k].scale_factor);
      }
    }
    return f;
  }

  static bool AnyInactive(const Formulation& f, const Levels& s) {
    for (std::size_t k = 0; k < s.active.size(); ++k) {
      if (f.included[k] && !s.active[k]) return true;
    }
    return false;
  }

  // Freezes the active jobs that cannot rise while every job keeps its level; returns how
  // many. First those whose multiplier in `raised` (the LP just solved) is positive. If that
  // finds none, or `thorough` (the LP could not raise t, so some stuck job has a zero
  // multiplier), also the rest that cannot rise, by asking "maximise the sum of their NETs
  // with every level kept": a job that ends above its level can rise; if none does, none can
  // (any one rising would raise the sum), so all are frozen; otherwise the question is asked
  // again of those that did not. (Otherwise a stuck job with a zero multiplier stays active,
  // and the next LP, unable to raise t, finds it.)
  static Result<int> FreezeStuck(LevelLp& lp, const lp::Solution& raised, bool thorough,
                                 Levels& s) {
    int frozen = 0;
    std::vector<std::size_t> undecided;
    for (std::size_t k = 0; k < s.level.size(); ++k) {
      if (!s.active[k]) continue;
      const std::optional<double> multiplier = lp.Multiplier(k, raised);
      if (multiplier.has_value() && *multiplier > kBindingMultiplier) {
        s.frozen[k] = true;
        ++frozen;
      } else {
        undecided.push_back(k);
      }
    }
    if (frozen > 0 && !thorough) return frozen;
    using Nets = std::optional<std::vector<double>>;
    GAVEL_ASSIGN_OR_RETURN(
        const int stuck,
        FreezeThoseThatCannotRise(undecided, s, [&](const std::vector<std::size_t>& jobs)
                                                    -> Result<Nets> {
          GAVEL_ASSIGN_OR_RETURN(const lp::Solution best, lp.MaximiseSum(jobs, s));
          if (best.outcome != lp::Outcome::kOptimal) return Nets();
          std::vector<double> nets;
          for (std::size_t k : jobs) nets.push_back(lp.Net(k, best));
          return Nets(std::move(nets));
        }));
    return frozen + stuck;
  }

  // The original's bottleneck test (compat): the MILP, and every active job frozen when it has
  // no optimum (it then says so in `note`). Returns how many jobs were frozen.
  Result<int> FreezeLikeOriginal(const Formulation& f, Levels& s, std::string& note) const {
    const CompatMilp milp = BuildCompatMilp(f, s);
    GAVEL_ASSIGN_OR_RETURN(const lp::Solution z, solvers_.milp->Solve(milp.model));
    const bool optimal = z.outcome == lp::Outcome::kOptimal;
    if (!optimal) {
      note = std::string("water filling stopped early: the bottleneck MILP ended ") +
             lp::OutcomeName(z.outcome) + "; every remaining job was frozen";
    }
    int frozen = 0;
    for (std::size_t k = 0; k < s.level.size(); ++k) {
      if (!s.active[k]) continue;
      if (optimal && z.values[static_cast<std::size_t>(milp.rises[k])] > 0.5) continue;
      s.frozen[k] = true;
      ++frozen;
    }
    return frozen;
  }

  Variant variant_;
  PolicyOptions options_;
  PolicySolvers solvers_;
};

}  // namespace

std::unique_ptr<Policy> MakeMaxMinFairnessWaterFilling(Variant variant,
                                                       const PolicyOptions& options) {
  return std::make_unique<WaterFilling>(variant, options);
}

}  // namespace gavel::policy
