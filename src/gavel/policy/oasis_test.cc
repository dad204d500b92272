#include "gavel/policy/oasis.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gavel/core/utility.h"
#include "gavel/policy/oasis_test_support.h"
#include "gavel/policy/oasis_testing.h"
#include "gavel/policy/registry.h"

namespace gavel::policy {
namespace {

// A cluster of `gpus` one-GPU servers of one type and `jobs` jobs that each need one GPU for
// `slots` slots of 100 s.
PolicyInput Problem(int gpus, int jobs, double utility_value, double midpoint) {
  PolicyInput input;
  input.gpu_types = {"v100"};
  input.gpu_counts = {static_cast<double>(gpus)};
  input.gpus_per_server = {1};
  input.throughput = Matrix(static_cast<std::size_t>(jobs), 1, 1.0);
  for (int i = 0; i < jobs; ++i) {
    PolicyJob job;
    job.id = JobId(i);
    job.steps_remaining = 300.0;  // 3 slots at 1 step/s
    job.time_since_start = Seconds(0.0);
    job.utility = UtilityFunction{UtilityFamily::kLinear, utility_value, midpoint, 1.0};
    input.jobs.push_back(job);
  }
  return input;
}

using PlanObserver = std::function<void(JobId, const ScheduleProblem&, const Schedule&)>;

// Test hooks that price with `pricing` and show every planned arrival to `on_schedule` (if set).
OasisTestHooks Hooks(oasis::PricingMode pricing, PlanObserver on_schedule = nullptr) {
  OasisTestHooks hooks;
  hooks.pricing = pricing;
  hooks.on_schedule = std::move(on_schedule);
  return hooks;
}

TEST(Oasis, AdmitsWhileCheapAndNeverOverCommitsAGpuType) {
  OasisOptions options;
  options.slot_seconds = 100.0;
  options.horizon_slots = 50;
  options.units = 6;
  // 12 jobs on 2 GPUs: utility falls to 0 after 900 s, so at most 2 GPUs × 9 slots / 3 slots
  // = 6 jobs can earn anything; the rest must not be admitted: rejected at once, or (deferred)
  // pending, since each could still finish in time on GPUs given back.
  const PolicyInput input = Problem(2, 12, 10.0, 900.0);
  for (const bool defer : {false, true}) {
    options.defer = defer;
    int admitted = 0;  // best schedules that pay
    const auto policy = MakeOasisForTesting(
        options, Hooks(oasis::PricingMode::kKept, [&admitted](JobId, const ScheduleProblem&, const Schedule& best) {
          admitted += best.feasible && best.payoff > 0.0 ? 1 : 0;
        }));
    const Result<PolicyOutput> out = policy->Allocate(input);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    int kept = 0;
    double running = 0.0;
    for (std::size_t i = 0; i < input.num_jobs(); ++i) {
      if (out->rejected[i] == 0) ++kept;
      running += out->allocation(i, 0) * out->workers[i];
      EXPECT_TRUE(out->rejected[i] == 0 || out->allocation(i, 0) == 0.0);
    }
    EXPECT_GE(admitted, 1) << "defer " << defer;
    EXPECT_LE(admitted, 6) << "defer " << defer;
    EXPECT_EQ(kept, defer ? 12 : admitted) << "defer " << defer;
    EXPECT_LE(running, 2.0);  // no GPU promised twice
    EXPECT_EQ(running, 2.0);  // and none left idle while admitted jobs wait
  }
}

TEST(Oasis, AdmitsAJobLongAgainstItsHorizonOnAnIdleCluster) {
  // Horizon 100 slots of 100 s in 25 steps of 4 slots (400 s); the job needs 6,000 s alone
  // (0.6 of the horizon), worth 10 until 20,000 s. With 10 workload units a unit (600 s) is
  // longer than a step, each step's units rounded down to 0, and the job was rejected on an
  // idle cluster; the units now grow until a step does 4 at the best rate (60 units here).
  OasisOptions options;
  options.slot_seconds = 100.0;
  options.horizon_slots = 100;
  options.steps = 25;
  options.units = 10;
  const auto policy = MakeOasis(options);
  PolicyInput input = Problem(1, 1, 10.0, 20000.0);
  input.jobs[0].steps_remaining = 6000.0;  // 6,000 s at 1 step/s
  const Result<PolicyOutput> out = policy->Allocate(input);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->rejected[0], 0);
  EXPECT_EQ(out->allocation(0, 0), 1.0);
  // One it cannot finish in its horizon at all (12,000 s > 10,000 s) has no schedule: rejected
  // at once with defer=false; deferred, it waits pending and runs on the idle GPU (it can
  // still finish before its utility is gone at 20,000 s).
  input.jobs[0].steps_remaining = 12000.0;
  for (const bool defer : {false, true}) {
    options.defer = defer;
    const auto other = MakeOasis(options);
    const Result<PolicyOutput> late = other->Allocate(input);
    ASSERT_TRUE(late.ok());
    EXPECT_EQ(late->rejected[0], defer ? 0 : 1);
    EXPECT_EQ(late->allocation(0, 0), defer ? 1.0 : 0.0);
  }
}

TEST(Oasis, ChoosesElasticWorkerCountsInRange) {
  OasisOptions options;
  options.slot_seconds = 100.0;
  options.horizon_slots = 40;
  const auto policy = MakeOasis(options);
  PolicyInput input = Problem(4, 1, 10.0, 2000.0);
  PolicyJob& job = input.jobs[0];
  job.scale_factor = 1;
  job.min_workers = 1;
  job.max_workers = 4;
  job.throughput_by_workers = Matrix(4, 1);
  for (int k = 1; k <= 4; ++k) job.throughput_by_workers(static_cast<std::size_t>(k - 1), 0) = 0.9 * k;
  const Result<PolicyOutput> out = policy->Allocate(input);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->rejected[0], 0);
  EXPECT_GE(out->workers[0], 1);
  EXPECT_LE(out->workers[0], 4);
  EXPECT_EQ(out->allocation(0, 0), 1.0);
}

