#include "gavel/policy/fifo.h"

#include <algorithm>
#include <cstddef>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gavel/core/py_random.h"

namespace gavel::policy {
namespace {

// The original's packing threshold: a queued job shares a running job's GPUs only when the
// two together do more than 1.5 jobs' worth of work (normalised throughputs summed).
constexpr double kPackingThreshold = 1.5;

std::optional<std::size_t> JobIndexOf(const PolicyInput& input, JobId id) {
  const auto it = std::lower_bound(input.jobs.begin(), input.jobs.end(), id,
                                   [](const PolicyJob& job, JobId key) { return job.id < key; });
  if (it == input.jobs.end() || it->id != id) return std::nullopt;
  return static_cast<std::size_t>(it - input.jobs.begin());
}

// One entry of this call's assignment: a job, or (packed mode) a job and the queued job
// that shares its GPUs, on one GPU type.
struct Assigned {
  std::size_t job = 0;
  std::optional<std::size_t> partner;
  std::size_t type = 0;
};

class Fifo final : public Policy {
 public:
  Fifo(Variant variant, const PolicyOptions& options)
      : variant_(variant), compat_(options.compat_gavel), rng_(options.seed) {}

  Result<PolicyOutput> Allocate(const PolicyInput& input) override {
    const std::size_t n = input.num_types();
    std::vector<int> available(n);
    for (std::size_t j = 0; j < n; ++j) available[j] = static_cast<int>(input.gpu_counts[j]);

    // Assignments in the order they were made (the original's dict order, which _pack scans).
    std::vector<Assigned> assigned;
    std::deque<std::size_t> queue;
    if (variant_ == Variant::kAgnostic) {
      KeepStickyAssignments(input, available, assigned, queue);
    } else {
      for (std::size_t i = 0; i < input.num_jobs(); ++i) queue.push_back(i);
    }

    const std::optional<std::size_t> blocked = AssignFromQueue(input, available, assigned, queue);
    if (variant_ == Variant::kAgnostic) {
      for (const Assigned& a : assigned) {
        if (!sticky_.contains(input.jobs[a.job].id)) {
          sticky_[input.jobs[a.job].id] = input.gpu_types[a.type];
        }
      }
    }
    if (variant_ == Variant::kPacked) {
      // The original pops the job that found no free GPUs and drops it, so _pack starts
      // with the job behind it, which may then jump ahead (docs/differences.md).
      if (blocked && !compat_) queue.push_front(*blocked);
      Pack(input, assigned, queue);
    }
    return Output(input, assigned);
  }

 private:
  // Agnostic mode: jobs keep their type across calls. A completed job's GPUs go to the head of
  // the queue if it fits there and can run there; everything else is queued
  // (the original's scheduler/policies/fifo.py).
  void KeepStickyAssignments(const PolicyInput& input, std::vector<int>& available,
                             std::vector<Assigned>& assigned, std::deque<std::size_t>& queue) {
    for (std::size_t i = 0; i < input.num_jobs(); ++i) {
      if (!sticky_.contains(input.jobs[i].id)) queue.push_back(i);
    }
    // Entries whose GPU type left the cluster are dropped; their jobs queue again in id order.
    for (auto it = sticky_.begin(); it != sticky_.end();) {
      if (input.TypeIndex(it->second) >= 0) {
        ++it;
        continue;
      }
      if (const auto job = JobIndexOf(input, it->first)) {
        queue.insert(std::upper_bound(queue.begin(), queue.end(), *job), *job);
      }
      it = sticky_.erase(it);
    }

    std::vector<std::pair<JobId, std::size_t>> completed;  // in id order, with their type
    const auto give_to_head = [&](std::size_t type) {
      if (queue.empty()) return;
      const std::size_t head = queue.front();
      if (input.jobs[head].scale_factor <= available[type] && input.throughput(head, type) > 0.0) {
        queue.pop_front();
        assigned.push_back({head, std::nullopt, type});
        available[type] -= input.jobs[head].scale_factor;
      }
    };
    // Snapshot of the keys: jobs given a completed job's GPUs are not visited again.
    std::vector<std::pair<JobId, std::string>> entries(sticky_.begin(), sticky_.end());
    for (const auto& [id, type_name] : entries) {
      const auto type = static_cast<std::size_t>(input.TypeIndex(type_name));
      const std::optional<std::size_t> job = JobIndexOf(input, id);
      if (job) {
        assigned.push_back({*job, std::nullopt, type});
        available[type] -= input.jobs[*job].scale_factor;
      } else if (compat_) {
        // The original hands the GPUs over while still counting down the running jobs that
        // sort after this one, so the head may be given GPUs a later job holds.
        give_to_head(type);
        sticky_.erase(id);
      } else {
        completed.emplace_back(id, type);
      }
    }
    for (const auto& [id, type] : completed) {
      give_to_head(type);
      sticky_.erase(id);
    }
  }

