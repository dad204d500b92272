#include "gavel/policy/gandiva.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "gavel/core/py_random.h"
#include "gavel/policy/common.h"

namespace gavel::policy {
namespace {

// A pair is kept while its normalised throughput is at least this (the original's
// scheduler/policies/gandiva.py).
constexpr double kKeepPairThreshold = 1.0;

class Gandiva final : public Policy {
 public:
  explicit Gandiva(const PolicyOptions& options)
      : compat_(options.compat_gavel), rng_(options.seed) {}

  Result<PolicyOutput> Allocate(const PolicyInput& input) override {
    PolicyOutput output = AllocateAsOriginal(input);
    // The original's equal shares include types where a job or pair cannot run.
    if (!compat_) ZeroUnrunnableCells(input, output);
    return output;
  }

 private:
  PolicyOutput AllocateAsOriginal(const PolicyInput& input) {
    const std::size_t m = input.num_jobs();
    const std::size_t n = input.num_types();
    PolicyOutput output;
    output.allocation = Matrix(m, n);
    output.pair_allocation = Matrix(input.pairs.size(), n);
    output.status = AllocationStatus::kHeuristic;
    if (m == 0) return output;  // the original returns before touching its state

    std::map<JobId, std::size_t> index_of;
    for (std::size_t i = 0; i < m; ++i) index_of[input.jobs[i].id] = i;
    const auto find_pair = [&](std::size_t a, std::size_t b) { return PairIndexOf(input, a, b); };

    DropStaleAssignments(input, index_of, find_pair);

    int requested = 0;
    for (const PolicyJob& job : input.jobs) requested += job.scale_factor;
    double gpus = 0.0;
    for (const double count : input.gpu_counts) gpus += count;

    if (static_cast<double>(requested) <= gpus) {
      // Everything fits: an equal share for every job, no packing.
      for (std::size_t i = 0; i < m; ++i) SetEqualShare(input, m, i, output.allocation);
      return output;
    }

    AssignUnassignedJobs(input, index_of, find_pair);
    // The combinations to schedule: every pair once and every job left on its own.
    std::set<std::size_t> singles;
    std::set<std::size_t> pairs;
    for (const auto& [id, partner] : assigned_) {
      const std::size_t job = index_of.at(id);
      if (partner) {
        pairs.insert(*find_pair(job, index_of.at(*partner)));
      } else {
        singles.insert(job);
      }
    }
    const std::size_t combinations = singles.size() + pairs.size();
    for (const std::size_t i : singles) SetEqualShare(input, combinations, i, output.allocation);
    for (const std::size_t p : pairs) {
      SetEqualShare(input, combinations, static_cast<std::size_t>(input.pairs[p].first), p,
                    output.pair_allocation);
    }
    return output;
  }

  // Row `row` of `x` gets 1/count of every type, divided by the scale factor of `job`, then
  // scaled to sum to at most 1.
  static void SetEqualShare(const PolicyInput& input, std::size_t count, std::size_t job,
                            std::size_t row, Matrix& x) {
    const double scale_factor = static_cast<double>(input.jobs[job].scale_factor);
    double row_sum = 0.0;
    for (std::size_t j = 0; j < input.num_types(); ++j) {
      x(row, j) = input.gpu_counts[j] / static_cast<double>(count) / scale_factor;
      row_sum += x(row, j);
    }
    const double scale = std::max(1.0, row_sum);
    for (std::size_t j = 0; j < input.num_types(); ++j) x(row, j) /= scale;
  }
  static void SetEqualShare(const PolicyInput& input, std::size_t count, std::size_t job,
                            Matrix& x) {
    SetEqualShare(input, count, job, job, x);
  }