// A random cluster and a stream of jobs over `rounds` rounds: arrivals each round, some
// departures (finished early), progress on the rest. Small horizons and few programme steps
// so that steps group several slots and the promises form runs of equal slots.
// Makes `job` elastic: 1..4 workers with a sublinear speed-up (k^0.7) from a random base rate
// per type. Draws one uniform per type from `rng`, as the tests' sequences expect.
void MakeElastic(PolicyJob& job, int types, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  job.scale_factor = job.min_workers = 1;
  job.max_workers = 4;
  job.throughput_by_workers = Matrix(4, static_cast<std::size_t>(types));
  for (int j = 0; j < types; ++j) {
    const double base = 0.5 + u(rng);
    for (int k = 1; k <= 4; ++k) {
      job.throughput_by_workers(static_cast<std::size_t>(k - 1), static_cast<std::size_t>(j)) =
          base * std::pow(k, 0.7);
    }
  }
}

struct RandomRun {
  PolicyInput cluster;
  std::vector<PolicyJob> pool;  // every job, by arrival order (id = index)
  std::vector<double> arrival;  // seconds
};

RandomRun MakeRandomRun(std::mt19937_64& rng, int num_jobs, double slot) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  RandomRun run;
  const int types = 1 + static_cast<int>(rng() % 3);
  for (int j = 0; j < types; ++j) {
    run.cluster.gpu_types.push_back(std::string(1, static_cast<char>('a' + j)));
    run.cluster.gpus_per_server.push_back(1 + static_cast<int>(rng() % 4));
    run.cluster.gpu_counts.push_back(static_cast<double>(run.cluster.gpus_per_server.back() * (1 + rng() % 3)));
  }
  if (u(rng) < 0.5) run.cluster.host_cpus = 4.0 + 12.0 * u(rng);  // CPU cores limit placement
  for (int i = 0; i < num_jobs; ++i) {
    PolicyJob job;
    job.id = JobId(i);
    job.scale_factor = 1 << (rng() % 3);
    job.min_workers = job.max_workers = job.scale_factor;
    if (u(rng) < 0.25) MakeElastic(job, types, rng);
    job.cpus_per_gpu = static_cast<double>(rng() % 3);
    job.steps_remaining = slot * (1.0 + 8.0 * u(rng));
    const double duration = job.steps_remaining / 1.0;
    job.utility = u(rng) < 0.5 ? UtilityFunction{UtilityFamily::kLinear, 10.0 * u(rng) + 1.0, 3.0 * duration, 1.0}
                               : DefaultUtility(UtilityFamily::kSigmoid, duration, job.scale_factor);
    if (u(rng) < 0.1) job.utility.reset();  // admitted without a schedule
    run.pool.push_back(job);
    run.arrival.push_back(static_cast<double>(i / 3) * slot * (0.5 + u(rng)));
  }
  return run;
}

// Plays the run on each policy, round by round, and returns every round's outputs.
std::vector<std::vector<PolicyOutput>> Play(const RandomRun& run, std::mt19937_64 rng, double slot,
                                            const std::vector<Policy*>& policies) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<std::vector<PolicyOutput>> outputs(policies.size());
  std::vector<double> left;
  for (const PolicyJob& job : run.pool) left.push_back(job.steps_remaining);
  std::vector<char> gone(run.pool.size(), 0);
  for (int round = 0; round < 12; ++round) {
    const double now = round * slot * 0.75;  // rounds that do not line up with slots
    PolicyInput input = run.cluster;
    for (std::size_t i = 0; i < run.pool.size(); ++i) {
      if (gone[i] != 0 || run.arrival[i] > now) continue;
      if (u(rng) < 0.08) {  // leaves (finished or cancelled) before its plan ends
        gone[i] = 1;
        continue;
      }
      PolicyJob job = run.pool[i];
      job.time_since_start = Seconds(now - run.arrival[i]);
      left[i] *= 0.8;
      job.steps_remaining = left[i];
      input.jobs.push_back(job);
    }
    input.now_seconds = now;
    input.throughput = Matrix(input.jobs.size(), input.num_types());
    for (std::size_t i = 0; i < input.jobs.size(); ++i) {
      for (std::size_t j = 0; j < input.num_types(); ++j) {
        // A fixed per-(job, type) speed, 1 in 8 zero.
        const auto id = static_cast<std::size_t>(input.jobs[i].id.value());
        input.throughput(i, j) = (id * 7 + j * 3) % 8 == 0 ? 0.0 : 0.5 + static_cast<double>((id + j) % 5) / 4.0;
      }
    }
    for (std::size_t p = 0; p < policies.size(); ++p) {
      Result<PolicyOutput> out = policies[p]->Allocate(input);
      EXPECT_TRUE(out.ok()) << "policy " << p << " round " << round << ": " << out.status().ToString();
      if (!out.ok()) return outputs;
      outputs[p].push_back(std::move(*out));
    }
  }
  return outputs;
}

