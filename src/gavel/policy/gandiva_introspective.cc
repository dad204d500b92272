#include "gavel/policy/gandiva_introspective.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gavel/policy/queue_discipline.h"

namespace gavel::policy {
namespace {

class GandivaIntrospective final : public Policy {
 public:
  explicit GandivaIntrospective(GandivaIntrospectiveOptions options) : o_(options) {}

  Result<PolicyOutput> Allocate(const PolicyInput& input) override {
    const std::size_t m = input.num_jobs();
    const std::size_t n = input.num_types();
    std::map<JobId, std::size_t> row_of;
    for (std::size_t i = 0; i < m; ++i) row_of[input.jobs[i].id] = i;

    // Phase 1, introspection: the pairs packed last round have run; measure them and unpack
    // (for good) those slower together than apart.
    for (const auto& [a, b, type] : last_pairs_) {
      const auto ia = row_of.find(a);
      const auto ib = row_of.find(b);
      if (ia == row_of.end() || ib == row_of.end()) continue;
      if (!Worthwhile(input, ia->second, ib->second, type)) bad_.insert({a, b});
    }
    last_pairs_.clear();

    // Phase 2, time slicing: the longest-waiting jobs first (suspended jobs resume in turn;
    // running jobs have waited 0 and yield to them), then by arrival.
    std::vector<std::size_t> order(m);
    for (std::size_t i = 0; i < m; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
      const PolicyJob& a = input.jobs[x];
      const PolicyJob& b = input.jobs[y];
      if (a.waiting.value() != b.waiting.value()) return a.waiting.value() > b.waiting.value();
      return a.time_since_start.value() > b.time_since_start.value();
    });
    double gpus = 0.0;
    for (double c : input.gpu_counts) gpus += c;
    double demand = 0.0;
    for (const PolicyJob& job : input.jobs) demand += Smallest(job);
    const bool oversubscribed = demand > gpus;

    std::vector<int> free(n);
    for (std::size_t j = 0; j < n; ++j) free[j] = static_cast<int>(input.gpu_counts[j]);
    std::vector<int> type_of(m, -1);
    std::vector<int> workers(m);
    for (std::size_t i = 0; i < m; ++i) workers[i] = input.jobs[i].scale_factor;
    // GPUs that running jobs (last in the order) will want back: a job placed before them
    // goes where there is room rather than onto their GPUs (no needless migration).
    std::vector<int> held(n, 0);
    for (const PolicyJob& job : input.jobs) {
      if (job.running_type >= 0 && static_cast<std::size_t>(job.running_type) < n) {
        held[static_cast<std::size_t>(job.running_type)] += Smallest(job);
      }
    }
    std::vector<std::size_t> waiting;
    for (std::size_t i : order) {
      const PolicyJob& job = input.jobs[i];
      // Shrink when busy; start from the smallest count and grow below when not.
      const int k = Smallest(job);
      if (job.running_type >= 0 && static_cast<std::size_t>(job.running_type) < n) {
        held[static_cast<std::size_t>(job.running_type)] -= k;
      }
      const int type = ChooseGpuType(job.running_type, k, free, held, [&](int t) {
        return Throughput(input, i, k, static_cast<std::size_t>(t)) > 0.0;
      });
      if (type < 0) {
        waiting.push_back(i);
        continue;
      }
      free[static_cast<std::size_t>(type)] -= k;
      type_of[i] = type;
      workers[i] = k;
    }

    PolicyOutput output;
    output.allocation = Matrix(m, n);
    output.pair_allocation = Matrix(input.pairs.size(), n);
    output.status = AllocationStatus::kHeuristic;