  // The original's normalised throughput of a combination: 0 for a single job; for a pair,
  // Σ over every GPU type and both members of packed / isolated throughput, or 0 as soon as a
  // member's packed throughput on some type is not positive. Summed over all types, so a
  // pair is "worth keeping" (>= 1) unless it is very poor.
  template <class FindPair>
  static double NormalizedThroughput(const PolicyInput& input, std::size_t a,
                                     std::optional<std::size_t> b, const FindPair& find_pair) {
    if (!b) return 0.0;
    const std::optional<std::size_t> p = find_pair(a, *b);
    if (!p) return 0.0;  // co-located throughput unknown (the original would fail)
    const std::size_t first = static_cast<std::size_t>(input.pairs[*p].first);
    const std::size_t second = static_cast<std::size_t>(input.pairs[*p].second);
    double normalized = 0.0;
    for (std::size_t j = 0; j < input.num_types(); ++j) {
      const std::pair<std::size_t, double> members[] = {
          {first, input.pair_throughput_first(*p, j)},
          {second, input.pair_throughput_second(*p, j)}};
      for (const auto& [member, packed] : members) {
        if (packed <= 0.0 || input.throughput(member, j) <= 0.0) return 0.0;
        normalized += packed / input.throughput(member, j);
      }
    }
    return normalized;
  }

  // Forget assignments whose job or partner left, and pairs that run too
  // slowly together; single jobs are always forgotten (their normalised throughput is 0).
  template <class FindPair>
  void DropStaleAssignments(const PolicyInput& input, const std::map<JobId, std::size_t>& index_of,
                            const FindPair& find_pair) {
    std::vector<JobId> to_delete;
    for (const auto& [id, partner] : assigned_) {
      const auto job = index_of.find(id);
      const bool partner_left = partner && !index_of.contains(*partner);
      if (job == index_of.end() || partner_left) {
        to_delete.push_back(id);
        if (partner) to_delete.push_back(*partner);
        continue;
      }
      std::optional<std::size_t> partner_index;
      if (partner) partner_index = index_of.at(*partner);
      if (NormalizedThroughput(input, job->second, partner_index, find_pair) < kKeepPairThreshold) {
        to_delete.push_back(id);
        if (partner) to_delete.push_back(*partner);
      }
    }
    for (const JobId id : to_delete) assigned_.erase(id);
  }

  // The jobs not in a kept pair are paired at random (n draws of
  // random.sample(jobs, 2), pairing only equal scale factors); the rest run alone.
  template <class FindPair>
  void AssignUnassignedJobs(const PolicyInput& input, const std::map<JobId, std::size_t>& index_of,
                            const FindPair& find_pair) {
    std::vector<std::size_t> unassigned;  // job indices, in id order
    for (const auto& [id, index] : index_of) {
      if (!assigned_.contains(id)) unassigned.push_back(index);
    }
    const std::size_t tries = unassigned.size();
    for (std::size_t attempt = 0; unassigned.size() > 1 && attempt < tries; ++attempt) {
      const std::vector<std::size_t> drawn = rng_.SampleIndices(unassigned.size(), 2);
      const std::size_t a = unassigned[drawn[0]];
      const std::size_t b = unassigned[drawn[1]];
      if (input.jobs[a].scale_factor != input.jobs[b].scale_factor) continue;
      // Jobs without a known co-located throughput cannot share (the original would fail).
      if (!find_pair(a, b)) continue;
      std::erase(unassigned, a);
      std::erase(unassigned, b);
      assigned_[input.jobs[a].id] = input.jobs[b].id;
      assigned_[input.jobs[b].id] = input.jobs[a].id;
    }
    for (const std::size_t i : unassigned) assigned_[input.jobs[i].id] = std::nullopt;
  }

  bool compat_;
  PyRandom rng_;  // the original's random.Random(seed)
  // Each job's current combination: its partner, or nullopt when it runs alone.
  std::map<JobId, std::optional<JobId>> assigned_;
};

}  // namespace

std::unique_ptr<Policy> MakeGandiva(const PolicyOptions& options) {
  return std::make_unique<Gandiva>(options);
}

}  // namespace gavel::policy
