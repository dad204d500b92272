#include "gavel/decomp/job_decomposition.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>

#include "gavel/core/check.h"
#include "gavel/lp/model.h"

namespace gavel::decomp {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// A job's pure choice as a set of types, bit j for type j: all of its time spread evenly over
// them. Types that tie exactly (same gain, same priced value) are one choice, so that where
// the policy cannot tell types apart (the heterogeneity-agnostic variants, or spare capacity
// at zero price) a job's time is spread over all of them, as an interior-point solver's
// central optimum does, rather than piled on whichever comes first. 0 = idle.
using Choice = std::uint32_t;
constexpr Choice kIdle = 0;
constexpr std::size_t kMaxTypes = 32;
// The master solver's dual feasibility tolerance (Clp's default): a reduced cost below it
// does not make the master's simplex move.
constexpr double kMasterDualTolerance = 1e-7;
// The size the master's objective is scaled to (see Master).
constexpr double kMasterObjectiveSize = 1e4;

// One job's share of a column: (1 − w) of its time on choice `first`, w on `second`.
struct JobPoint {
  Choice first = kIdle;
  Choice second = kIdle;
  double w = 0.0;
};

// Calls f(type, share) for the types of `choice`, each with its share of `weight`.
template <class F>
void ForEachShare(Choice choice, double weight, const F& f) {
  if (choice == kIdle || weight <= 0.0) return;
  if ((choice & (choice - 1)) == 0) {  // one type, the usual case: weight / 1 is weight
    f(static_cast<std::size_t>(std::countr_zero(choice)), weight);
    return;
  }
  const double share = weight / std::popcount(choice);
  for (Choice rest = choice; rest != 0; rest &= rest - 1) {
    f(static_cast<std::size_t>(std::countr_zero(rest)), share);
  }
}

bool SameValue(double x, double y) {
  return std::abs(x - y) <= 1e-12 * std::max({1.0, std::abs(x), std::abs(y)});
}

// A best response of all jobs to a set of prices: a point of the set the master combines.
struct ColumnPoint {
  double t = 0.0;
  double objective = 0.0;
  std::vector<double> usage;  // Σ_i s_i x[i][j]
  std::vector<JobPoint> jobs;  // a best response, per class of identical jobs
  Matrix explicit_x;           // a given start point instead (n × k), when jobs is empty
};

// A vertex of a job's envelope: a pure choice (idle, or a set of tied types) with its
// demand-row gain and its priced value.
struct Vertex {
  double a = 0.0;
  double c = 0.0;
  Choice choice = kIdle;
};

// A class of identical jobs: its shape, and its demand's level and rate as bits (0 without a
// demand), so that classes are told apart exactly as by comparing their rows' bytes.
struct ClassKey {
  std::size_t shape = 0;
  std::uint64_t level = 0;
  std::uint64_t rate = 0;
  bool operator==(const ClassKey&) const = default;
};
struct ClassKeyHash {
  std::size_t operator()(const ClassKey& key) const {
    std::uint64_t h = key.shape * 0x9e3779b97f4a7c15ULL;
    h = (h ^ key.level) * 0xff51afd7ed558ccdULL;
    h = (h ^ key.rate) * 0xc4ceb9fe1a85ec53ULL;
    return static_cast<std::size_t>(h ^ (h >> 29));
  }
};

// A change of the one-dimensional objective's slope at t.
struct SlopeEvent {
  double t = 0.0;
  double delta = 0.0;  // <= 0
};

Status Validate(const JobProblem& p) {
  const std::size_t n = p.num_jobs();
  const std::size_t k = p.num_types();
  if (k == 0 || k > kMaxTypes) {
    return Status::InvalidArgument("job problem: 1 to 32 types needed");
  }
  if (p.allowed.size() != n * k) return Status::InvalidArgument("job problem: allowed is not n × k");
  for (double c : p.capacity) {
    if (!(c >= 0.0) || !std::isfinite(c)) {
      return Status::InvalidArgument("job problem: capacities must be finite and >= 0");
    }
  }
  for (double s : p.size) {
    if (!(s > 0.0) || !std::isfinite(s)) {
      return Status::InvalidArgument("job problem: job sizes must be finite and > 0");
    }
  }
  const bool demands = !p.has_demand.empty();
  if (demands && (p.has_demand.size() != n || p.level.size() != n || p.rate.size() != n ||
                  p.gain.rows() != n || p.gain.cols() != k)) {
    return Status::InvalidArgument("job problem: demand rows need n levels, rates and n × k gains");
  }
  if (p.profit.rows() != 0 && (p.profit.rows() != n || p.profit.cols() != k)) {
    return Status::InvalidArgument("job problem: profit is not n × k");
  }
  if (demands) {
    for (std::size_t i = 0; i < n; ++i) {
      if (!p.has_demand[i]) continue;
      if (!(p.rate[i] >= 0.0) || !std::isfinite(p.level[i])) {
        return Status::InvalidArgument("job problem: job " + std::to_string(i) +
                                       " has a negative rate or an infinite level");
      }
      for (std::size_t j = 0; j < k; ++j) {
        if (!(p.gain(i, j) >= 0.0)) {
          return Status::InvalidArgument("job problem: gains must be >= 0");
        }
      }
    }
  }
  if (!(p.t_weight >= 0.0) || !(p.t_upper >= 0.0)) {
    return Status::InvalidArgument("job problem: t's weight and upper bound must be >= 0");
  }
  return Status::Ok();
}

// The per-call machinery: precomputed job data, the pricing of one price vector, the master.
class Decomposition {
 public:
  explicit Decomposition(const JobProblem& problem)
      : p_(problem), n_(problem.num_jobs()), k_(problem.num_types()) {
    demand_.assign(n_, 0);
    if (!p_.has_demand.empty()) {
      for (std::size_t i = 0; i < n_; ++i) demand_[i] = p_.has_demand[i];
    }
    // The most each job's demand row can reach (all of its time on its best allowed type);
    // t can rise only until the first rising job reaches it. Independent of the prices.
    max_gain_.assign(n_, 0.0);
    t_high_ = p_.t_upper;
    has_t_ = p_.t_weight > 0.0;
    for (std::size_t i = 0; i < n_; ++i) {
      if (!demand_[i]) continue;
      double best = 0.0;
      for (std::size_t j = 0; j < k_; ++j) {
        if (Allowed(i, j)) best = std::max(best, p_.gain(i, j));
      }
      max_gain_[i] = best;
      if (p_.rate[i] > 0.0) {
        has_t_ = true;
        t_high_ = std::min(t_high_, (best - p_.level[i]) / p_.rate[i]);
      }
    }
    if (!has_t_) t_high_ = 0.0;
    GroupIdenticalJobs();
    vertices_.resize(shape_rep_.size() * (k_ + 1));
    vertex_count_.resize(shape_rep_.size());
    slopes_.resize(shape_rep_.size() * (k_ + 1));
    best_alone_.resize(shape_rep_.size());
    priced_.resize(k_ + 1);
  }