// The slot-price cache (and its runs of equal slots) against pricing every slot afresh, the
// computation before the cache: the same admissions, the same schedules (the worker counts
// and types of every round follow them), and, with the checked pricing, the same price of every
// slot priced, to the bit.
TEST(Oasis, CachedSlotPricesMatchFreshPricing) {
  for (int trial = 0; trial < 40; ++trial) {
    std::mt19937_64 rng(static_cast<std::uint64_t>(1000 + trial));
    OasisOptions options;
    options.slot_seconds = 100.0;
    options.horizon_slots = 10 + trial % 50;
    options.steps = 3 + trial % 7;
    options.units = 5 + trial % 20;
    const RandomRun run = MakeRandomRun(rng, 20 + trial % 30, options.slot_seconds);
    const auto a = MakeOasisForTesting(options, Hooks(oasis::PricingMode::kReference));
    const auto b = MakeOasis(options);
    const auto c = MakeOasisForTesting(options, Hooks(oasis::PricingMode::kChecked));
    const auto outputs = Play(run, rng, options.slot_seconds, {a.get(), b.get(), c.get()});
    ASSERT_EQ(outputs[0].size(), 12u) << "trial " << trial;
    int admitted = 0;
    for (std::size_t p = 1; p < outputs.size(); ++p) {
      ASSERT_EQ(outputs[p].size(), outputs[0].size()) << "trial " << trial;
      for (std::size_t r = 0; r < outputs[0].size(); ++r) {
        const PolicyOutput& want = outputs[0][r];
        const PolicyOutput& got = outputs[p][r];
        EXPECT_EQ(got.rejected, want.rejected) << "trial " << trial << " round " << r;
        EXPECT_EQ(got.workers, want.workers) << "trial " << trial << " round " << r;
        EXPECT_EQ(got.allocation.data(), want.allocation.data()) << "trial " << trial << " round " << r;
        if (p == 1) {
          for (const char x : want.rejected) admitted += x == 0 ? 1 : 0;
        }
      }
    }
    EXPECT_GT(admitted, 0) << "trial " << trial;  // the comparison covers promises
  }
}

// What one Oasis saw and decided for each planned arrival: its programme's every choice and
// its best schedule.
struct PlanRecord {
  JobId job;
  ScheduleProblem problem;  // choices and step starts only (the utility is not kept)
  Schedule best;
};

// An OasisTestHooks::on_schedule that appends every planned arrival to `into`.
PlanObserver RecordPlans(std::vector<PlanRecord>& into) {
  return [&into](JobId job, const ScheduleProblem& problem, const Schedule& best) {
    into.push_back(PlanRecord{job, ScheduleProblem{problem.units, problem.choices, {}, problem.step_begin}, best});
  };
}