  // Jobs leave the queue in order and take a GPU type while one has enough
  // free GPUs. Returns the job that stopped the loop because nothing fitted (head-of-line
  // blocking), if any.
  std::optional<std::size_t> AssignFromQueue(const PolicyInput& input, std::vector<int>& available,
                                             std::vector<Assigned>& assigned,
                                             std::deque<std::size_t>& queue) {
    std::vector<std::size_t> available_types;
    for (std::size_t j = 0; j < input.num_types(); ++j) {
      if (available[j] > 0) available_types.push_back(j);
    }
    while (!queue.empty() && !available_types.empty()) {
      const std::size_t job = queue.front();
      queue.pop_front();
      const int scale_factor = input.jobs[job].scale_factor;
      std::vector<std::size_t> candidates;
      std::vector<std::size_t> position;  // of each candidate in available_types
      for (std::size_t k = 0; k < available_types.size(); ++k) {
        const std::size_t type = available_types[k];
        if (available[type] >= scale_factor) {
          candidates.push_back(type);
          position.push_back(k);
        }
      }
      if (candidates.empty()) return job;

      std::size_t chosen = 0;  // index into candidates
      std::size_t type = 0;
      if (variant_ == Variant::kAgnostic && compat_) {
        chosen = static_cast<std::size_t>(rng_.RandRange(candidates.size()));
        // The original's stale loop variable: the last type with any free GPU, whatever the
        // draw; the draw only decides which entry is removed below (docs/differences.md).
        type = available_types.back();
      } else if (variant_ == Variant::kAgnostic) {
        // A uniformly random type among those that fit and where the job can run at all.
        std::vector<std::size_t> runnable;
        for (std::size_t c = 0; c < candidates.size(); ++c) {
          if (input.throughput(job, candidates[c]) > 0.0) runnable.push_back(c);
        }
        if (runnable.empty()) continue;
        chosen = runnable[static_cast<std::size_t>(rng_.RandRange(runnable.size()))];
        type = candidates[chosen];
      } else {
        // Fastest candidate; strict comparison keeps the first of equals (sorted type order).
        double best = -1.0;
        for (std::size_t c = 0; c < candidates.size(); ++c) {
          if (input.throughput(job, candidates[c]) > best) {
            best = input.throughput(job, candidates[c]);
            chosen = c;
          }
        }
        type = candidates[chosen];
      }
      if (input.throughput(job, type) <= 0.0) continue;  // cannot run there: skipped, no block
      assigned.push_back({job, std::nullopt, type});
      available[type] -= scale_factor;
      if (available[type] == 0) {
        available_types.erase(available_types.begin() +
                              static_cast<std::ptrdiff_t>(position[chosen]));
      }
    }
    return std::nullopt;
  }

  // Packing: the queued jobs, in order, each join the running single job of equal
  // scale factor they pack best with, while that beats the threshold; the first job that
  // packs with nobody ends packing (no job jumps ahead).
  static void Pack(const PolicyInput& input, std::vector<Assigned>& assigned,
                   std::deque<std::size_t>& queue) {
    while (!queue.empty()) {
      const std::size_t job = queue.front();
      queue.pop_front();
      double best = kPackingThreshold;
      std::optional<std::size_t> best_entry;
      for (std::size_t e = 0; e < assigned.size(); ++e) {
        const Assigned& running = assigned[e];
        if (running.partner) continue;
        if (input.jobs[running.job].scale_factor != input.jobs[job].scale_factor) continue;
        const std::size_t first = std::min(running.job, job);
        const std::size_t second = std::max(running.job, job);
        const std::optional<std::size_t> pair_index = PairIndexOf(input, first, second);
        if (!pair_index.has_value()) continue;  // co-located throughput unknown
        const std::size_t type = running.type;
        double normalized = 0.0;
        const std::pair<std::size_t, double> members[] = {
            {first, input.pair_throughput_first(*pair_index, type)},
            {second, input.pair_throughput_second(*pair_index, type)}};
        for (const auto& [member, packed] : members) {
          if (packed <= 0.0 || input.throughput(member, type) <= 0.0) continue;
          normalized += packed / input.throughput(member, type);
        }
        if (normalized > best) {
          best = normalized;
          best_entry = e;
        }
      }
      if (!best_entry) break;
      Assigned pair = assigned[*best_entry];
      pair.partner = job;
      // The original deletes the single's entry and appends the pair's.
      assigned.erase(assigned.begin() + static_cast<std::ptrdiff_t>(*best_entry));
      assigned.push_back(pair);
    }
  }

  PolicyOutput Output(const PolicyInput& input, const std::vector<Assigned>& assigned) const {
    PolicyOutput output;
    output.allocation = Matrix(input.num_jobs(), input.num_types());
    const std::size_t num_pairs = variant_ == Variant::kPacked ? input.pairs.size() : 0;
    output.pair_allocation = Matrix(num_pairs, input.num_types());
    for (const Assigned& a : assigned) {
      if (!a.partner) {
        output.allocation(a.job, a.type) = 1.0;
        continue;
      }
      const std::size_t first = std::min(a.job, *a.partner);
      const std::size_t second = std::max(a.job, *a.partner);
      for (std::size_t p = 0; p < num_pairs; ++p) {
        if (static_cast<std::size_t>(input.pairs[p].first) == first &&
            static_cast<std::size_t>(input.pairs[p].second) == second) {
          output.pair_allocation(p, a.type) = 1.0;
        }
      }
    }
    output.status = AllocationStatus::kHeuristic;
    return output;
  }

  Variant variant_;
  bool compat_;
  PyRandom rng_;  // the original's random.Random(seed); drawn only in agnostic mode
  // Agnostic mode's assignments, kept across calls: job → GPU type name.
  std::map<JobId, std::string> sticky_;
};

}  // namespace

std::unique_ptr<Policy> MakeFifo(Variant variant, const PolicyOptions& options) {
  return std::make_unique<Fifo>(variant, options);
}

}  // namespace gavel::policy