  // Demands that no allocation can meet even at t = 0 (with the whole cluster).
  bool TriviallyInfeasible() const {
    constexpr double kSlack = 1e-12;
    if (has_t_ && t_high_ < -kSlack * std::max(1.0, std::abs(p_.t_upper))) return true;
    for (std::size_t i = 0; i < n_; ++i) {
      if (demand_[i] && p_.level[i] > max_gain_[i] * (1.0 + kSlack) + kSlack) return true;
    }
    return false;
  }
  bool Unbounded() const { return has_t_ && std::isinf(t_high_); }

  // The best response to prices: the column that maximises objective − prices·usage.
  // Returns that maximum (the Lagrangian function minus prices·capacity).
  double Price(std::span<const double> prices, ColumnPoint& column) {
    column.jobs.resize(rep_.size());
    events_.clear();
    // A job's priced choices depend on its shape only (size, cells, gains, profits), not on
    // its demand's level and rate: one envelope per shape serves all of its classes.
    for (std::size_t e = 0; e < shape_rep_.size(); ++e) {
      const std::size_t i = shape_rep_[e];
      const double s = p_.size[i];
      std::size_t count = 0;
      for (std::size_t j = 0; j < k_; ++j) {
        if (!Allowed(i, j)) continue;
        const double g = p_.profit.rows() ? p_.profit(i, j) : 0.0;
        priced_[count++] = Vertex{demand_[i] ? p_.gain(i, j) : 0.0, g - s * prices[j],
                                  Choice{1} << j};
      }
      count = MergeTies(count);
      if (!demand_[i]) {
        // Idle unless some choice is worth strictly more.
        Vertex best{0.0, 0.0, kIdle};
        for (std::size_t q = 0; q < count; ++q) {
          if (priced_[q].c > best.c && !SameValue(priced_[q].c, 0.0)) best = priced_[q];
        }
        best_alone_[e] = best;
        vertex_count_[e] = 0;
        continue;
      }
      priced_[count++] = Vertex{0.0, 0.0, kIdle};
      BuildEnvelope(e, count);
    }
    double slope = has_t_ ? p_.t_weight : 0.0;
    double constant = 0.0;  // Σ over jobs without demand of their best value
    for (std::size_t c = 0; c < rep_.size(); ++c) {
      if (!demand_[rep_[c]]) {
        const Vertex& best = best_alone_[shape_of_[c]];
        column.jobs[c] = JobPoint{best.choice, kIdle, 0.0};
        constant += members_[c] * best.c;
        continue;
      }
      slope += AddSlopeEvents(c);
    }
    const double t = has_t_ ? BestT(slope) : 0.0;
    column.t = t;
    double value = (has_t_ ? p_.t_weight * t : 0.0) + constant;
    for (std::size_t c = 0; c < rep_.size(); ++c) {
      const std::size_t i = rep_[c];
      if (!demand_[i]) continue;
      value += members_[c] * PointAt(c, p_.level[i] + p_.rate[i] * t, column.jobs[c]);
    }
    FillUsageAndObjective(column);
    return value;
  }

