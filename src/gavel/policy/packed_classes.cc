#include "gavel/policy/packed_classes.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>

#include "gavel/core/check.h"

namespace gavel::policy {
namespace {

constexpr std::size_t kNoPair = static_cast<std::size_t>(-1);

// Index of the pair of jobs {a, b} in input.pairs (sorted by (first, second)).
std::size_t PairIndex(const PolicyInput& input, std::size_t a, std::size_t b) {
  const JobPair key{static_cast<int>(std::min(a, b)), static_cast<int>(std::max(a, b))};
  const auto it = std::lower_bound(
      input.pairs.begin(), input.pairs.end(), key, [](const JobPair& x, const JobPair& y) {
        return x.first != y.first ? x.first < y.first : x.second < y.second;
      });
  GAVEL_CHECK(it != input.pairs.end() && it->first == key.first && it->second == key.second);
  return static_cast<std::size_t>(it - input.pairs.begin());
}

std::vector<double> RowOf(const Matrix& m, std::size_t row) {
  std::vector<double> out(m.cols());
  for (std::size_t j = 0; j < m.cols(); ++j) out[j] = m(row, j);
  return out;
}

}  // namespace

std::optional<JobClasses> FindInterchangeableJobs(const PolicyInput& input,
                                                  const Matrix& throughput) {
  const std::size_t m = input.num_jobs();
  JobClasses classes;
  std::vector<std::size_t> class_of_job(m, 0);
  std::map<std::vector<double>, std::size_t> class_of_key;
  std::vector<double> key(throughput.cols() + 2);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < throughput.cols(); ++j) key[j] = throughput(i, j);
    key[throughput.cols()] = input.jobs[i].scale_factor;
    key[throughput.cols() + 1] = input.jobs[i].priority_weight;
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
    std::vector<double> first = RowOf(input.pair_throughput_first, p);
    std::vector<double> second = RowOf(input.pair_throughput_second, p);
    if (a > b) {
      std::swap(a, b);
      std::swap(first, second);
    }
    if (a == b && first != second) return std::nullopt;
    std::size_t& slot = index[a * k + b];
    if (slot == kNoPair) {
      slot = classes.pairs.size();
      classes.pairs.push_back(JobClasses::ClassPair{a, b, std::move(first), std::move(second)});
      count.push_back(0);
    } else if (classes.pairs[slot].first != first || classes.pairs[slot].second != second) {
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
  return classes;
}

void SpreadPairTime(const PolicyInput& input, const JobClasses& classes, std::size_t p,
                    std::size_t type, double total, Matrix& pair_allocation) {
  if (total <= 0.0) return;
  const JobClasses::ClassPair& pair = classes.pairs[p];
  const std::vector<std::size_t>& a = classes.members[pair.a];
  const std::vector<std::size_t>& b = classes.members[pair.b];
  const auto add = [&](std::size_t x, std::size_t y, double time) {
    pair_allocation(PairIndex(input, x, y), type) += time;
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

}  // namespace gavel::policy
