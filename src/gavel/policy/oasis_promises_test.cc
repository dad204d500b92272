#include "gavel/policy/oasis_promises.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gavel/policy/oasis_test_support.h"

namespace gavel::policy::oasis {
namespace {

// 1-3 GPU types of 1-4 servers of 1-4 GPUs, CPU-limited in half the trials.
PolicyInput RandomCluster(std::mt19937_64& rng) {
  PolicyInput cluster;
  const int types = 1 + static_cast<int>(rng() % 3);
  for (int j = 0; j < types; ++j) {
    cluster.gpu_types.push_back(std::string(1, static_cast<char>('a' + j)));
    cluster.gpus_per_server.push_back(1 + static_cast<int>(rng() % 4));
    cluster.gpu_counts.push_back(
        static_cast<double>(cluster.gpus_per_server.back() * (1 + rng() % 4)));
  }
  if (rng() % 2 == 0) cluster.host_cpus = 4.0 * static_cast<double>(2 + rng() % 10);
  return cluster;
}

// Each server's GPUs, in the ledger's order of servers (types in order, whole servers first).
std::vector<int> ServerCapacities(const PolicyInput& cluster) {
  std::vector<int> capacity;
  for (std::size_t j = 0; j < cluster.num_types(); ++j) {
    for (int left = static_cast<int>(cluster.gpu_counts[j]); left > 0;
         left -= cluster.gpus_per_server[j]) {
      capacity.push_back(std::min(left, cluster.gpus_per_server[j]));
    }
  }
  return capacity;
}

void ExpectSamePlan(const std::vector<PlanRun>& got, const std::vector<PlanRun>& want,
                    const std::string& where) {
  ASSERT_EQ(got.size(), want.size()) << where;
  for (std::size_t r = 0; r < got.size(); ++r) {
    EXPECT_EQ(got[r].first, want[r].first) << where << " run " << r;
    EXPECT_EQ(got[r].end, want[r].end) << where << " run " << r;
    EXPECT_EQ(got[r].entry, want[r].entry) << where << " run " << r;
  }
}

void ExpectSameBits(const std::vector<double>& got, const std::vector<double>& want,
                    const std::string& where) {
  ASSERT_EQ(got.size(), want.size()) << where;
  for (std::size_t c = 0; c < got.size(); ++c) {
    EXPECT_TRUE(SameBits(got[c], want[c]))
        << where << " cost " << c << ": " << got[c] << " vs " << want[c];
  }
}

// One arriving job's programme: its combinations and step costs in every ledger, compared.
struct Arrival {
  StepGrid grid;
  double cpus_per_gpu = 0.0;
  std::vector<JobCombo> combos;
};

// Random arrivals promise random feasible choices step by step, and random admitted jobs
// leave (their promises released), on three ledgers: kept prices, the oracle's fresh prices
// and the checked mode. Every step cost and every plan is the same to the bit, the checked
// ledger finds no mismatch (states are collected often, so that renumbering is covered), no
// server is ever promised more GPUs than it has, and once every job has left, the prices are
// those of a ledger that never promised anything.
TEST(OasisPromises, KeptPricesEqualTheOracleThroughPromisesAndReleases) {
  const std::vector<PricingMode> modes = {PricingMode::kReference, PricingMode::kKept,
                                          PricingMode::kChecked};
  for (int trial = 0; trial < 30; ++trial) {
    std::mt19937_64 rng(static_cast<std::uint64_t>(900 + trial));
    std::uniform_real_distribution<double> u(0.0, 1.0);
    const PolicyInput cluster = RandomCluster(rng);
    const std::vector<int> capacity = ServerCapacities(cluster);
    const ParameterServers ps{0.25 * static_cast<double>(rng() % 3), 2.0};
    std::vector<PromiseLedger> ledgers;
    for (const PricingMode mode : modes) ledgers.emplace_back(LedgerOptions{ps, mode, 8});
    for (PromiseLedger& ledger : ledgers) ASSERT_TRUE(ledger.SetCluster(cluster));
    for (PromiseLedger& ledger : ledgers) ASSERT_FALSE(ledger.SetCluster(cluster));  // unchanged
    std::vector<std::vector<PlanRun>> admitted;  // the kept ledger's plans (the others' equal)
    std::vector<std::vector<std::vector<PlanRun>>> plans_of(modes.size());
    double least_density = 1e300;
    double most_density = 0.0;
    int promised = 0;
    std::int64_t now_slot = 0;
    for (int round = 0; round < 10; ++round, now_slot += 1 + static_cast<std::int64_t>(rng() % 3)) {
      const std::string at = "trial " + std::to_string(trial) + " round " + std::to_string(round);
      for (PromiseLedger& ledger : ledgers) ledger.AdvanceTo(now_slot);
      for (std::size_t a = plans_of[0].size(); a-- > 0;) {
        if (u(rng) >= 0.2) continue;
        for (std::size_t m = 0; m < modes.size(); ++m) {
          ledgers[m].Release(plans_of[m][a], now_slot);
          plans_of[m].erase(plans_of[m].begin() + static_cast<std::ptrdiff_t>(a));
        }
      }
      for (PromiseLedger& ledger : ledgers) ledger.Collect();
      const int arrivals = 1 + static_cast<int>(rng() % 5);
      for (int arrival = 0; arrival < arrivals; ++arrival) {
        const std::string where = at + " arrival " + std::to_string(arrival);
        const double density = 0.1 + 10.0 * u(rng);
        least_density = std::min(least_density, density);
        most_density = std::max(most_density, density);
        Arrival job;
        job.grid = MakeStepGrid(5 + static_cast<int>(rng() % 40), 3 + static_cast<int>(rng() % 8),
                                now_slot);
        job.cpus_per_gpu = static_cast<double>(rng() % 3);
        const int count = 1 + static_cast<int>(rng() % 3);
        std::vector<std::pair<std::size_t, int>> shapes;
        for (int c = 0; c < count; ++c) {
          shapes.emplace_back(rng() % cluster.num_types(), 1 << (rng() % 3));
        }
        std::vector<std::vector<double>> costs(modes.size());
        for (std::size_t m = 0; m < modes.size(); ++m) {
          ledgers[m].Observe(density);
          std::vector<JobCombo> combos;
          for (const auto& [type, k] : shapes) {
            combos.push_back(JobCombo{type, k, ledgers[m].ComboIndex(type, k, job.cpus_per_gpu)});
          }
          if (m == 1) job.combos = combos;
          costs[m].assign(static_cast<std::size_t>(job.grid.count) * combos.size(), 0.0);
          ledgers[m].StepCosts(job.grid, combos, job.cpus_per_gpu, JobId(arrival), costs[m]);
        }
        ExpectSameBits(costs[1], costs[0], where + " kept");
        ExpectSameBits(costs[2], costs[0], where + " checked");
        EXPECT_EQ(ledgers[2].mismatch(), "") << where;
        // A schedule: in each step, idle or one combination that fits there.
        Schedule best;
        best.feasible = true;
        for (int step = 0; step < job.grid.count; ++step) {
          std::vector<std::size_t> fits;
          for (std::size_t c = 0; c < job.combos.size(); ++c) {
            if (std::isfinite(costs[0][static_cast<std::size_t>(step) * job.combos.size() + c]))
              fits.push_back(c);
          }
          SlotChoice choice;
          if (!fits.empty() && u(rng) < 0.6) {
            const JobCombo& combo = job.combos[fits[rng() % fits.size()]];
            choice = SlotChoice{1, 0.0, static_cast<int>(combo.type), combo.workers};
          }
          best.per_slot.push_back(choice);
        }
        for (std::size_t m = 0; m < modes.size(); ++m) {
          plans_of[m].push_back(ledgers[m].Promise(best, job.grid, job.cpus_per_gpu, now_slot));
        }
        ExpectSamePlan(plans_of[1].back(), plans_of[0].back(), where + " kept");
        ExpectSamePlan(plans_of[2].back(), plans_of[0].back(), where + " checked");
        promised += plans_of[0].back().empty() ? 0 : 1;
        if (HasFailure()) return;
      }
      // No server holds more than its GPUs in any slot from now on.
      std::int64_t last = now_slot;
      for (const auto& plan : plans_of[1]) {
        for (const PlanRun& run : plan) last = std::max(last, run.end);
      }
      for (std::int64_t slot = now_slot; slot < last; ++slot) {
        std::vector<int> used(capacity.size(), 0);
        for (const auto& plan : plans_of[1]) {
          for (const PlanRun& run : plan) {
            if (run.first > slot || slot >= run.end) continue;
            for (const auto& [server, gpus] : run.entry.gpus) used[server] += gpus;
          }
        }
        for (std::size_t s = 0; s < capacity.size(); ++s) {
          ASSERT_LE(used[s], capacity[s]) << at << " slot " << slot << " server " << s;
        }
      }
    }
    EXPECT_GT(promised, 5) << "trial " << trial;  // the comparison covers promises
    // Every job leaves (from the current slot on): the prices of a ledger that promised nothing.
    for (std::size_t m = 0; m < modes.size(); ++m) {
      ledgers[m].AdvanceTo(now_slot);
      for (const auto& plan : plans_of[m]) ledgers[m].Release(plan, now_slot - 1);
    }
    PromiseLedger empty(LedgerOptions{ps, PricingMode::kReference, 8});
    ASSERT_TRUE(empty.SetCluster(cluster));
    empty.AdvanceTo(now_slot);
    empty.Observe(least_density);
    empty.Observe(most_density);
    const StepGrid grid = MakeStepGrid(60, 12, now_slot);
    for (std::size_t type = 0; type < cluster.num_types(); ++type) {
      for (const int k : {1, 2, 4}) {
        std::vector<std::vector<double>> costs(modes.size() + 1);
        for (std::size_t m = 0; m <= modes.size(); ++m) {
          PromiseLedger& ledger = m < modes.size() ? ledgers[m] : empty;
          const std::vector<JobCombo> combos = {JobCombo{type, k, ledger.ComboIndex(type, k, 1.0)}};
          costs[m].assign(static_cast<std::size_t>(grid.count), 0.0);
          ledger.StepCosts(grid, combos, 1.0, JobId(0), costs[m]);
        }
        for (std::size_t m = 0; m < modes.size(); ++m) {
          ExpectSameBits(costs[m], costs[modes.size()],
                         "trial " + std::to_string(trial) + " after releases");
        }
      }
    }
    if (HasFailure()) return;
  }
}

}  // namespace
}  // namespace gavel::policy::oasis
