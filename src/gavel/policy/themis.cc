#include "gavel/policy/themis.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>


namespace gavel::policy {
namespace {

// A gang the greedy may hand an app next, ranked by `key`: first moves (an app's first gang,
// which lifts its valuation from 0) before all others, the smallest gang first among them so
// that as many apps as possible are served, then the larger log-valuation; later moves by
// their gain in log-valuation per GPU.
struct Move {
  std::tuple<int, double, double> key;
  std::size_t job = 0;
  int type = -1;
  double rate = 0.0;
};

// `constrained` is set when a gang the app could use did not fit the free GPUs. `type_of`:
// the app's jobs' types so far (-1 = none).
std::optional<Move> BestMove(const AuctionApp& app, const int* type_of, double rate,
                             const std::vector<int>& free, bool& constrained) {
  std::optional<Move> best;
  const double now = rate > 0.0 ? std::log(AuctionValuation(app, rate)) : 0.0;
  for (std::size_t k = 0; k < app.jobs.size(); ++k) {
    if (type_of[k] >= 0) continue;
    const AuctionJob& job = app.jobs[k];
    for (std::size_t j = 0; j < free.size(); ++j) {
      if (job.rate[j] <= 0.0) continue;
      if (free[j] < job.scale_factor) {
        constrained = true;
        continue;
      }
      const double after = std::log(AuctionValuation(app, rate + job.rate[j]));
      const Move move{
          .key = rate > 0.0 ? std::make_tuple(0, (after - now) / job.scale_factor, 0.0)
                            : std::make_tuple(1, -double(job.scale_factor), after),
          .job = k,
          .type = static_cast<int>(j),
          .rate = job.rate[j]};
      if (!best || move.key > best->key) best = move;
    }
  }
  return best;
}

// A heap entry: an app's best move, keyed (key, −app) so that ties go to the lower app index.
struct Entry {
  Move move;
  long neg_app = 0;
  friend bool operator<(const Entry& a, const Entry& b) {
    return std::tie(a.move.key, a.neg_app) < std::tie(b.move.key, b.neg_app);
  }
};

// The state the greedy starts from (nothing allocated, every GPU free), computed once and
// shared by the payment reruns: every app's first move, already a heap, and where each app's
// jobs start in the flat per-job type vector.
struct GreedyStart {
  std::vector<Entry> heap;
  std::vector<std::size_t> offset;  // apps.size() + 1 entries
  bool constrained = false;         // some app's first choice was cut by capacity already
};

// `excluded`: an app left out of the start (the payments' straightforward reruns).
GreedyStart Start(const std::vector<AuctionApp>& apps, const std::vector<int>& free,
                  std::optional<std::size_t> excluded = std::nullopt) {
  GreedyStart start;
  start.offset.push_back(0);
  for (const AuctionApp& app : apps) start.offset.push_back(start.offset.back() + app.jobs.size());
  const std::vector<int> none(start.offset.back(), -1);
  for (std::size_t a = 0; a < apps.size(); ++a) {
    if (excluded == a) continue;
    if (auto move = BestMove(apps[a], none.data() + start.offset[a], 0.0, free,
                             start.constrained)) {
      start.heap.push_back(Entry{*move, -static_cast<long>(a)});
    }
  }
  std::make_heap(start.heap.begin(), start.heap.end());
  return start;
}

// One pop of the greedy, as the payment reruns replay it.
struct Pop {
  Entry entry;
  int need = 0;       // the gang's GPUs
  bool took = false;  // the gang fitted and was taken
};

// The greedy proportionally fair allocation over the apps the start holds; returns the type of
// every job (flat, by start.offset) and fills `rates` with each app's total rate. `constrained`
// is set when capacity ever kept an app from a gang it could use: when it stays false, no app's
// choices depended on the others, so removing one changes nobody else's allocation. `log`, when
// given, receives every pop in order.
std::vector<int> Greedy(const std::vector<AuctionApp>& apps, std::vector<int> free,
                        const GreedyStart& start, std::vector<double>& rates, bool& constrained,
                        std::vector<Pop>* log) {
  std::vector<int> type_of(start.offset.back(), -1);
  rates.assign(apps.size(), 0.0);
  std::vector<Entry> heap = start.heap;
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end());
    const Entry top = heap.back();
    heap.pop_back();
    const auto a = static_cast<std::size_t>(-top.neg_app);
    int* types = type_of.data() + start.offset[a];
    const Move& move = top.move;
    const int need = apps[a].jobs[move.job].scale_factor;
    // Capacity only shrinks, so a stored best move that still fits is still the app's best.
    const bool took = free[static_cast<std::size_t>(move.type)] >= need;
    if (took) {
      free[static_cast<std::size_t>(move.type)] -= need;
      types[move.job] = move.type;
      rates[a] += move.rate;
    } else {
      constrained = true;
    }
    if (log != nullptr) log->push_back(Pop{top, need, took});
    if (auto next = BestMove(apps[a], types, rates[a], free, constrained)) {
      heap.push_back(Entry{*next, top.neg_app});
      std::push_heap(heap.begin(), heap.end());
    }
  }
  return type_of;
}