  // −(right derivative of job i's best-response value) at demand d, for the envelope built
  // by the last Price call.
  double MarginalCost(std::size_t i, double d) const {
    const std::size_t e = shape_of_[class_of_[i]];
    const Vertex* v = &vertices_[e * (k_ + 1)];
    const std::size_t m = vertex_count_[e];
    for (std::size_t q = 0; q < m; ++q) {
      if (d < v[q].a - Tolerance(v[q].a)) {
        if (q == 0) return 0.0;
        return -slopes_[e * (k_ + 1) + q];
      }
    }
    return kInf;  // at its maximum: no more is possible at any price
  }

  // Completes a column from its job points: usage and objective.
  void FillUsageAndObjective(ColumnPoint& column) const {
    column.usage.assign(k_, 0.0);
    double objective = has_t_ ? p_.t_weight * column.t : 0.0;
    for (std::size_t c = 0; c < rep_.size(); ++c) {
      const std::size_t i = rep_[c];
      const JobPoint& jp = column.jobs[c];
      const double s = p_.size[i] * members_[c];
      const auto add = [&](std::size_t j, double share) {
        column.usage[j] += s * share;
        if (p_.profit.rows()) objective += members_[c] * p_.profit(i, j) * share;
      };
      ForEachShare(jp.first, 1.0 - jp.w, add);
      ForEachShare(jp.second, jp.w, add);
    }
    column.objective = objective;
    CleanUsage(column);
  }

  // Usage that is round-off of a zero (1e-16 after subtracting a job's shares) would make the
  // master's basis nearly singular, and Clp then stalls on it: snap it to zero.
  void CleanUsage(ColumnPoint& column) const {
    for (std::size_t j = 0; j < k_; ++j) {
      if (std::abs(column.usage[j]) <= 1e-12 * std::max(1.0, p_.capacity[j])) column.usage[j] = 0.0;
    }
  }

