#include "gavel/policy/packed_classes.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <span>
#include <utility>

#include "gavel/core/check.h"

namespace gavel::policy {
namespace {

constexpr std::size_t kNoPair = static_cast<std::size_t>(-1);

// Row `row` of m, in place (FindInterchangeableJobs looks at every job pair's rows).
std::span<const double> RowSpan(const Matrix& m, std::size_t row) {
  GAVEL_CHECK(row < m.rows());
  return std::span<const double>(m.data()).subspan(row * m.cols(), m.cols());
}

}  // namespace

std::optional<JobClasses> FindInterchangeableJobs(const PolicyInput& input,
                                                  const Matrix& throughput, bool by_entity,
                                                  bool by_weight, const Matrix* extra_key) {
  const std::size_t m = input.num_jobs();
  GAVEL_CHECK(extra_key == nullptr || extra_key->rows() == m);
  const std::size_t extra = extra_key == nullptr ? 0 : extra_key->cols();
  JobClasses classes;
  std::vector<std::size_t> class_of_job(m, 0);
  std::map<std::vector<double>, std::size_t> class_of_key;
  std::vector<double> key(throughput.cols() + 3 + extra);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < throughput.cols(); ++j) key[j] = throughput(i, j);
    key[throughput.cols()] = input.jobs[i].scale_factor;
    key[throughput.cols() + 1] = by_weight ? input.jobs[i].priority_weight : 0.0;
    key[throughput.cols() + 2] = by_entity ? input.jobs[i].entity : 0;
    for (std::size_t e = 0; e < extra; ++e) key[throughput.cols() + 3 + e] = (*extra_key)(i, e);
    const auto found = class_of_key.find(key);
    const std::size_t c = found == class_of_key.end() ? class_of_key.size() : found->second;
    if (found == class_of_key.end()) class_of_key[key] = c;
    class_of_job[i] = c;
  }
  std::vector<std::vector<std::size_t>> members(class_of_key.size());
  for (std::size_t i = 0; i < m; ++i) members[class_of_job[i]].push_back(i);
  classes.class_of_job = std::move(class_of_job);
  classes.members = std::move(members);
  const std::size_t k = classes.size();
  if (2 * k > m) return std::nullopt;

  // Every job pair's class pair; all must agree, and every pair of members must be there.
  std::vector<std::size_t> index(k * k, kNoPair);
  std::vector<std::uint64_t> count;
  for (std::size_t p = 0; p < input.pairs.size(); ++p) {
    std::size_t a = classes.class_of_job[static_cast<std::size_t>(input.pairs[p].first)];
    std::size_t b = classes.class_of_job[static_cast<std::size_t>(input.pairs[p].second)];
    std::span<const double> first = RowSpan(input.pair_throughput_first, p);
    std::span<const double> second = RowSpan(input.pair_throughput_second, p);
    if (a > b) {
      std::swap(a, b);
      std::swap(first, second);
    }
    if (a == b && !std::ranges::equal(first, second)) return std::nullopt;
    std::size_t& slot = index[a * k + b];
    if (slot == kNoPair) {
      slot = classes.pairs.size();
      classes.pairs.push_back(JobClasses::ClassPair{a, b, {first.begin(), first.end()},
                                                    {second.begin(), second.end()}});
      count.push_back(0);
    } else if (!std::ranges::equal(classes.pairs[slot].first, first) ||
               !std::ranges::equal(classes.pairs[slot].second, second)) {
      return std::nullopt;
    }
    ++count[slot];
  }
  for (std::size_t q = 0; q < classes.pairs.size(); ++q) {
    const std::uint64_t na = classes.members[classes.pairs[q].a].size();
    const std::uint64_t nb = classes.members[classes.pairs[q].b].size();
    const std::uint64_t expected = classes.pairs[q].a == classes.pairs[q].b ? na * (na - 1) / 2
                                                                            : na * nb;
    if (count[q] != expected) return std::nullopt;
  }
  classes.pairs_of_class.resize(k);
  for (std::size_t q = 0; q < classes.pairs.size(); ++q) {
    const std::size_t a = classes.pairs[q].a;
    const std::size_t b = classes.pairs[q].b;
    const auto share = [&](std::size_t c) {
      return (a == b ? 2.0 : 1.0) / static_cast<double>(classes.members[c].size());
    };
    classes.pairs_of_class[a].push_back({q, share(a)});
    if (b != a) classes.pairs_of_class[b].push_back({q, share(b)});
  }
  return classes;
}