// The greedy without app `excluded`, replayed from the full run's `log`, so that a round
// stays within 10 ms at 1,000 jobs (rerunning every pop once per winner cost ~1,000 heap
// operations per rerun).
// Why it is exact: the pops are ordered by a strict total order on (key, app), so the apps
// whose every pop so far went as in the full run ("same" apps) hold the same heap entries and
// pop in the log's order. A same app stays same at a pop while its gang fits (or not) as it did
// in the full run and, after the pop, every unplaced gang of it fits (or not) as it did there:
// BestMove's choice depends on the free GPUs only through which gangs fit. Otherwise it becomes
// "moved": from then on its own entries live in a side heap and its pops are simulated, merged
// with the log by key. The moved set starts as {excluded} and stays small on congested rounds
// (a chain of apps taking the GPUs the one before left), so a rerun costs about one cheap check
// per logged pop instead of a heap operation. Fills `rates` like Greedy.
void Rerun(const std::vector<AuctionApp>& apps, const std::vector<int>& free_gpus,
           const GreedyStart& start, const std::vector<Pop>& log,
           const std::vector<double>& full_rates, std::size_t excluded,
           std::vector<double>& rates) {
  std::vector<int> type_of(start.offset.back(), -1);
  rates = full_rates;
  rates[excluded] = 0.0;
  std::vector<char> moved(apps.size(), 0);
  moved[excluded] = 1;
  std::vector<int> free = free_gpus;       // the rerun's
  std::vector<int> full_free = free_gpus;  // the full run's, at the same point of the log
  std::vector<double> rate_now(apps.size(), 0.0);
  std::vector<Entry> side;
  bool unused = false;
  // Same fit of every unplaced gang of app a under both free vectors (most often the vectors
  // are equal: the moved apps have re-taken what the excluded one left).
  const auto same_fits = [&](std::size_t a) {
    if (free == full_free) return true;
    const int* types = type_of.data() + start.offset[a];
    for (std::size_t k = 0; k < apps[a].jobs.size(); ++k) {
      if (types[k] >= 0) continue;
      const AuctionJob& job = apps[a].jobs[k];
      for (std::size_t j = 0; j < free.size(); ++j) {
        if (job.rate[j] > 0.0 && (free[j] >= job.scale_factor) != (full_free[j] >= job.scale_factor)) {
          return false;
        }
      }
    }
    return true;
  };
  // A simulated pop of a moved app: take if it fits, then its next best move to the side heap.
  const auto simulate = [&](const Entry& entry) {
    const auto a = static_cast<std::size_t>(-entry.neg_app);
    int* types = type_of.data() + start.offset[a];
    const Move& move = entry.move;
    const int need = apps[a].jobs[move.job].scale_factor;
    if (free[static_cast<std::size_t>(move.type)] >= need) {
      free[static_cast<std::size_t>(move.type)] -= need;
      types[move.job] = move.type;
      rate_now[a] += move.rate;
    }
    if (auto next = BestMove(apps[a], types, rate_now[a], free, unused)) {
      side.push_back(Entry{*next, entry.neg_app});
      std::push_heap(side.begin(), side.end());
    }
  };
  for (std::size_t q = 0; q <= log.size();) {
    // The next logged pop of a same app (moved apps' logged entries are not in the rerun).
    while (q < log.size() && moved[static_cast<std::size_t>(-log[q].entry.neg_app)] != 0) {
      const Pop& skip = log[q++];
      if (skip.took) full_free[static_cast<std::size_t>(skip.entry.move.type)] -= skip.need;
    }
    if (!side.empty() && (q == log.size() || log[q].entry < side.front())) {
      std::pop_heap(side.begin(), side.end());
      const Entry top = side.back();
      side.pop_back();
      simulate(top);
      continue;
    }
    if (q == log.size()) break;
    const Pop& pop = log[q++];
    const auto a = static_cast<std::size_t>(-pop.entry.neg_app);
    const auto t = static_cast<std::size_t>(pop.entry.move.type);
    const int need = pop.need;
    if (pop.took) full_free[t] -= need;
    if ((free[t] >= need) == pop.took) {
      if (pop.took) {
        free[t] -= need;
        type_of[start.offset[a] + pop.entry.move.job] = static_cast<int>(t);
        rate_now[a] += pop.entry.move.rate;
      }
      if (same_fits(a)) continue;
      // The pop went the same, the next choice may not: simulate from the next move on.
      if (pop.took) {
        free[t] += need;
        type_of[start.offset[a] + pop.entry.move.job] = -1;
        rate_now[a] -= pop.entry.move.rate;
      }
    }
    moved[a] = 1;
    simulate(pop.entry);
  }
  for (std::size_t a = 0; a < apps.size(); ++a) {
    if (moved[a] != 0 && a != excluded) rates[a] = rate_now[a];
  }
}