    // Phase 3, packing: a job left without GPUs shares those of a running job of its size
    // (fixed-size jobs only), unless that pair was measured slow before.
    std::vector<char> paired(m, 0);
    for (std::size_t u : waiting) {
      const PolicyJob& job = input.jobs[u];
      if (job.elastic()) continue;
      for (std::size_t s : order) {
        if (type_of[s] < 0 || paired[s] != 0 || input.jobs[s].elastic() ||
            input.jobs[s].scale_factor != job.scale_factor) {
          continue;
        }
        const std::optional<std::size_t> p = PairIndexOf(input, u, s);
        if (!p || bad_.contains(Key(input.jobs[u].id, input.jobs[s].id))) continue;
        const auto t = static_cast<std::size_t>(type_of[s]);
        if (input.pair_throughput_first(*p, t) <= 0.0 || input.pair_throughput_second(*p, t) <= 0.0) {
          continue;
        }
        paired[s] = paired[u] = 1;
        output.pair_allocation(*p, t) = 1.0;
        last_pairs_.emplace_back(input.jobs[s].id < job.id ? input.jobs[s].id : job.id,
                                 input.jobs[s].id < job.id ? job.id : input.jobs[s].id, t);
        break;
      }
    }

    // Phase 4, grow: with GPUs to spare and nobody waiting, elastic jobs take more workers
    // one at a time while that still speeds them up.
    if (!oversubscribed) {
      for (bool grew = true; grew;) {
        grew = false;
        for (std::size_t i : order) {
          const PolicyJob& job = input.jobs[i];
          if (!job.elastic() || type_of[i] < 0) continue;
          const auto t = static_cast<std::size_t>(type_of[i]);
          const int k = workers[i];
          if (k >= job.max_workers || free[t] == 0 ||
              job.ElasticThroughput(k + 1, t) <= job.ElasticThroughput(k, t)) {
            continue;
          }
          ++workers[i];
          --free[t];
          grew = true;
        }
      }
    }
    for (std::size_t i = 0; i < m; ++i) {
      if (type_of[i] >= 0 && paired[i] == 0) output.allocation(i, static_cast<std::size_t>(type_of[i])) = 1.0;
    }
    output.workers = std::move(workers);
    return output;
  }

 private:
  using PairKey = std::pair<JobId, JobId>;
  static PairKey Key(JobId a, JobId b) { return a < b ? PairKey{a, b} : PairKey{b, a}; }

  static int Smallest(const PolicyJob& job) {
    return job.elastic() ? job.min_workers : job.scale_factor;
  }
  static double Throughput(const PolicyInput& input, std::size_t i, int k, std::size_t type) {
    const PolicyJob& job = input.jobs[i];
    if (job.elastic()) return job.ElasticThroughput(k, type);
    return input.throughput(i, type);
  }

  // The measurement: Σ over both members of packed / alone throughput on the type they shared.
  bool Worthwhile(const PolicyInput& input, std::size_t a, std::size_t b, std::size_t type) const {
    const std::optional<std::size_t> p = PairIndexOf(input, a, b);
    if (!p) return false;
    const auto first = static_cast<std::size_t>(input.pairs[*p].first);
    const auto second = static_cast<std::size_t>(input.pairs[*p].second);
    const double alone_first = input.throughput(first, type);
    const double alone_second = input.throughput(second, type);
    if (alone_first <= 0.0 || alone_second <= 0.0) return false;
    const double normalised = input.pair_throughput_first(*p, type) / alone_first +
                              input.pair_throughput_second(*p, type) / alone_second;
    return normalised >= o_.keep;
  }

  GandivaIntrospectiveOptions o_;
  std::set<PairKey> bad_;                                    // measured slow: never again
  std::vector<std::tuple<JobId, JobId, std::size_t>> last_pairs_;  // packed last round, by type
};

}  // namespace

Result<std::unique_ptr<Policy>> MakeGandivaIntrospective(const PolicyOptions& options) {
  GandivaIntrospectiveOptions parsed;
  for (const auto& [key, text] : options.params) {
    if (key != "keep") return Status::InvalidArgument("unknown option " + key);
    GAVEL_ASSIGN_OR_RETURN(parsed.keep, NumberOption(key, text, 0.0, 2.0));
  }
  return std::unique_ptr<Policy>(std::make_unique<GandivaIntrospective>(parsed));
}

std::unique_ptr<Policy> MakeGandivaIntrospectiveWithDefaults(const PolicyOptions& /*options*/) {
  return std::make_unique<GandivaIntrospective>(GandivaIntrospectiveOptions{});
}

}  // namespace gavel::policy