// Bursts of arrivals (tens of jobs in one round, as when a cluster opens or a queue is
// replayed) on clusters of several 4-GPU servers, CPU-limited or not, with departures
// between bursts: planning with kept prices (and with state collection forced often) against
// pricing every slot afresh with the first greedy: the same programmes (every step's
// price for every choice, to the bit), the same schedules, admissions and allocations; and
// the checked pricing finds no kept price that differs.
TEST(Oasis, KeptPricesMatchFreshPricingOnBursts) {
  for (int trial = 0; trial < 24; ++trial) {
    std::mt19937_64 rng(static_cast<std::uint64_t>(5000 + trial));
    std::uniform_real_distribution<double> u(0.0, 1.0);
    OasisOptions options;
    options.slot_seconds = 100.0;
    options.horizon_slots = 40 + 20 * (trial % 6);
    options.steps = 6 + trial % 9;
    options.units = 10 + trial % 15;
    PolicyInput cluster;
    const int types = 1 + trial % 3;
    for (int j = 0; j < types; ++j) {
      cluster.gpu_types.push_back(std::string(1, static_cast<char>('a' + j)));
      cluster.gpus_per_server.push_back(4);
      cluster.gpu_counts.push_back(4.0 * static_cast<double>(1 + rng() % 4));
    }
    if (trial % 2 == 0) cluster.host_cpus = 16.0 * static_cast<double>(2 + rng() % 6);
    options.decide_per_round = 0;  // whole bursts in one round: the most promises before each plan
    const std::vector<oasis::PricingMode> modes = {oasis::PricingMode::kReference, oasis::PricingMode::kKept,
                                                   oasis::PricingMode::kChecked};
    std::vector<std::vector<PlanRecord>> records(modes.size());
    std::vector<std::unique_ptr<Policy>> policies;
    for (std::size_t mode = 0; mode < modes.size(); ++mode) {
      OasisTestHooks hooks = Hooks(modes[mode], RecordPlans(records[mode]));
      hooks.collect_states_at = 32;
      policies.push_back(MakeOasisForTesting(options, std::move(hooks)));
    }
    // Four bursts of 15-60 jobs, two rounds apart; a fifth of the running jobs leave before
    // each burst, the rest make progress.
    std::vector<PolicyJob> active;
    std::vector<double> arrived;
    int next_id = 0;
    for (int round = 0; round < 8; ++round) {
      const double now = round * options.slot_seconds * 0.9;
      for (std::size_t a = 0; a < active.size();) {
        if (u(rng) < 0.1) {
          active.erase(active.begin() + static_cast<std::ptrdiff_t>(a));
          arrived.erase(arrived.begin() + static_cast<std::ptrdiff_t>(a));
          continue;
        }
        active[a].steps_remaining *= 0.85;
        active[a].time_since_start = Seconds(now - arrived[a]);
        ++a;
      }
      if (round % 2 == 0) {
        const int burst = 15 + static_cast<int>(rng() % 46);
        for (int b = 0; b < burst; ++b) {
          PolicyJob job;
          job.id = JobId(next_id++);
          job.scale_factor = 1 << (rng() % 4);
          job.min_workers = job.max_workers = job.scale_factor;
          if (u(rng) < 0.2) MakeElastic(job, types, rng);
          job.cpus_per_gpu = static_cast<double>(rng() % 5) / 2.0;  // halves: tabled CPU prices
          job.steps_remaining = options.slot_seconds * (1.0 + 15.0 * u(rng));
          job.time_since_start = Seconds(0.0);
          job.utility = u(rng) < 0.5 ? DefaultUtility(UtilityFamily::kSigmoid, job.steps_remaining, job.scale_factor)
                                     : UtilityFunction{UtilityFamily::kLinear, 20.0 * u(rng) + 1.0,
                                                       (2.0 + 4.0 * u(rng)) * job.steps_remaining, 1.0};
          active.push_back(job);
          arrived.push_back(now);
        }
      }
      PolicyInput input = cluster;
      input.now_seconds = now;
      input.jobs = active;
      input.throughput = Matrix(active.size(), static_cast<std::size_t>(types));
      for (std::size_t a = 0; a < active.size(); ++a) {
        const auto id = static_cast<std::size_t>(active[a].id.value());
        for (std::size_t j = 0; j < static_cast<std::size_t>(types); ++j) {
          input.throughput(a, j) = (id * 5 + j * 3) % 9 == 0 ? 0.0 : 0.5 + static_cast<double>((id + 2 * j) % 7) / 4.0;
        }
      }
      std::vector<PolicyOutput> outputs;
      for (std::size_t mode = 0; mode < modes.size(); ++mode) {
        Result<PolicyOutput> out = policies[mode]->Allocate(input);
        ASSERT_TRUE(out.ok()) << "trial " << trial << " mode " << mode << " round " << round << ": "
                              << out.status().ToString();
        outputs.push_back(std::move(*out));
      }
      for (std::size_t mode = 1; mode < modes.size(); ++mode) {
        const std::string where = "trial " + std::to_string(trial) + " mode " + std::to_string(mode) +
                                  " round " + std::to_string(round);
        EXPECT_EQ(outputs[mode].rejected, outputs[0].rejected) << where;
        EXPECT_EQ(outputs[mode].workers, outputs[0].workers) << where;
        EXPECT_EQ(outputs[mode].allocation.data(), outputs[0].allocation.data()) << where;
      }
      // Rejected jobs leave (the round mechanism removes them).
      for (std::size_t a = active.size(); a-- > 0;) {
        if (outputs[0].rejected[a] != 0) {
          active.erase(active.begin() + static_cast<std::ptrdiff_t>(a));
          arrived.erase(arrived.begin() + static_cast<std::ptrdiff_t>(a));
        }
      }
    }
    int admitted = 0;
    for (std::size_t mode = 1; mode < modes.size(); ++mode) {
      ASSERT_EQ(records[mode].size(), records[0].size()) << "trial " << trial;
      for (std::size_t r = 0; r < records[0].size(); ++r) {
        const PlanRecord& want = records[0][r];
        const PlanRecord& got = records[mode][r];
        const std::string where = "trial " + std::to_string(trial) + " mode " + std::to_string(mode) +
                                  " plan " + std::to_string(r);
        ASSERT_EQ(got.job, want.job) << where;
        ASSERT_EQ(got.problem.units, want.problem.units) << where;
        ASSERT_EQ(got.problem.choices.size(), want.problem.choices.size()) << where;
        for (std::size_t t = 0; t < want.problem.choices.size(); ++t) {
          const auto& g = got.problem.choices[t];
          const auto& w = want.problem.choices[t];
          ASSERT_EQ(g.size(), w.size()) << where << " step " << t;
          for (std::size_t c = 0; c < w.size(); ++c) {
            EXPECT_EQ(g[c].units, w[c].units) << where << " step " << t;
            EXPECT_TRUE(SameBits(g[c].cost, w[c].cost)) << where << " step " << t << ": " << g[c].cost << " vs " << w[c].cost;
            EXPECT_EQ(g[c].type, w[c].type) << where << " step " << t;
            EXPECT_EQ(g[c].workers, w[c].workers) << where << " step " << t;
          }
        }
        ExpectSameSchedule(got.best, want.best, where);
        if (mode == 1 && want.best.feasible && want.best.payoff > 0.0) ++admitted;
      }
    }
    // The comparison covers promises, and prices raised by them: admissions in every burst.
    EXPECT_GT(admitted, 10) << "trial " << trial;
    if (HasFailure()) return;
  }
}

// Slots of 100 s (as Problem's jobs assume), a horizon of 60 of them.
OasisOptions SmallSlots() {
  OasisOptions options;
  options.slot_seconds = 100.0;
  options.horizon_slots = 60;
  return options;
}

// `input` one round later: `slot` seconds on, the jobs `out` rejected removed, the others older.
PolicyInput NextRound(const PolicyInput& input, const PolicyOutput& out, double slot) {
  PolicyInput next = input;
  next.jobs.clear();
  std::vector<std::size_t> rows;
  for (std::size_t i = 0; i < input.num_jobs(); ++i) {
    if (out.rejected[i] != 0) continue;
    rows.push_back(i);
    next.jobs.push_back(input.jobs[i]);
    next.jobs.back().time_since_start += Seconds(slot);
  }
  next.throughput = Matrix(rows.size(), input.num_types());
  for (std::size_t r = 0; r < rows.size(); ++r) {
    for (std::size_t j = 0; j < input.num_types(); ++j) next.throughput(r, j) = input.throughput(rows[r], j);
  }
  next.now_seconds += slot;
  return next;
}