class Themis final : public Policy {
 public:
  explicit Themis(ThemisOptions options) : options_(options) {}

  Result<PolicyOutput> Allocate(const PolicyInput& input) override {
    const std::size_t n = input.num_types();
    // Phase 1: group the runnable jobs into apps and price each app's ρ on its fair share.
    std::vector<std::vector<std::size_t>> members;
    std::map<int, std::size_t> app_index;
    std::vector<double> best(input.num_jobs(), 0.0);
    for (std::size_t i = 0; i < input.num_jobs(); ++i) {
      for (std::size_t j = 0; j < n; ++j) best[i] = std::max(best[i], input.throughput(i, j));
      if (best[i] <= 0.0) continue;  // runs nowhere: no bid, no leftover
      const int app = input.jobs[i].app;
      if (app < 0) {
        members.push_back({i});
      } else {
        const auto [it, added] = app_index.emplace(app, members.size());
        if (added) members.emplace_back();
        members[it->second].push_back(i);
      }
    }
    double total_gpus = 0.0;
    for (double count : input.gpu_counts) total_gpus += count;
    const double share = members.empty() ? 0.0 : total_gpus / double(members.size());
    // Inside an app, its agent hands what the app wins to its jobs furthest behind their own
    // fair finish time first (the arbiter's rule, one level down): the app's ρ counts any of
    // its jobs' progress alike, so without an order the first trials of a search would run
    // and its short, early-stopped trials wait behind them, with the largest job-level ρ.
    // A job's ρ on its app's share: (elapsed + W_i / r_i) / ((W_i + done_i) / r_i).
    const auto job_rho = [&](std::size_t i) {
      const PolicyJob& job = input.jobs[i];
      const double rate = std::min(1.0, share / job.scale_factor);
      const double work = job.steps_remaining / best[i];
      const double whole = std::max(work + job.attained_gpu_seconds / job.scale_factor, kTinySeconds);
      return (job.time_since_start.value() * rate + work) / whole;
    };
    for (std::vector<std::size_t>& rows : members) {
      if (rows.size() < 2) continue;
      std::vector<std::pair<double, std::size_t>> keyed;
      for (std::size_t i : rows) keyed.emplace_back(-job_rho(i), i);
      std::stable_sort(keyed.begin(), keyed.end(),
                       [](const auto& x, const auto& y) { return x.first < y.first; });
      for (std::size_t k = 0; k < rows.size(); ++k) rows[k] = keyed[k].second;
    }
    std::vector<AuctionApp> apps(members.size());
    std::vector<double> rho(members.size());
    for (std::size_t a = 0; a < members.size(); ++a) {
      AuctionApp& app = apps[a];
      double done = 0.0;
      double demand = 0.0;
      app.work = 0.0;
      for (std::size_t i : members[a]) {
        const PolicyJob& job = input.jobs[i];
        AuctionJob bid{.scale_factor = job.scale_factor, .rate = std::vector<double>(n)};
        for (std::size_t j = 0; j < n; ++j) bid.rate[j] = input.throughput(i, j) / best[i];
        app.jobs.push_back(std::move(bid));
        app.elapsed = std::max(app.elapsed, job.time_since_start.value());
        app.work += job.steps_remaining / best[i];
        done += job.attained_gpu_seconds / job.scale_factor;
        demand += job.scale_factor;
      }
      app.work = std::max(app.work, kTinySeconds);
      // Alone on 1/N of the cluster the app runs its jobs at min(1, share/demand) each.
      const double isolated_rate = double(members[a].size()) * std::min(1.0, share / demand);
      app.isolated = (app.work + done) / isolated_rate;
      rho[a] = (app.elapsed + app.work / isolated_rate) / app.isolated;
    }

    // Phase 2: the 1 − f of apps with the largest ρ bid (ties to the earlier app).
    std::vector<std::size_t> by_rho(members.size());
    for (std::size_t a = 0; a < by_rho.size(); ++a) by_rho[a] = a;
    std::stable_sort(by_rho.begin(), by_rho.end(),
                     [&](std::size_t x, std::size_t y) { return rho[x] > rho[y]; });
    const auto bidders = static_cast<std::size_t>(
        std::ceil((1.0 - options_.f) * double(members.size()) - 1e-9));
    std::vector<AuctionApp> bids;
    for (std::size_t b = 0; b < bidders; ++b) bids.push_back(apps[by_rho[b]]);

    // Phase 3: the auction; winners keep c_i of their gangs as time shares.
    std::vector<int> free;
    for (double count : input.gpu_counts) free.push_back(static_cast<int>(count));
    const AuctionResult auction = PartialAllocationAuction(bids, free);
    Matrix allocation(input.num_jobs(), n);
    std::vector<double> left(input.gpu_counts);
    std::vector<bool> served(input.num_jobs(), false);
    for (std::size_t b = 0; b < bidders; ++b) {
      const std::vector<std::size_t>& rows = members[by_rho[b]];
      for (std::size_t k = 0; k < rows.size(); ++k) {
        const int type = auction.type_of[b][k];
        if (type < 0) continue;
        const auto j = static_cast<std::size_t>(type);
        allocation(rows[k], j) = auction.keep[b];
        left[j] -= auction.keep[b] * input.jobs[rows[k]].scale_factor;
        served[rows[k]] = true;
      }
    }

    // Phase 4: leftovers (unsold GPUs and hidden payments) to the apps that did not bid, largest
    // ρ first, then to the bidders' jobs the auction did not serve: a winner's payment is not
    // handed back to it. Each job takes the type where it makes the most progress.
    std::vector<std::size_t> order(by_rho.begin() + static_cast<long>(bidders), by_rho.end());
    order.insert(order.end(), by_rho.begin(), by_rho.begin() + static_cast<long>(bidders));
    for (std::size_t a : order) {
      for (std::size_t i : members[a]) {
        if (served[i]) continue;
        const double s = input.jobs[i].scale_factor;
        std::size_t chosen = n;
        double chosen_amount = 0.0;
        double chosen_progress = 0.0;
        for (std::size_t j = 0; j < n; ++j) {
          const double amount = std::min(1.0, left[j] / s);
          const double progress = amount * input.throughput(i, j) / best[i];
          if (amount > kTinyShare && progress > chosen_progress) {
            chosen = j;
            chosen_amount = amount;
            chosen_progress = progress;
          }
        }
        if (chosen == n) continue;
        allocation(i, chosen) = chosen_amount;
        left[chosen] = std::max(0.0, left[chosen] - chosen_amount * s);
      }
    }
    PolicyOutput output;
    output.allocation = std::move(allocation);
    output.pair_allocation = Matrix(0, n);
    output.status = AllocationStatus::kHeuristic;
    return output;
  }