  // A column from a given point x: its t is the largest that x's demands allow (capped at
  // the upper bound). False when x misses a demand or breaks a bound, a time row or a
  // capacity.
  bool ColumnFromPoint(const Matrix& x, ColumnPoint& column) const {
    if (x.rows() != n_ || x.cols() != k_) return false;
    double t = has_t_ ? t_high_ : 0.0;
    column.usage.assign(k_, 0.0);
    column.objective = 0.0;
    for (std::size_t i = 0; i < n_; ++i) {
      double total = 0.0;
      double got = 0.0;
      for (std::size_t j = 0; j < k_; ++j) {
        const double v = std::max(0.0, x(i, j));  // (a master's weights may be −1e-17)
        if (x(i, j) < -1e-12 || (v > 0.0 && !Allowed(i, j))) return false;
        total += v;
        column.usage[j] += p_.size[i] * v;
        if (p_.profit.rows()) column.objective += p_.profit(i, j) * v;
        if (demand_[i]) got += p_.gain(i, j) * v;
      }
      if (total > 1.0 + 1e-9) return false;
      if (!demand_[i]) continue;
      const double need = p_.level[i];
      if (got < need - Tolerance(need)) return false;
      if (p_.rate[i] > 0.0) t = std::min(t, std::max(0.0, (got - need) / p_.rate[i]));
    }
    // Points a master combined keep capacity only to its primal tolerance (Clp: 1e-7).
    for (std::size_t j = 0; j < k_; ++j) {
      if (column.usage[j] > p_.capacity[j] + 1e-7 * std::max(1.0, p_.capacity[j])) return false;
    }
    CleanUsage(column);
    column.t = has_t_ ? std::max(0.0, t) : 0.0;
    if (has_t_) column.objective += p_.t_weight * column.t;
    column.jobs.clear();
    column.explicit_x = x;
    for (double& v : column.explicit_x.data()) v = std::max(0.0, v);
    return true;
  }

  // x of a convex combination of columns.
  Matrix Combine(const std::vector<ColumnPoint>& columns, std::span<const double> weights) const {
    Matrix x(n_, k_, 0.0);
    for (std::size_t c = 0; c < columns.size(); ++c) {
      const double lambda = weights[c];
      if (lambda <= 0.0) continue;
      if (columns[c].jobs.empty()) {
        const std::vector<double>& given = columns[c].explicit_x.data();
        for (std::size_t e = 0; e < given.size(); ++e) x.data()[e] += lambda * given[e];
        continue;
      }
      for (std::size_t i = 0; i < n_; ++i) {
        const JobPoint& jp = columns[c].jobs[class_of_[i]];
        const auto add = [&](std::size_t j, double share) { x(i, j) += lambda * share; };
        ForEachShare(jp.first, 1.0 - jp.w, add);
        ForEachShare(jp.second, jp.w, add);
      }
    }
    return x;
  }

  bool HasDemand(std::size_t i) const { return demand_[i] != 0; }

 private:
  static double Tolerance(double scale) { return 1e-12 * std::max(1.0, std::abs(scale)); }
  bool Allowed(std::size_t i, std::size_t j) const { return p_.allowed[i * k_ + j] != 0; }

  // Jobs with identical rows (size, cells, gains, profits, demand) have identical best
  // responses: they are priced once, as a class (real job mixes repeat a few dozen models).
  // Classes that differ only in their demand's level and rate share a shape: the same priced
  // choices and envelope (a queue of thousands of jobs, each with its own remaining work, has
  // a few dozen shapes), built once per pricing.
  void GroupIdenticalJobs() {
    class_of_.resize(n_);
    std::unordered_map<std::string, std::size_t> shape_index;
    // A class is its shape plus its demand's level and rate (their bits): a fixed-size key,
    // where a string key cost an allocation per job (most jobs are classes of their own).
    std::unordered_map<ClassKey, std::size_t, ClassKeyHash> class_index;
    class_index.reserve(n_);
    std::string key;
    const auto append = [&key](double v) {
      char bytes[sizeof v];
      std::memcpy(bytes, &v, sizeof v);
      key.append(bytes, sizeof v);
    };
    for (std::size_t i = 0; i < n_; ++i) {
      key.clear();
      append(p_.size[i]);
      key.push_back(static_cast<char>(demand_[i]));
      for (std::size_t j = 0; j < k_; ++j) {
        key.push_back(static_cast<char>(Allowed(i, j)));
        if (demand_[i]) append(p_.gain(i, j));
        if (p_.profit.rows()) append(p_.profit(i, j));
      }
      const auto [shape, new_shape] = shape_index.try_emplace(key, shape_rep_.size());
      if (new_shape) shape_rep_.push_back(i);
      ClassKey class_key{shape->second, 0, 0};
      if (demand_[i]) {
        class_key.level = std::bit_cast<std::uint64_t>(p_.level[i]);
        class_key.rate = std::bit_cast<std::uint64_t>(p_.rate[i]);
      }
      const auto [it, added] = class_index.try_emplace(class_key, rep_.size());
      if (added) {
        rep_.push_back(i);
        members_.push_back(0.0);
        shape_of_.push_back(shape->second);
      }
      class_of_[i] = it->second;
      members_[it->second] += 1.0;
    }
  }