// A burst of 10 arrivals with decide_per_round = 3: 3 decisions a round, oldest first, each
// job decided once, the others pending (not rejected) until their round; the first round's
// programmes and schedules are those of the same policy with no limit (the same promises
// before each).
TEST(Oasis, DecidesAtMostDecidePerRoundArrivalsOldestFirst) {
  PolicyInput input = Problem(3, 10, 10.0, 4000.0);
  for (std::size_t i = 0; i < input.num_jobs(); ++i) {
    input.jobs[i].time_since_start = Seconds(static_cast<double>((i * 7) % 10));  // ages 0..9, shuffled
  }
  std::vector<std::vector<PlanRecord>> plans(2);  // [limited, unlimited]
  std::vector<std::unique_ptr<Policy>> policies;
  for (std::size_t mode = 0; mode < 2; ++mode) {
    OasisOptions options = SmallSlots();
    options.decide_per_round = mode == 0 ? 3 : 0;
    // The rounds below do not advance the jobs, so every admitted one would fall behind its
    // plan and be replanned (a programme each): this test counts admission decisions only.
    options.replan = OasisOptions::Replan::kNever;
    policies.push_back(MakeOasisForTesting(options, Hooks(oasis::PricingMode::kKept, RecordPlans(plans[mode]))));
  }
  const Result<PolicyOutput> all = policies[1]->Allocate(input);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(plans[1].size(), 10u);
  std::vector<JobId> oldest_first;
  for (int age = 9; age >= 0; --age) {
    for (const PolicyJob& job : input.jobs) {
      if (job.time_since_start.value() == age) oldest_first.push_back(job.id);
    }
  }
  std::vector<JobId> decided;
  PolicyInput round = input;
  for (int r = 0; r < 4; ++r) {
    const std::size_t before = plans[0].size();
    const Result<PolicyOutput> out = policies[0]->Allocate(round);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(plans[0].size() - before, r < 3 ? 3u : 1u) << "round " << r;
    for (std::size_t p = before; p < plans[0].size(); ++p) decided.push_back(plans[0][p].job);
    // Undecided jobs are pending, not rejected: only a decided one may be.
    for (std::size_t i = 0; i < round.num_jobs(); ++i) {
      if (out->rejected[i] == 0) continue;
      EXPECT_NE(std::find(decided.begin(), decided.end(), round.jobs[i].id), decided.end()) << "round " << r;
    }
    if (r == 0) {
      for (std::size_t p = 0; p < 3; ++p) {
        ASSERT_EQ(plans[0][p].job, plans[1][p].job);
        ExpectSameSchedule(plans[0][p].best, plans[1][p].best, "decision " + std::to_string(p));
      }
    }
    round = NextRound(round, *out, 100.0);
  }
  EXPECT_EQ(decided, oldest_first);
}

// GPUs no admitted job takes go to admitted jobs first, pending ones after: with one GPU and
// one decision a round, the oldest job is decided (rejected: its utility is gone), the second
// oldest waits pending, and the youngest, admitted without a schedule (no utility), gets the GPU.
TEST(Oasis, AdmittedJobsTakeFreeGpusBeforePendingOnes) {
  OasisOptions options = SmallSlots();
  options.decide_per_round = 1;
  const auto policy = MakeOasis(options);
  PolicyInput input = Problem(1, 3, 10.0, 4000.0);
  input.jobs[0].time_since_start = Seconds(300.0);
  input.jobs[0].utility = UtilityFunction{UtilityFamily::kLinear, 10.0, 1.0, 1.0};  // worth 0 by now
  input.jobs[1].time_since_start = Seconds(200.0);
  input.jobs[2].time_since_start = Seconds(100.0);
  input.jobs[2].utility.reset();
  const Result<PolicyOutput> out = policy->Allocate(input);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->rejected, (std::vector<char>{1, 0, 0}));
  EXPECT_EQ(out->allocation(1, 0), 0.0);  // pending
  EXPECT_EQ(out->allocation(2, 0), 1.0);  // admitted without a schedule
  // The next round decides the pending job, which takes the GPU by its plan.
  const Result<PolicyOutput> next = policy->Allocate(NextRound(input, *out, 100.0));
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->rejected, (std::vector<char>{0, 0}));
  EXPECT_EQ(next->allocation(0, 0), 1.0);
  EXPECT_EQ(next->allocation(1, 0), 0.0);
}

// Four jobs of 30 slots each on one server of 4 GPUs (its price rises with each GPU promised),
// all admitted in round 0; three leave in round 1. `late_arrival` arrives in round 1 (a
// departure round) or in round 4. Returns the planned programmes (the four, then the late
// arrival's) of Oasis with `release_per_round`.
std::vector<PlanRecord> PlayDepartures(int release_per_round, bool arrives_in_departure_round) {
  std::vector<PlanRecord> plans;
  OasisOptions options = SmallSlots();
  options.release_per_round = release_per_round;
  const auto policy = MakeOasisForTesting(options, Hooks(oasis::PricingMode::kKept, RecordPlans(plans)));
  PolicyInput start = Problem(4, 4, 100.0, 40000.0);
  start.gpus_per_server = {4};
  for (PolicyJob& job : start.jobs) job.steps_remaining = 3000.0;
  PolicyJob late = start.jobs[0];
  late.id = JobId(5);
  const int arrival_round = arrives_in_departure_round ? 1 : 4;
  for (int r = 0; r <= 4; ++r) {
    PolicyInput in = start;
    in.now_seconds = 100.0 * r;
    if (r >= 1) in.jobs = {start.jobs[3]};
    for (PolicyJob& job : in.jobs) job.time_since_start = Seconds(100.0 * r);
    if (r >= arrival_round) {
      in.jobs.push_back(late);
      in.jobs.back().time_since_start = Seconds(100.0 * (r - arrival_round));
    }
    in.throughput = Matrix(in.jobs.size(), 1, 1.0);
    const Result<PolicyOutput> out = policy->Allocate(in);
    EXPECT_TRUE(out.ok());
    if (out.ok()) {
      EXPECT_EQ(std::count(out->rejected.begin(), out->rejected.end(), 1), 0);
    }
  }
  return plans;
}