double RoundForClassKey(double x) {
  if (x == 0.0 || !std::isfinite(x)) return x;
  const double quantum = std::ldexp(1.0, std::ilogb(x) - 40);
  return std::round(x / quantum) * quantum;
}

void SpreadPairTime(const PolicyInput& input, const JobClasses& classes, std::size_t p,
                    std::size_t type, double total, Matrix& pair_allocation) {
  if (total <= 0.0) return;
  const JobClasses::ClassPair& pair = classes.pairs[p];
  const std::vector<std::size_t>& a = classes.members[pair.a];
  const std::vector<std::size_t>& b = classes.members[pair.b];
  const auto add = [&](std::size_t x, std::size_t y, double time) {
    // FindInterchangeableJobs has checked that every two members of the classes are a pair.
    const std::optional<std::size_t> pair_index = PairIndexOf(input, x, y);
    GAVEL_CHECK(pair_index.has_value());
    pair_allocation(*pair_index, type) += time;
  };
  if (pair.a == pair.b) {
    // A ring: each member shares with its two neighbours, total/|a| each (one pair of two).
    if (a.size() == 2) {
      add(a[0], a[1], total);
      return;
    }
    for (std::size_t i = 0; i < a.size(); ++i) add(a[i], a[(i + 1) % a.size()], total / static_cast<double>(a.size()));
    return;
  }
  // North-west corner: row sums total/|a|, column sums total/|b|.
  const double row_share = total / static_cast<double>(a.size());
  const double col_share = total / static_cast<double>(b.size());
  std::size_t i = 0;
  std::size_t k = 0;
  double row_left = row_share;
  double col_left = col_share;
  while (i < a.size() && k < b.size()) {
    const double amount = std::min(row_left, col_left);
    if (amount > 0.0) add(a[i], b[k], amount);
    row_left -= amount;
    col_left -= amount;
    // Advance the side that ran out (the row on a tie; the last step absorbs round-off).
    if (row_left <= col_left) {
      ++i;
      row_left = row_share;
      if (col_left <= 1e-15 * col_share) {
        ++k;
        col_left = col_share;
      }
    } else {
      ++k;
      col_left = col_share;
    }
  }
}

double MemberPairThroughput(const JobClasses& classes, std::size_t a,
                            const JobClasses::PairShare& pair, std::size_t type) {
  const JobClasses::ClassPair& both = classes.pairs[pair.q];
  return (both.a == a ? both.first[type] : both.second[type]) * pair.share;
}