  // Merges the choices in priced_[0, count) that tie exactly (same gain and value) into one;
  // returns the new count.
  std::size_t MergeTies(std::size_t count) {
    std::size_t kept = 0;
    for (std::size_t q = 0; q < count; ++q) {
      bool merged = false;
      for (std::size_t r = 0; r < kept && !merged; ++r) {
        if (SameValue(priced_[r].a, priced_[q].a) && SameValue(priced_[r].c, priced_[q].c)) {
          priced_[r].choice |= priced_[q].choice;
          merged = true;
        }
      }
      if (!merged) priced_[kept++] = priced_[q];
    }
    return kept;
  }

  // The part of the upper concave envelope of priced_[0, count) from its highest point
  // (largest gain among ties) to the right: the job's best value as its demand rises.
  void BuildEnvelope(std::size_t e, std::size_t count) {
    Vertex* out = &vertices_[e * (k_ + 1)];
    std::size_t peak = 0;
    for (std::size_t q = 1; q < count; ++q) {
      const Vertex& v = priced_[q];
      const Vertex& b = priced_[peak];
      if (v.c > b.c || (v.c == b.c && v.a > b.a)) peak = q;
    }
    double* vertex_slope = &slopes_[e * (k_ + 1)];
    std::size_t m = 0;
    vertex_slope[0] = 0.0;
    out[m++] = priced_[peak];
    for (;;) {
      const Vertex& cur = out[m - 1];
      std::size_t next = count;
      double best_slope = -kInf;
      for (std::size_t q = 0; q < count; ++q) {
        const Vertex& v = priced_[q];
        if (v.a <= cur.a) continue;
        const double slope = (v.c - cur.c) / (v.a - cur.a);
        if (slope > best_slope || (slope == best_slope && next < count && v.a > priced_[next].a)) {
          best_slope = slope;
          next = q;
        }
      }
      if (next == count) break;
      vertex_slope[m] = best_slope;  // (out[m].c − out[m−1].c) / (out[m].a − out[m−1].a)
      out[m++] = priced_[next];
    }
    vertex_count_[e] = m;
  }

  // Adds class c's slope changes over t > 0 to events_ (for all its jobs); returns its slope
  // contribution at t = 0+ (members × rate × the envelope's right derivative at the level).
  double AddSlopeEvents(std::size_t c) {
    const std::size_t i = rep_[c];
    const double r = p_.rate[i];
    if (r <= 0.0) return 0.0;
    const double l = p_.level[i];
    const double members = members_[c];
    const std::size_t e = shape_of_[c];
    const Vertex* v = &vertices_[e * (k_ + 1)];
    const double* segment_slope = &slopes_[e * (k_ + 1)];
    const std::size_t m = vertex_count_[e];
    std::size_t q = 0;
    while (q < m && !(v[q].a > l)) ++q;
    if (q == m) return 0.0;
    const double initial = members * r * segment_slope[q];
    for (; q + 1 < m; ++q) {
      // (the envelope's gains rise, so every later vertex lies above l too)
      events_.push_back(
          SlopeEvent{(v[q].a - l) / r, members * r * (segment_slope[q + 1] - segment_slope[q])});
    }
    return initial;
  }