// Three admitted jobs leave in one round; with release_per_round = 1 their promises are given
// back one a round. An arrival in the departure round sees dearer slots than with no limit; one
// arriving once all three are released sees the same programme, to the bit.
TEST(Oasis, ReleasesAtMostReleasePerRoundDepartures) {
  const auto step_costs = [](const PlanRecord& plan) {
    double sum = 0.0;
    for (const auto& step : plan.problem.choices) sum += step.empty() ? 0.0 : step.front().cost;
    return sum;
  };
  const std::vector<PlanRecord> early_limited = PlayDepartures(1, true);
  const std::vector<PlanRecord> early_unlimited = PlayDepartures(0, true);
  ASSERT_EQ(early_limited.size(), 5u);
  ASSERT_EQ(early_unlimited.size(), 5u);
  EXPECT_GT(step_costs(early_limited[4]), step_costs(early_unlimited[4]));  // two still promised
  const std::vector<PlanRecord> late_limited = PlayDepartures(1, false);
  const std::vector<PlanRecord> late_unlimited = PlayDepartures(0, false);
  ASSERT_EQ(late_limited.size(), 5u);
  ASSERT_EQ(late_unlimited.size(), 5u);
  const PlanRecord& got = late_limited[4];
  const PlanRecord& want = late_unlimited[4];
  ASSERT_EQ(got.problem.choices.size(), want.problem.choices.size());
  for (std::size_t t = 0; t < want.problem.choices.size(); ++t) {
    ASSERT_EQ(got.problem.choices[t].size(), want.problem.choices[t].size()) << "step " << t;
    for (std::size_t c = 0; c < want.problem.choices[t].size(); ++c) {
      EXPECT_TRUE(SameBits(got.problem.choices[t][c].cost, want.problem.choices[t][c].cost)) << "step " << t;
    }
  }
  ExpectSameSchedule(got.best, want.best, "arrival after the releases");
}

// Every programme's steps (StepGrid): the first starts at the current slot, the others on
// multiples of one power-of-two group, consecutive, at most `steps` of them.
TEST(Oasis, ProgrammeStepsAlignToPowerOfTwoGroups) {
  for (int trial = 0; trial < 10; ++trial) {
    std::mt19937_64 rng(static_cast<std::uint64_t>(7000 + trial));
    OasisOptions options;
    options.slot_seconds = 100.0;
    options.horizon_slots = 10 + 37 * trial;
    options.steps = 3 + trial % 7;
    int checked = 0;
    OasisTestHooks hooks;
    hooks.on_schedule = [&](JobId, const ScheduleProblem& problem, const Schedule&) {
      const auto& begin = problem.step_begin;
      ASSERT_EQ(begin.size(), problem.choices.size());
      ASSERT_GE(begin.size(), 1u);
      EXPECT_LE(begin.size(), static_cast<std::size_t>(options.steps));
      if (begin.size() < 3) return;
      const std::int64_t group = begin[2] - begin[1];
      EXPECT_TRUE(group > 0 && (group & (group - 1)) == 0) << group;
      EXPECT_LT(begin[1] - begin[0], group + 1);
      for (std::size_t s = 1; s < begin.size(); ++s) {
        EXPECT_EQ(begin[s] % group, 0);
        if (s >= 2) {
          EXPECT_EQ(begin[s] - begin[s - 1], group);
        }
      }
      ++checked;
    };
    const auto policy = MakeOasisForTesting(options, std::move(hooks));
    const RandomRun run = MakeRandomRun(rng, 30, options.slot_seconds);
    Play(run, rng, options.slot_seconds, {policy.get()});
    if (options.horizon_slots > 3 * options.steps) {
      EXPECT_GT(checked, 0) << "trial " << trial;
    }
  }
}

// One GPU, slots of 100 s, jobs of 300 s. A (worth 10 until 4,000 s) is admitted first and
// promised slots 0-2. B (worth 10 until 600 s) could finish only at 600 s, worth nothing: its
// schedule does not pay. C (worth 10 until 350 s) likewise. Deferred, both wait, pending; with
// defer=false both are rejected at once. A round later A has left (its later promises given
// back): C can no longer finish before 350 s and is rejected; B is planned again (slots 2-4,
// finishing at 500 s, worth 10/6), admitted, and runs on the GPU A left.
TEST(Oasis, DefersAJobThatDoesNotPayUntilPromisesAreGivenBack) {
  PolicyInput input = Problem(1, 3, 10.0, 4000.0);
  input.jobs[1].utility = UtilityFunction{UtilityFamily::kLinear, 10.0, 600.0, 1.0};
  input.jobs[2].utility = UtilityFunction{UtilityFamily::kLinear, 10.0, 350.0, 1.0};
  for (const bool defer : {false, true}) {
    OasisOptions options = SmallSlots();
    options.defer = defer;
    const auto policy = MakeOasis(options);
    const Result<PolicyOutput> first = policy->Allocate(input);
    ASSERT_TRUE(first.ok());
    const char gone = defer ? 0 : 1;  // B and C
    EXPECT_EQ(first->rejected, (std::vector<char>{0, gone, gone})) << defer;
    EXPECT_EQ(first->allocation(0, 0), 1.0);
    if (!defer) continue;
    PolicyInput next = NextRound(input, *first, 100.0);
    next.jobs.erase(next.jobs.begin());  // A finished
    next.throughput = Matrix(2, 1, 1.0);
    const Result<PolicyOutput> second = policy->Allocate(next);
    ASSERT_TRUE(second.ok());
    EXPECT_EQ(second->rejected, (std::vector<char>{0, 1}));
    EXPECT_EQ(second->allocation(0, 0), 1.0);
  }
}

