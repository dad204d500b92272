#include "gavel/policy/pair_pricing.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "gavel/core/check.h"
#include "gavel/policy/common.h"

namespace gavel::policy {
namespace {

// As lp/column_generation.cc: a column improves when its reduced cost beats rounding noise,
// 1e-9 · (1 + |c| + Σ_i |y_i a_ij|); at most this many columns per job's time row a round.
constexpr double kPricingTolerance = 1e-9;
constexpr int kMaxPerRow = 2;

// One member's part of a pair column's reduced cost.
struct MemberTerm {
  double gain = 0.0;       // g_x (in the objective's direction)
  double magnitude = 0.0;  // Σ |y_i a_ix| of its entries
  int job = 0;
};

struct Candidate {
  double gain = 0.0;
  int a = 0;
  int b = 0;
  int type = 0;
  int q = 0;
};

}  // namespace

std::optional<JobClasses> FindPairClasses(const PolicyInput& input, const Matrix& throughput) {
  if (input.pairs.empty()) return std::nullopt;
  return FindInterchangeableJobs(input, throughput, /*by_entity=*/false, /*by_weight=*/false);
}

Result<BaseProblem> BuildJobsOnlyProblem(const PolicyInput& input, const Matrix& throughput,
                                         const PolicyOptions& options) {
  BaseProblemOptions base = BaseProblemOptionsFor(Variant::kPacked, options);
  base.with_pairs = false;
  base.lazy_pairs = false;
  return BuildBaseProblem(input, throughput, lp::Sense::kMaximize, base);
}

Matrix BestSpeedsByClasses(const PolicyInput& input, const Matrix& throughput,
                           const JobClasses& classes) {
  const std::size_t n = input.num_types();
  Matrix best(input.num_jobs(), n);
  for (std::size_t c = 0; c < classes.size(); ++c) {
    for (const std::size_t k : classes.members[c]) {
      for (std::size_t j = 0; j < n; ++j) {
        best(k, j) = throughput(k, j);
        for (const JobClasses::PairShare& share : classes.pairs_of_class[c]) {
          const JobClasses::ClassPair& pair = classes.pairs[share.q];
          best(k, j) = std::max(best(k, j), pair.a == c ? pair.first[j] : pair.second[j]);
        }
      }
    }
  }
  return best;
}

std::vector<double> MaxThroughputsAloneByClasses(const PolicyInput& input,
                                                 const Matrix& throughput,
                                                 const JobClasses& classes) {
  const Matrix best = BestSpeedsByClasses(input, throughput, classes);
  std::vector<double> result(input.num_jobs(), 0.0);
  std::vector<double> row(input.num_types());
  for (std::size_t k = 0; k < input.num_jobs(); ++k) {
    for (std::size_t j = 0; j < input.num_types(); ++j) row[j] = best(k, j);
    result[k] = MaxThroughputAtSpeeds(input, row, k);
  }
  return result;
}

PairOracle::PairOracle(const PolicyInput& input, const JobClasses& classes,
                       std::vector<int> capacity_rows, std::vector<int> time_rows,
                       lp::Sense sense)
    : input_(input),
      classes_(classes),
      capacity_rows_(std::move(capacity_rows)),
      time_rows_(std::move(time_rows)),
      direction_(sense == lp::Sense::kMaximize ? 1.0 : -1.0),
      throughput_row_(input.num_jobs(), -1),
      row_scale_(input.num_jobs(), 0.0),
      job_objective_(input.num_jobs(), 0.0),
      type_objective_(input.num_types(), 0.0) {
  GAVEL_CHECK(capacity_rows_.size() == input.num_types());
  GAVEL_CHECK(time_rows_.size() == input.num_jobs());
}

void PairOracle::SetThroughputRow(std::size_t job, int row, double scale) {
  throughput_row_[job] = row;
  row_scale_[job] = scale;
}

void PairOracle::SetJobObjective(std::size_t job, double per_step) {
  job_objective_[job] = per_step;
}

void PairOracle::SetTypeObjective(std::size_t type, double per_step) {
  type_objective_[type] = per_step;
}

double PairOracle::MemberThroughput(const PairColumn& c, bool first) const {
  const JobClasses::ClassPair& pair = classes_.pairs[static_cast<std::size_t>(c.q)];
  return (first ? pair.first : pair.second)[static_cast<std::size_t>(c.type)];
}

double PairOracle::Objective(const PairColumn& c) const {
  const double ta = MemberThroughput(c, true);
  const double tb = MemberThroughput(c, false);
  const auto j = static_cast<std::size_t>(c.type);
  return type_objective_[j] * (ta + tb) + job_objective_[static_cast<std::size_t>(c.a)] * ta +
         job_objective_[static_cast<std::size_t>(c.b)] * tb;
}

void PairOracle::UpdateObjectives(lp::Session& session) const {
  for (const PairColumn& c : added_) session.SetObjective(c.column, Objective(c));
}

std::uint64_t PairOracle::Key(int a, int b, int type) const {
  const auto lo = static_cast<std::uint64_t>(std::min(a, b));
  const auto hi = static_cast<std::uint64_t>(std::max(a, b));
  return (lo * input_.num_jobs() + hi) * input_.num_types() + static_cast<std::uint64_t>(type);
}

void PairOracle::AddColumnTo(const PairColumn& c, lp::ColumnBatch& batch) const {
  const auto j = static_cast<std::size_t>(c.type);
  const auto a = static_cast<std::size_t>(c.a);
  const auto b = static_cast<std::size_t>(c.b);
  std::vector<int> rows = {capacity_rows_[j], time_rows_[a], time_rows_[b]};
  std::vector<double> coefficients = {static_cast<double>(input_.jobs[a].scale_factor), 1.0, 1.0};
  const double ta = MemberThroughput(c, true);
  const double tb = MemberThroughput(c, false);
  if (throughput_row_[a] >= 0 && ta > 0.0) {
    rows.push_back(throughput_row_[a]);
    coefficients.push_back(row_scale_[a] * ta);
  }
  if (throughput_row_[b] >= 0 && tb > 0.0) {
    rows.push_back(throughput_row_[b]);
    coefficients.push_back(row_scale_[b] * tb);
  }
  // No upper bound: the members' time rows keep it at most 1, and a column at a bound of its
  // own could keep an improving reduced cost at the optimum, which pricing would take for one
  // left out.
  batch.Add(0.0, lp::kInfinity, Objective(c), rows, coefficients);
}

void PairOracle::Price(std::span<const double> y, bool phase1, std::size_t max_columns,
                       lp::ColumnBatch& batch) {
  pending_.clear();
  const std::size_t n = input_.num_types();
  const auto dual = [&](int row) { return row >= 0 ? y[static_cast<std::size_t>(row)] : 0.0; };
  std::vector<Candidate> candidates;
  std::vector<MemberTerm> side_a;
  std::vector<MemberTerm> side_b;
  // g_x of every member of class c on a side with co-located steps/s t, most improving first.
  const auto terms_of = [&](std::size_t c, std::size_t j, double t, std::vector<MemberTerm>& out) {
    out.clear();
    for (const std::size_t x : classes_.members[c]) {
      const double row_dual = dual(throughput_row_[x]) * row_scale_[x];
      const double per_step =
          (phase1 ? 0.0 : type_objective_[j] + job_objective_[x]) - row_dual;
      const double time_dual = dual(time_rows_[x]);
      out.push_back(MemberTerm{direction_ * (per_step * t - time_dual),
                               std::abs(row_dual * t) + std::abs(time_dual),
                               static_cast<int>(x)});
    }
    std::sort(out.begin(), out.end(),
              [](const MemberTerm& l, const MemberTerm& r) { return l.gain > r.gain; });
  };
  for (std::size_t q = 0; q < classes_.pairs.size(); ++q) {
    const JobClasses::ClassPair& pair = classes_.pairs[q];
    const double scale = input_.jobs[classes_.members[pair.a].front()].scale_factor;
    for (std::size_t j = 0; j < n; ++j) {
      const double ta = pair.first[j];
      const double tb = pair.second[j];
      if (ta <= 0.0 && tb <= 0.0) continue;  // fixed at 0 in the whole LP
      const double capacity_term = scale * dual(capacity_rows_[j]);
      const double objective_bound =
          phase1 ? 0.0 : std::abs(type_objective_[j]) * (ta + tb);
      terms_of(pair.a, j, ta, side_a);
      const bool same = pair.a == pair.b;
      if (!same) terms_of(pair.b, j, tb, side_b);
      // Members matched by rank: the best pair first (the only one that decides whether any
      // pair of these classes improves), then disjoint runners-up for the same batch.
      const std::size_t count = same ? side_a.size() / 2 : std::min(side_a.size(), side_b.size());
      for (std::size_t r = 0; r < count; ++r) {
        const MemberTerm& x = same ? side_a[2 * r] : side_a[r];
        const MemberTerm& z = same ? side_a[2 * r + 1] : side_b[r];
        const double gain = x.gain + z.gain - direction_ * capacity_term;
        const double tolerance =
            kPricingTolerance *
            (1.0 + objective_bound + std::abs(capacity_term) + x.magnitude + z.magnitude);
        if (gain <= tolerance) break;  // ranked: no later pair of these does better
        if (added_keys_.contains(Key(x.job, z.job, static_cast<int>(j)))) continue;
        candidates.push_back(
            Candidate{gain, x.job, z.job, static_cast<int>(j), static_cast<int>(q)});
      }
    }
  }
  if (candidates.empty()) return;
  std::sort(candidates.begin(), candidates.end(),
            [](const Candidate& l, const Candidate& r) { return l.gain > r.gain; });
  // Spread over the jobs, as column generation does over rows: a pair enters only while one
  // of its members has had fewer than kMaxPerRow pairs enter this round.
  std::vector<int> taken(input_.num_jobs(), 0);
  for (const Candidate& c : candidates) {
    if (pending_.size() >= max_columns) break;
    int& ta = taken[static_cast<std::size_t>(c.a)];
    int& tb = taken[static_cast<std::size_t>(c.b)];
    if (ta >= kMaxPerRow && tb >= kMaxPerRow) continue;
    ++ta;
    ++tb;
    pending_.push_back(PairColumn{c.a, c.b, c.type, c.q, -1});
    AddColumnTo(pending_.back(), batch);
  }
}

void PairOracle::SetStartPairs(std::vector<StartPair> pairs) { start_pairs_ = std::move(pairs); }

std::vector<std::pair<int, double>> PairOracle::SeedTimes() const {
  std::vector<std::pair<int, double>> times;
  for (std::size_t s = 0; s < start_pairs_.size() && s < added_.size(); ++s) {
    times.emplace_back(added_[s].column, start_pairs_[s].time);
  }
  return times;
}

void PairOracle::Seed(lp::ColumnBatch& batch) {
  pending_.clear();
  if (!start_pairs_.empty()) {
    // The class pair of each two classes (a <= b), oriented as it.
    std::vector<int> pair_of(classes_.size() * classes_.size(), -1);
    for (std::size_t q = 0; q < classes_.pairs.size(); ++q) {
      pair_of[classes_.pairs[q].a * classes_.size() + classes_.pairs[q].b] = static_cast<int>(q);
    }
    for (const StartPair& p : start_pairs_) {
      std::size_t x = p.a;
      std::size_t z = p.b;
      if (classes_.class_of_job[x] > classes_.class_of_job[z]) std::swap(x, z);
      const int q = pair_of[classes_.class_of_job[x] * classes_.size() + classes_.class_of_job[z]];
      GAVEL_CHECK(q >= 0);
      pending_.push_back(PairColumn{static_cast<int>(x), static_cast<int>(z),
                                    static_cast<int>(p.type), q, -1});
      AddColumnTo(pending_.back(), batch);
    }
    return;
  }
  if (!seed_) return;
  const std::size_t n = input_.num_types();
  std::vector<double> best(classes_.size(), 0.0);  // a member's best steps/s, pairs included
  for (std::size_t q = 0; q < classes_.pairs.size(); ++q) {
    const JobClasses::ClassPair& pair = classes_.pairs[q];
    for (std::size_t j = 0; j < n; ++j) {
      best[pair.a] = std::max(best[pair.a], pair.first[j]);
      best[pair.b] = std::max(best[pair.b], pair.second[j]);
    }
  }
  for (std::size_t c = 0; c < classes_.size(); ++c) {
    for (std::size_t j = 0; j < n; ++j) {
      best[c] = std::max(best[c], input_.throughput(classes_.members[c].front(), j));
    }
  }
  std::vector<std::size_t> next(classes_.size(), 0);  // the next member of each class to deal
  std::vector<char> seeded(input_.num_jobs(), 0);
  const auto deal = [&](std::size_t c) -> int {
    const std::vector<std::size_t>& members = classes_.members[c];
    while (next[c] < members.size() && seeded[members[next[c]]] != 0) ++next[c];
    return next[c] < members.size() ? static_cast<int>(members[next[c]]) : -1;
  };
  for (std::size_t a = 0; a < classes_.size(); ++a) {
    // The class pair and type where a member of a and its partner progress most together.
    int best_q = -1;
    int best_type = 0;
    double best_score = 0.0;
    for (const JobClasses::PairShare& share : classes_.pairs_of_class[a]) {
      const JobClasses::ClassPair& pair = classes_.pairs[share.q];
      for (std::size_t j = 0; j < n; ++j) {
        const double score = (best[pair.a] > 0.0 ? pair.first[j] / best[pair.a] : 0.0) +
                             (best[pair.b] > 0.0 ? pair.second[j] / best[pair.b] : 0.0);
        if (score > best_score) {
          best_score = score;
          best_q = static_cast<int>(share.q);
          best_type = static_cast<int>(j);
        }
      }
    }
    if (best_q < 0) continue;
    const JobClasses::ClassPair& pair = classes_.pairs[static_cast<std::size_t>(best_q)];
    const std::size_t other = pair.a == a ? pair.b : pair.a;
    for (int x = deal(a); x >= 0; x = deal(a)) {
      seeded[static_cast<std::size_t>(x)] = 1;
      const int z = deal(other);
      if (z < 0) break;
      seeded[static_cast<std::size_t>(z)] = 1;
      // Oriented as the class pair: `a` of PairColumn is the member of pair.a.
      const bool x_first = pair.a == a;
      pending_.push_back(PairColumn{x_first ? x : z, x_first ? z : x, best_type, best_q, -1});
      AddColumnTo(pending_.back(), batch);
    }
  }
}

void PairOracle::Added(int first_column) {
  for (std::size_t s = 0; s < pending_.size(); ++s) {
    PairColumn c = pending_[s];
    c.column = first_column + static_cast<int>(s);
    added_keys_.insert(Key(c.a, c.b, c.type));
    added_.push_back(c);
  }
  pending_.clear();
}

std::vector<double> PairOracle::PairThroughputs(std::span<const double> values) const {
  std::vector<double> throughput(input_.num_jobs(), 0.0);
  for (const PairColumn& c : added_) {
    // (A column added after the solve that gave `values` was 0 in it.)
    if (static_cast<std::size_t>(c.column) >= values.size()) continue;
    const double v = std::clamp(values[static_cast<std::size_t>(c.column)], 0.0, 1.0);
    throughput[static_cast<std::size_t>(c.a)] += MemberThroughput(c, true) * v;
    throughput[static_cast<std::size_t>(c.b)] += MemberThroughput(c, false) * v;
  }
  return throughput;
}

Matrix PairOracle::PairAllocation(std::span<const double> values) const {
  Matrix allocation(input_.pairs.size(), input_.num_types());
  for (const PairColumn& c : added_) {
    if (static_cast<std::size_t>(c.column) >= values.size()) continue;  // as above
    const std::optional<std::size_t> p =
        PairIndexOf(input_, static_cast<std::size_t>(c.a), static_cast<std::size_t>(c.b));
    GAVEL_CHECK(p.has_value());  // FindPairClasses checked every pair of the classes exists
    allocation(*p, static_cast<std::size_t>(c.type)) +=
        std::max(0.0, values[static_cast<std::size_t>(c.column)]);
  }
  for (double& v : allocation.data()) v = std::clamp(v, 0.0, 1.0);
  return allocation;
}

}  // namespace gavel::policy