  // The smallest t in [0, t_high] where the right slope, starting at `slope`, drops to <= 0:
  // a weighted selection over the events, linear time on average.
  double BestT(double slope) {
    if (slope <= 0.0) return 0.0;
    std::size_t lo = 0, hi = events_.size();
    // Invariant: `slope` is the slope just after every event before lo (all earlier in t than
    // those in [lo, hi)), and it is still positive.
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo) / 2;
      std::nth_element(events_.begin() + static_cast<std::ptrdiff_t>(lo),
                       events_.begin() + static_cast<std::ptrdiff_t>(mid),
                       events_.begin() + static_cast<std::ptrdiff_t>(hi),
                       [](const SlopeEvent& a, const SlopeEvent& b) { return a.t < b.t; });
      double through_mid = 0.0;
      for (std::size_t e = lo; e <= mid; ++e) through_mid += events_[e].delta;
      if (slope + through_mid > 0.0) {
        slope += through_mid;
        lo = mid + 1;
      } else if (slope + through_mid - events_[mid].delta > 0.0) {
        return std::min(events_[mid].t, t_high_);
      } else {
        hi = mid;
      }
    }
    return t_high_;
  }

  // Class c's best point for demand d (envelope from the last Price call); returns its value
  // per job.
  double PointAt(std::size_t c, double d, JobPoint& out) const {
    const Vertex* v = &vertices_[shape_of_[c] * (k_ + 1)];
    const std::size_t m = vertex_count_[shape_of_[c]];
    if (d <= v[0].a) {
      out = JobPoint{v[0].choice, kIdle, 0.0};
      return v[0].c;
    }
    for (std::size_t q = 1; q < m; ++q) {
      if (d <= v[q].a) {
        const double w = (d - v[q - 1].a) / (v[q].a - v[q - 1].a);
        out = JobPoint{v[q - 1].choice, v[q].choice, w};
        return (1.0 - w) * v[q - 1].c + w * v[q].c;
      }
    }
    out = JobPoint{v[m - 1].choice, kIdle, 0.0};
    return v[m - 1].c;
  }

  const JobProblem& p_;
  std::size_t n_, k_;
  std::vector<std::uint8_t> demand_;
  std::vector<double> max_gain_;
  bool has_t_ = false;
  double t_high_ = 0.0;
  std::vector<std::size_t> class_of_;  // per job: its class of identical jobs
  std::vector<std::size_t> rep_;       // per class: its first job
  std::vector<double> members_;        // per class: how many jobs
  std::vector<std::size_t> shape_of_;  // per class: its shape (rows without level and rate)
  std::vector<std::size_t> shape_rep_;  // per shape: its first job
  std::vector<Vertex> vertices_;  // shapes × (k + 1) envelopes of the last pricing
  std::vector<std::size_t> vertex_count_;
  std::vector<double> slopes_;  // shapes × (k + 1): the slope left of each vertex (0 at the first)
  std::vector<Vertex> best_alone_;  // per shape without demand: its best choice of the last pricing
  std::vector<Vertex> priced_;    // scratch: one job's priced points
  std::vector<SlopeEvent> events_;
};

// The master problem: maximise Σ λ_c obj_c s.t. Σ λ_c usage_c <= capacity, Σ λ_c = 1.
//
// The objective is scaled so that the optimum is about kMasterObjectiveSize: the backend's
// dual tolerance (Clp: 1e-7, absolute) then stands for a relative precision of about 1e-11,
// and the convergence test, which trusts the master's duals, can ask for 1e-10.
class Master {
 public:
  // `typical_objective`: the order of magnitude of the optimum (an upper bound will do).
  Master(lp::Solver& solver, const std::vector<double>& capacity, double typical_objective)
      : solver_(solver),
        capacity_(capacity),
        k_(capacity.size()),
        objective_scale_(typical_objective > 0.0 && std::isfinite(typical_objective)
                             ? kMasterObjectiveSize / typical_objective
                             : 1.0) {}

  Status Load(const std::vector<ColumnPoint>& columns) {
    lp::Model model(lp::Sense::kMaximize);
    for (const ColumnPoint& c : columns) {
      model.AddColumn(0.0, lp::kInfinity, c.objective * objective_scale_);
    }
    std::vector<int> cols(columns.size());
    std::vector<double> coefs(columns.size());
    for (std::size_t c = 0; c < columns.size(); ++c) cols[c] = static_cast<int>(c);
    for (std::size_t j = 0; j < k_; ++j) {
      for (std::size_t c = 0; c < columns.size(); ++c) coefs[c] = columns[c].usage[j];
      model.AddRow(-lp::kInfinity, capacity_[j], cols, coefs);
    }
    std::fill(coefs.begin(), coefs.end(), 1.0);
    model.AddRow(1.0, 1.0, cols, coefs);
    GAVEL_ASSIGN_OR_RETURN(session_, solver_.Load(model));
    return Status::Ok();
  }