 private:
  static constexpr double kTinySeconds = 1e-9;
  static constexpr double kTinyShare = 1e-9;  // a time share below this is not worth a slot
  ThemisOptions options_;
};

}  // namespace

double AuctionValuation(const AuctionApp& app, double rate) {
  return rate > 0.0 ? app.isolated / (app.elapsed + app.work / rate) : 0.0;
}

AuctionResult PartialAllocationAuction(const std::vector<AuctionApp>& apps,
                                       const std::vector<int>& free_gpus, AuctionReruns reruns) {
  const bool replay = reruns == AuctionReruns::kReplay;
  AuctionResult result;
  std::vector<double> rates;
  std::vector<Pop> log;
  const GreedyStart start = Start(apps, free_gpus);
  bool constrained = start.constrained;
  const std::vector<int> types =
      Greedy(apps, free_gpus, start, rates, constrained, replay ? &log : nullptr);
  for (std::size_t a = 0; a < apps.size(); ++a) {
    result.type_of.emplace_back(types.begin() + static_cast<long>(start.offset[a]),
                                types.begin() + static_cast<long>(start.offset[a + 1]));
  }
  result.keep.assign(apps.size(), 1.0);
  // Uncongested: every c_i is exactly 1 (the others get the same without i).
  if (!constrained) return result;
  std::vector<double> without;
  for (std::size_t i = 0; i < apps.size(); ++i) {
    if (rates[i] <= 0.0) continue;
    // c_i = Π_{j≠i} v_j(with i) / Π_{j≠i} v_j(without i), over the apps served in both (an app
    // served only without i would make the ratio 0: i would lose everything for one GPU).
    if (replay) {
      Rerun(apps, free_gpus, start, log, rates, i, without);
    } else {
      bool unused = false;
      Greedy(apps, free_gpus, Start(apps, free_gpus, i), without, unused, nullptr);
    }
    double log_ratio = 0.0;
    for (std::size_t j = 0; j < apps.size(); ++j) {
      // An app whose rate is the same either way adds log 1 = 0.
      if (j == i || rates[j] <= 0.0 || without[j] <= 0.0 || without[j] == rates[j]) continue;
      log_ratio += std::log(AuctionValuation(apps[j], rates[j])) -
                   std::log(AuctionValuation(apps[j], without[j]));
    }
    result.keep[i] = std::min(1.0, std::exp(log_ratio));
  }
  return result;
}

Result<ThemisOptions> ParseThemisOptions(const PolicyOptions& options) {
  ThemisOptions parsed;
  for (const auto& [key, text] : options.params) {
    if (key != "f") return Status::InvalidArgument("unknown option " + key);
    GAVEL_ASSIGN_OR_RETURN(parsed.f, NumberOption(key, text, 0.0, 1.0));
  }
  return parsed;
}

std::unique_ptr<Policy> MakeThemis(const ThemisOptions& themis) {
  return std::make_unique<Themis>(themis);
}

Result<std::unique_ptr<Policy>> MakeThemis(const PolicyOptions& options) {
  GAVEL_ASSIGN_OR_RETURN(ThemisOptions themis, ParseThemisOptions(options));
  return MakeThemis(themis);
}

std::unique_ptr<Policy> MakeThemisWithDefaults(const PolicyOptions& /*options*/) {
  return MakeThemis(ThemisOptions{});
}

}  // namespace gavel::policy