BaseProblem BuildClassBaseProblem(const PolicyInput& input, const JobClasses& classes,
                                  const Matrix& throughput, lp::Sense sense, bool lazy_pairs) {
  const std::size_t n = input.num_types();
  const std::size_t k = classes.size();
  const std::size_t q_count = classes.pairs.size();
  BaseProblem problem{lp::Model(sense), {}, {}, {}, {}, {}};
  problem.job_columns.resize(k * n);
  problem.pair_columns.resize(q_count * n);
  for (std::size_t a = 0; a < k; ++a) {
    const std::size_t i = classes.members[a].front();
    for (std::size_t j = 0; j < n; ++j) {
      problem.job_columns[a * n + j] = problem.model.AddColumn(0.0, throughput(i, j) > 0.0 ? 1.0 : 0.0);
    }
  }
  for (std::size_t q = 0; q < q_count; ++q) {
    const JobClasses::ClassPair& pair = classes.pairs[q];
    for (std::size_t j = 0; j < n; ++j) {
      const bool runnable = pair.first[j] > 0.0 || pair.second[j] > 0.0;
      problem.pair_columns[q * n + j] = problem.model.AddColumn(0.0, runnable ? lp::kInfinity : 0.0);
      // n_classes²/2 of them, few used: column generation prices them (lazy).
      if (lazy_pairs) problem.model.SetColumnLazy(problem.pair_columns[q * n + j], true);
    }
  }
  const auto scale_of = [&](std::size_t a) {
    return static_cast<double>(input.jobs[classes.members[a].front()].scale_factor);
  };
  std::vector<int> cols;
  std::vector<double> coefs;
  for (std::size_t j = 0; j < n; ++j) {
    cols.clear();
    coefs.clear();
    for (std::size_t a = 0; a < k; ++a) {
      cols.push_back(problem.job_columns[a * n + j]);
      coefs.push_back(static_cast<double>(classes.members[a].size()) * scale_of(a));
    }
    for (std::size_t q = 0; q < q_count; ++q) {
      cols.push_back(problem.pair_columns[q * n + j]);
      coefs.push_back(scale_of(classes.pairs[q].a));
    }
    problem.capacity_rows.push_back(
        problem.model.AddRow(-lp::kInfinity, input.gpu_counts[j], cols, coefs));
  }
  for (std::size_t a = 0; a < k; ++a) {
    cols.clear();
    coefs.clear();
    for (std::size_t j = 0; j < n; ++j) {
      cols.push_back(problem.job_columns[a * n + j]);
      coefs.push_back(1.0);
    }
    for (const auto& [q, share] : classes.pairs_of_class[a]) {
      for (std::size_t j = 0; j < n; ++j) {
        cols.push_back(problem.pair_columns[q * n + j]);
        coefs.push_back(share);
      }
    }
    problem.time_rows.push_back(problem.model.AddRow(-lp::kInfinity, 1.0, cols, coefs));
  }
  return problem;
}

std::vector<std::vector<ThroughputTerm>> ClassThroughputTerms(const PolicyInput& input,
                                                              const JobClasses& classes,
                                                              const BaseProblem& problem,
                                                              const Matrix& throughput) {
  const std::size_t n = input.num_types();
  std::vector<std::vector<ThroughputTerm>> terms(classes.size());
  for (std::size_t a = 0; a < classes.size(); ++a) {
    const std::size_t i = classes.members[a].front();
    for (std::size_t j = 0; j < n; ++j) {
      if (throughput(i, j) > 0.0) terms[a].push_back({problem.job_columns[a * n + j], throughput(i, j)});
    }
    for (const JobClasses::PairShare& pair : classes.pairs_of_class[a]) {
      for (std::size_t j = 0; j < n; ++j) {
        const double t = MemberPairThroughput(classes, a, pair, j);
        if (t > 0.0) terms[a].push_back({problem.pair_columns[pair.q * n + j], t});
      }
    }
  }
  return terms;
}

PolicyOutput SpreadClassAllocation(const PolicyInput& input, const JobClasses& classes,
                                   const BaseProblem& problem, const lp::Solution& solution) {
  const std::size_t n = input.num_types();
  PolicyOutput output;
  output.allocation = Matrix(input.num_jobs(), n);
  output.pair_allocation = Matrix(input.pairs.size(), n);
  output.status = AllocationStatus::kOptimal;
  const auto value = [&](int column) {
    return std::max(0.0, solution.values[static_cast<std::size_t>(column)]);
  };
  for (std::size_t a = 0; a < classes.size(); ++a) {
    for (const std::size_t i : classes.members[a]) {
      for (std::size_t j = 0; j < n; ++j) {
        output.allocation(i, j) = std::min(1.0, value(problem.job_columns[a * n + j]));
      }
    }
  }
  for (std::size_t q = 0; q < classes.pairs.size(); ++q) {
    for (std::size_t j = 0; j < n; ++j) {
      SpreadPairTime(input, classes, q, j, value(problem.pair_columns[q * n + j]),
                     output.pair_allocation);
    }
  }
  for (double& v : output.pair_allocation.data()) v = std::clamp(v, 0.0, 1.0);
  return output;
}

}  // namespace gavel::policy