  void Add(const ColumnPoint& column) {
    rows_.resize(k_ + 1);
    coefs_.resize(k_ + 1);
    for (std::size_t j = 0; j <= k_; ++j) {
      rows_[j] = static_cast<int>(j);
      coefs_[j] = j < k_ ? column.usage[j] : 1.0;
    }
    session_->AddColumn(0.0, lp::kInfinity, column.objective * objective_scale_, rows_, coefs_);
  }

  // The solution in the problem's own objective units.
  Result<lp::Solution> Solve() {
    GAVEL_ASSIGN_OR_RETURN(lp::Solution solution, session_->Solve());
    solution.objective /= objective_scale_;
    for (double& d : solution.row_duals) d /= objective_scale_;
    for (double& d : solution.reduced_costs) d /= objective_scale_;
    return solution;
  }

  // How far, in the problem's objective units, a reduced cost may be off (the backend's dual
  // tolerance, unscaled).
  double dual_precision() const { return kMasterDualTolerance / objective_scale_; }

 private:
  lp::Solver& solver_;
  const std::vector<double>& capacity_;
  std::size_t k_;
  double objective_scale_;
  std::unique_ptr<lp::Session> session_;
  std::vector<int> rows_;
  std::vector<double> coefs_;
};

Result<JobSolution> Run(const JobProblem& problem, Decomposition& decomposition,
                        lp::Solver& master_solver, const JobSolveOptions& options,
                        std::vector<ColumnPoint> columns);

// Phase one: a point that meets every demand at t = 0, from maximising τ <= 1 subject to
// gain·x >= τ·l (the same kind of problem, started from the idle point).
Result<std::optional<Matrix>> FeasiblePoint(const JobProblem& problem, lp::Solver& master_solver,
                                            const JobSolveOptions& options) {
  JobProblem phase1;
  phase1.capacity = problem.capacity;
  phase1.size = problem.size;
  phase1.allowed = problem.allowed;
  phase1.gain = problem.gain;
  phase1.has_demand.assign(problem.num_jobs(), 0);
  phase1.level.assign(problem.num_jobs(), 0.0);
  phase1.rate.assign(problem.num_jobs(), 0.0);
  for (std::size_t i = 0; i < problem.num_jobs(); ++i) {
    if (problem.has_demand[i] && problem.level[i] > 0.0) {
      phase1.has_demand[i] = 1;
      phase1.rate[i] = problem.level[i];
    }
  }
  phase1.t_weight = 1.0;
  phase1.t_upper = 1.0;
  JobSolveOptions phase1_options = options;
  phase1_options.start_points.clear();
  Decomposition decomposition(phase1);
  ColumnPoint start;
  GAVEL_CHECK(
      decomposition.ColumnFromPoint(Matrix(problem.num_jobs(), problem.num_types(), 0.0), start));
  GAVEL_ASSIGN_OR_RETURN(
      JobSolution found,
      Run(phase1, decomposition, master_solver, phase1_options, {std::move(start)}));
  if (found.outcome != JobOutcome::kOptimal || found.t < 1.0 - 1e-9) return std::optional<Matrix>{};
  return std::optional<Matrix>(std::move(found.x));
}