// Two types of one 4-GPU server each; three long one-GPU jobs run on their plans (two on type
// a, one on b). A short 4-GPU job that runs on type a only arrives: type a is promised to the
// long jobs for longer than its utility lasts, so its schedule does not pay and it waits
// (deferred). The jobs need 7 GPUs of 8: with urgency the short job, which loses far more per
// GPU-slot of delay, takes type a and the long jobs move to b; without, the plans keep a.
TEST(Oasis, UrgentJobsGoFirstWhileEveryJobFits) {
  PolicyInput input;
  input.gpu_types = {"a", "b"};
  input.gpu_counts = {4.0, 4.0};
  input.gpus_per_server = {4, 4};
  for (int i = 0; i < 3; ++i) {
    PolicyJob job;
    job.id = JobId(i);
    job.steps_remaining = 5000.0;
    job.time_since_start = Seconds(0.0);
    job.utility = UtilityFunction{UtilityFamily::kLinear, 10.0, 100000.0, 1.0};
    input.jobs.push_back(job);
  }
  input.throughput = Matrix(3, 2, 1.0);
  for (const bool urgency : {false, true}) {
    OasisOptions options = SmallSlots();
    options.urgency = urgency;
    const auto policy = MakeOasis(options);
    const Result<PolicyOutput> first = policy->Allocate(input);
    ASSERT_TRUE(first.ok());
    ASSERT_EQ(first->rejected, (std::vector<char>(3, 0)));
    PolicyInput next = NextRound(input, *first, 100.0);
    PolicyJob gang;
    gang.id = JobId(3);
    gang.scale_factor = gang.min_workers = gang.max_workers = 4;
    gang.steps_remaining = 1200.0;  // 300 s at 4 steps/s
    gang.time_since_start = Seconds(0.0);
    gang.utility = UtilityFunction{UtilityFamily::kLinear, 10.0, 1000.0, 1.0};
    next.jobs.push_back(gang);
    next.throughput = Matrix(4, 2, 1.0);
    next.throughput(3, 0) = 4.0;
    next.throughput(3, 1) = 0.0;
    const Result<PolicyOutput> out = policy->Allocate(next);
    ASSERT_TRUE(out.ok());
    EXPECT_EQ(out->rejected, (std::vector<char>(4, 0))) << urgency;
    EXPECT_EQ(out->allocation(3, 0), urgency ? 1.0 : 0.0) << urgency;
    double on_a = 0.0;
    double on_b = 0.0;
    for (std::size_t i = 0; i < 4; ++i) {
      on_a += out->allocation(i, 0) * out->workers[i];
      on_b += out->allocation(i, 1) * out->workers[i];
    }
    EXPECT_LE(on_a, 4.0);
    EXPECT_LE(on_b, 4.0);
    if (urgency) {
      EXPECT_EQ(on_a, 4.0);  // the short job alone
      EXPECT_EQ(on_b, 3.0);  // and every long job still runs
    }
  }
}

// Two one-GPU servers. A 2-GPU gang G (500 steps at 2 steps/s: 3 slots) is admitted at t = 0
// and planned on both GPUs for slots 0-2, but makes no progress in them (restarts lost it:
// execution drifts from the plan). One-GPU jobs of 20 slots arrive at slots 1, 10, 20, 30 and
// 40; each is planned on the GPU free soonest. Slot by slot, as worked from the prices (an
// idle GPU costs L, a promised one cannot be promised again, the earliest completion wins):
// - replan=0: X1 gets slots 3-22, X10 10-29, X20 23-42, X30 30-49, X40 43-62, so from slot
//   3 on some plan holds a GPU; G, whose plan has ended, can take only GPUs no plan holds and
//   still waits at slot 50.
// - replan=1 (once the plan ended): at slot 3 G is promised the first slots after X1 where
//   both GPUs are free, 23-25; X10 plans around it (10-22, 26-32); G finishes in slot 25.
// - replan=2 (once behind): at slot 1 the rest of G's plan (slots 1-2) no longer covers its
//   500 steps: it is promised slots 2-4 (slot 1 is still its own), X1 then gets 5-24; G runs
//   in slots 1-4 (slot 1 on GPUs nobody planned), does 400 steps in 3-4, and when its plan
//   ends at slot 5 it is promised slot 25, the first after X1 with both GPUs free.
TEST(Oasis, ReplansAnAdmittedJobThatFellBehindItsPlan) {
  struct Job {
    PolicyJob job;
    double throughput = 1.0;
  };
  const auto one_gpu_job = [](int id, double since) {
    Job x;
    x.job.id = JobId(id);
    x.job.steps_remaining = 2000.0;
    x.job.time_since_start = Seconds(since);
    x.job.utility = UtilityFunction{UtilityFamily::kLinear, 200.0, 100000.0, 1.0};
    return x;
  };
  for (const OasisOptions::Replan replan :
       {OasisOptions::Replan::kNever, OasisOptions::Replan::kWhenEnded, OasisOptions::Replan::kWhenBehind}) {
    OasisOptions options = SmallSlots();
    options.replan = replan;
    const auto policy = MakeOasis(options);
    std::vector<Job> jobs(1);
    jobs[0].job.id = JobId(0);
    jobs[0].job.scale_factor = jobs[0].job.min_workers = jobs[0].job.max_workers = 2;
    jobs[0].job.steps_remaining = 500.0;
    jobs[0].job.time_since_start = Seconds(0.0);
    jobs[0].job.utility = UtilityFunction{UtilityFamily::kLinear, 60.0, 100000.0, 1.0};
    jobs[0].throughput = 2.0;
    int gang_done = -1;  // the slot after which G finished
    std::vector<int> gang_ran;
    for (int slot = 0; slot < 50; ++slot) {
      if (slot == 1 || (slot > 0 && slot % 10 == 0)) jobs.push_back(one_gpu_job(100 + slot, 0.0));
      PolicyInput input;
      input.gpu_types = {"v100"};
      input.gpu_counts = {2.0};
      input.gpus_per_server = {1};
      input.now_seconds = 100.0 * slot;
      input.throughput = Matrix(jobs.size(), 1);
      for (std::size_t i = 0; i < jobs.size(); ++i) {
        input.jobs.push_back(jobs[i].job);
        input.throughput(i, 0) = jobs[i].throughput;
      }
      const Result<PolicyOutput> out = policy->Allocate(input);
      ASSERT_TRUE(out.ok());
      double used = 0.0;
      for (std::size_t i = 0; i < jobs.size(); ++i) {
        ASSERT_EQ(out->rejected[i], 0) << static_cast<int>(replan) << " slot " << slot << " job " << jobs[i].job.id.value();
        used += out->allocation(i, 0) * out->workers[i];
        if (out->allocation(i, 0) == 0.0) continue;
        const bool gang = jobs[i].job.id == JobId(0);
        if (gang) gang_ran.push_back(slot);
        if (gang && slot < 3) continue;  // G's lost progress
        jobs[i].job.steps_remaining -= 100.0 * jobs[i].throughput;
      }
      EXPECT_LE(used, 2.0) << static_cast<int>(replan) << " slot " << slot;
      for (Job& j : jobs) j.job.time_since_start += Seconds(100.0);
      if (jobs[0].job.id == JobId(0) && jobs[0].job.steps_remaining <= 0.0) gang_done = slot;
      std::erase_if(jobs, [](const Job& j) { return j.job.steps_remaining <= 0.0; });
    }
    if (replan == OasisOptions::Replan::kWhenEnded) {
      EXPECT_EQ(gang_ran, (std::vector<int>{0, 1, 2, 23, 24, 25}));
      EXPECT_EQ(gang_done, 25);
    } else if (replan == OasisOptions::Replan::kWhenBehind) {
      EXPECT_EQ(gang_ran, (std::vector<int>{0, 1, 2, 3, 4, 25}));
      EXPECT_EQ(gang_done, 25);
    } else {
      EXPECT_EQ(gang_ran, (std::vector<int>{0, 1, 2}));
      EXPECT_EQ(gang_done, -1);
    }
  }
}