Result<JobSolution> Run(const JobProblem& problem, Decomposition& decomposition,
                        lp::Solver& master_solver, const JobSolveOptions& options,
                        std::vector<ColumnPoint> columns) {
  const std::size_t k = problem.num_types();
  ColumnPoint candidate;
  // Unpriced capacity gives an upper bound on the optimum: the master's objective scale.
  const std::vector<double> no_prices(k, 0.0);
  double typical = std::abs(decomposition.Price(no_prices, candidate));
  for (const ColumnPoint& c : columns) typical = std::max(typical, std::abs(c.objective));
  // That best response is a point of the master's set too: it saves the first iteration.
  columns.push_back(candidate);
  Master master(master_solver, problem.capacity, typical);
  GAVEL_RETURN_IF_ERROR(master.Load(columns));

  JobSolution result;
  std::vector<double> prices(k, 0.0);
  int reloads = 0;
  for (int iteration = 1;; ++iteration) {
    GAVEL_ASSIGN_OR_RETURN(const lp::Solution master_solution, master.Solve());
    if (master_solution.outcome != lp::Outcome::kOptimal) {
      return Status::Internal(std::string("job decomposition: master problem ended ") +
                              lp::OutcomeName(master_solution.outcome));
    }
    // Capacity prices are >= 0 in a maximisation with <= rows; the sign convention of the
    // backend does not matter, only the magnitude. The convexity dual follows from strong
    // duality of the master: value = prices·capacity + σ.
    double priced_capacity = 0.0;
    for (std::size_t j = 0; j < k; ++j) {
      prices[j] = std::abs(master_solution.row_duals[j]);
      priced_capacity += prices[j] * problem.capacity[j];
    }
    const double value = master_solution.objective;
    const double sigma = value - priced_capacity;
    const double best = decomposition.Price(prices, candidate);
    const double gap = best - sigma;  // Lagrangian bound − master value
    // A column the master already holds can price out slightly positive by the master
    // solver's own dual tolerance (Clp: 1e-7): that is convergence too, at that tolerance.
    const bool repeated = candidate.objective == columns.back().objective &&
                          candidate.usage == columns.back().usage;
    const double scale = std::max(1.0, std::abs(value));
    const bool converged = gap <= options.relative_gap * scale ||
                           (repeated && gap <= 10.0 * master.dual_precision());
    if (!converged && iteration >= options.max_iterations) {
      return Status::Internal("job decomposition: no convergence in " +
                              std::to_string(options.max_iterations) + " iterations (gap " +
                              std::to_string(gap) + ")");
    }
    if (converged) {
      // The master's weights within its tolerances: none below 0, summing to 1.
      std::vector<double> weights = master_solution.values;
      double total = 0.0;
      for (double& w : weights) total += (w = std::max(0.0, w));
      for (double& w : weights) w /= total;
      result.x = decomposition.Combine(columns, weights);
      double t = 0.0;
      for (std::size_t c = 0; c < columns.size(); ++c) t += weights[c] * columns[c].t;
      result.t = t;
      result.objective = value;
      result.prices = prices;
      result.iterations = iteration;
      result.marginal_cost.assign(problem.num_jobs(), 0.0);
      for (std::size_t i = 0; i < problem.num_jobs(); ++i) {
        if (!decomposition.HasDemand(i)) continue;
        result.marginal_cost[i] =
            decomposition.MarginalCost(i, problem.level[i] + problem.rate[i] * t);
      }
      return result;
    }
    // A warm re-solve that ignores an improving column (a degenerate, badly conditioned
    // basis) shows as the same candidate again: reload the master from scratch then.
    if (repeated) {
      GAVEL_RETURN_IF_ERROR(master.Load(columns));
      ++reloads;
      if (reloads > 3) {
        return Status::Internal("job decomposition: the master problem stalls");
      }
      continue;
    }
    master.Add(candidate);
    columns.push_back(candidate);
  }
}

}  // namespace

Result<JobSolution> SolveJobProblem(const JobProblem& problem, lp::Solver& master_solver,
                                    const JobSolveOptions& options) {
  GAVEL_RETURN_IF_ERROR(Validate(problem));
  Decomposition decomposition(problem);
  if (decomposition.TriviallyInfeasible()) {
    JobSolution infeasible;
    infeasible.outcome = JobOutcome::kInfeasible;
    return infeasible;
  }
  if (decomposition.Unbounded()) {
    JobSolution unbounded;
    unbounded.outcome = JobOutcome::kUnbounded;
    return unbounded;
  }
  std::vector<ColumnPoint> columns;
  for (const Matrix& x : options.start_points) {
    ColumnPoint column;
    if (decomposition.ColumnFromPoint(x, column)) columns.push_back(std::move(column));
  }
  if (columns.empty()) {
    ColumnPoint idle;
    const Matrix zero(problem.num_jobs(), problem.num_types(), 0.0);
    if (decomposition.ColumnFromPoint(zero, idle)) {
      columns.push_back(std::move(idle));
    } else {
      GAVEL_ASSIGN_OR_RETURN(std::optional<Matrix> feasible,
                             FeasiblePoint(problem, master_solver, options));
      ColumnPoint column;
      if (!feasible || !decomposition.ColumnFromPoint(*feasible, column)) {
        JobSolution infeasible;
        infeasible.outcome = JobOutcome::kInfeasible;
        return infeasible;
      }
      columns.push_back(std::move(column));
    }
  }
  return Run(problem, decomposition, master_solver, options, std::move(columns));
}

}  // namespace gavel::decomp