// One GPU, slots of 100 s. G (1,000 steps at 1 step/s by the table: 10 slots) is admitted at
// t = 0 and planned for slots 0-9, but the physics runs it at half the table's speed: 50 steps
// a slot, after a first round lost whole to its start-up (no progress: no speed measured).
// Worked by hand: at slot 1 the rest of its plan (slots 1-9, 900 steps) still covers 90 % of
// its 1,000 steps; at slot 2 it has measured 50 of 100 steps (speed 0.5), the rest of its plan
// would do 800 × 0.5 = 400 < 0.9 × 950, so it is replanned once, at its realised speed: 950
// steps at 50 a slot reach slot 20, where it finishes (rounds 1-20 do 50 steps each), and it is
// never behind again. At the table's speed it would be planned for only 10 more slots
// and replanned again at slot 12, and on.
TEST(Oasis, ReplansAtTheJobsRealisedSpeed) {
  OasisOptions options = SmallSlots();
  int slot = 0;
  std::vector<int> planned_at;  // the slots G's programmes ran at (its admission, then replans)
  const auto policy = MakeOasisForTesting(
      options, Hooks(oasis::PricingMode::kKept, [&](JobId id, const ScheduleProblem&, const Schedule& best) {
        EXPECT_TRUE(best.feasible) << "slot " << slot;
        if (id == JobId(0)) planned_at.push_back(slot);
      }));
  PolicyJob gang;
  gang.id = JobId(0);
  gang.steps_remaining = 1000.0;
  gang.utility = UtilityFunction{UtilityFamily::kLinear, 100.0, 100000.0, 1.0};
  int done = -1;
  int ran = 0;
  for (; slot < 40 && done < 0; ++slot) {
    PolicyInput input;
    input.gpu_types = {"v100"};
    input.gpu_counts = {1.0};
    input.gpus_per_server = {1};
    input.now_seconds = 100.0 * slot;
    input.throughput = Matrix(1, 1, 1.0);
    gang.time_since_start = Seconds(100.0 * slot);
    input.jobs = {gang};
    const Result<PolicyOutput> out = policy->Allocate(input);
    ASSERT_TRUE(out.ok());
    ASSERT_EQ(out->rejected[0], 0);
    if (out->allocation(0, 0) == 1.0) {
      ++ran;
      gang.running_type = 0;
      if (slot > 0) gang.steps_remaining -= 50.0;  // half the table's speed; slot 0: start-up
    } else {
      gang.running_type = -1;
    }
    if (gang.steps_remaining <= 0.0) done = slot;
  }
  EXPECT_EQ(done, 20);
  EXPECT_EQ(ran, 21);
  EXPECT_EQ(planned_at, (std::vector<int>{0, 2}));
}

TEST(Oasis, OptionsAreChecked) {
  PolicyOptions options;
  options.params = {{"slot", "0"}};
  EXPECT_FALSE(MakeOasis(options).ok());
  options.params = {{"units", "x"}};
  EXPECT_FALSE(MakeOasis(options).ok());
  options.params = {{"horizon", "10"}, {"ps_ratio", "0.5"}};
  EXPECT_TRUE(MakeOasis(options).ok());
  options.params = {{"decide_per_round", "-1"}};
  EXPECT_FALSE(MakeOasis(options).ok());
  options.params = {{"release_per_round", "1.5"}};
  EXPECT_FALSE(MakeOasis(options).ok());
  options.params = {{"defer", "2"}};
  EXPECT_FALSE(MakeOasis(options).ok());
  options.params = {{"replan", "yes"}};
  EXPECT_FALSE(MakeOasis(options).ok());
  options.params = {{"decide_per_round", "0"}, {"release_per_round", "7"}, {"defer", "0"}, {"urgency", "0"}, {"replan", "0"}};
  const Result<OasisOptions> parsed = ParseOasisOptions(options);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->decide_per_round, 0);
  EXPECT_EQ(parsed->release_per_round, 7);
  EXPECT_FALSE(parsed->defer);
  EXPECT_FALSE(parsed->urgency);
  EXPECT_EQ(parsed->replan, OasisOptions::Replan::kNever);
}

}  // namespace
}  // namespace gavel::policy
