// End to end on loopback with real processes: `gavel serve`, `gavel worker` agents of three
// GPU types, and the shipped training program (examples/training/train.py) under the Python
// iterator client. Rounds last seconds. Truths checked:
//   * steps add up exactly: the scheduler's count, the per-type counts, the training program's
//     own log of executed steps (each step once, in order) and its checkpointed checksum;
//   * the time each job received on each GPU type tracks its allocation (integrated from the
//     allocations the scheduler reported while it ran) within 2 rounds + 25 %;
//   * completions come in the order the simulator predicts for the same jobs, for every two
//     jobs whose predicted completions are more than two rounds apart;
//   * a kill -9 of an agent (and its jobs) or of the daemon loses no job and no checkpointed
//     step; unauthorised and malformed requests are refused.
// Labelled "slow"; each test is bounded (< 60 s).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gavel/core/shipped_table.h"
#include "gavel/daemon/e2e_cluster.h"
#include "gavel/core/snapshot.h"
#include "gavel/core/throughput_table.h"
#include "gavel/rpc/grpc_util.h"
#include "gavel/sim/simulator.h"
#include "gavel/wire/scheduler.grpc.pb.h"
#include "gavel/wire/worker.grpc.pb.h"

namespace gavel::daemon {
namespace {

// ------------------------------------------------------------------------------------------

TEST(RuntimeEndToEnd, TenJobsOnThreeAgentsTrackTheirAllocationAndTheSimulator) {
  const auto table = ShippedThroughputTable();
  constexpr double kSpeedup = 4.0;
  const std::vector<std::string> types = {
      "ResNet-18 (batch size 64)", "ResNet-50 (batch size 32)", "Transformer (batch size 16)",
      "A3C",                       "LM (batch size 20)",        "Recommendation (batch size 1024)",
      "CycleGAN",                  "ResNet-18 (batch size 32)", "Transformer (batch size 64)",
      "LM (batch size 80)"};
  std::vector<JobPlan> plans;
  for (std::size_t i = 0; i < types.size(); ++i) {
    const double v100 = *table->Isolated("v100", JobTypeKey{types[i], 1});
    const double seconds_alone = 2.0 + 0.5 * static_cast<double>(i);  // on a V100
    plans.push_back({types[i], static_cast<std::uint64_t>(std::llround(v100 * kSpeedup *
                                                                        seconds_alone))});
  }

  Cluster cluster("ten");
  // Every job shares (share_floor=0). With the sharing floor's default only the six oldest
  // jobs share and the next joins when one of them finishes, so a finish a round off the
  // simulated one (a lease's last fraction of a step, a slow start on a loaded machine) moves
  // the later jobs' finishes by more than the two rounds allowed below (docs/runtime.md,
  // "Where live and simulated runs differ").
  cluster.StartDaemon(/*expected_gpus=*/3, "", "max_min_fairness_perf:share_floor=0");
  std::map<std::uint64_t, std::size_t> plan_of;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    auto id = cluster.Submit(plans[i], kSpeedup);
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    plan_of[*id] = i;
  }
  for (const char* type : {"v100", "p100", "k80"}) cluster.StartAgent(type);

  // Integrate each job's allocation over time while it is active.
  std::map<std::uint64_t, std::map<std::string, double>> expected_seconds;
  wire::ListJobsResponse last;
  auto previous = Clock::now();
  const auto deadline = previous + std::chrono::seconds(55);
  while (Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto jobs = cluster.Jobs();
    ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
    const auto now = Clock::now();
    const double dt = std::chrono::duration<double>(now - previous).count();
    previous = now;
    for (const auto& job : jobs->jobs()) {
      if (job.state() != wire::RUNNING && job.state() != wire::QUEUED) continue;
      for (const auto& t : job.per_type()) expected_seconds[job.id()][t.gpu_type()] += t.allocation() * dt;
    }
    last = *std::move(jobs);
    if (AllFinished(last)) break;
  }
  ASSERT_TRUE(AllFinished(last)) << "not done in time:\n" << cluster.Cli({"jobs", "--scheduler", cluster.address(), "--all"}).second;

  // Steps add up exactly, and each step ran once.
  for (const auto& job : last.jobs()) {
    const JobPlan& plan = plans[plan_of.at(job.id())];
    EXPECT_EQ(job.state(), wire::DONE) << job.DebugString();
    EXPECT_EQ(job.steps_done(), plan.steps);
    std::uint64_t per_type = 0;
    for (const auto& t : job.per_type()) per_type += t.steps();
    EXPECT_EQ(per_type, plan.steps) << "job " << job.id();
    const std::vector<std::uint64_t> executed = ReadExecLog(cluster.ExecLog(plan));
    ASSERT_EQ(executed.size(), plan.steps) << "job " << job.id() << " redid or skipped steps";
    for (std::uint64_t k = 0; k < executed.size(); ++k) ASSERT_EQ(executed[k], k);
    EXPECT_EQ(cluster.Checkpoint(job.id()),
              std::make_pair(plan.steps, ExpectedChecksum(plan.steps)));
  }

  // Time on each type tracks the allocation.
  double worst = 0.0;
  for (const auto& job : last.jobs()) {
    double total = 0.0;
    for (const auto& t : job.per_type()) total += t.seconds();
    for (const auto& t : job.per_type()) {
      const double expected = expected_seconds[job.id()][t.gpu_type()];
      const double tolerance = 2 * kRoundSeconds + 0.25 * total;
      worst = std::max(worst, std::abs(t.seconds() - expected) / std::max(total, 1e-9));
      EXPECT_NEAR(t.seconds(), expected, tolerance)
          << "job " << job.id() << " on " << t.gpu_type() << " (ran " << total << " s)";
    }
  }
  std::cout << "worst |received - allocated| / job time: " << worst << "\n";

  // The simulator's prediction for the same jobs (steps scaled by the speedup).
  sim::SimulationOptions options;
  options.cluster = {{"v100", 1, 1}, {"p100", 1, 1}, {"k80", 1, 1}};
  options.throughputs = table;
  options.policy = "max_min_fairness_perf:share_floor=0";
  options.round_length = Seconds(kRoundSeconds);
  for (const JobPlan& plan : plans) {
    workload::TraceJob job;
    job.job_type = plan.type;
    job.total_steps = static_cast<double>(plan.steps) / kSpeedup;
    job.scale_factor = 1;
    job.arrival_time = Seconds(0.0);
    options.trace.push_back(job);
  }
  auto predicted = sim::Simulate(options);
  ASSERT_TRUE(predicted.ok()) << predicted.status().ToString();
  std::map<std::size_t, double> sim_finish;  // by plan index
  for (const auto& job : predicted->jobs) {
    ASSERT_TRUE(job.finish.has_value());
    sim_finish[static_cast<std::size_t>(job.id.value())] = job.finish->value();
  }
  std::map<std::size_t, std::int64_t> real_finish;
  for (const auto& job : last.jobs()) real_finish[plan_of.at(job.id())] = job.finished_unix_ms();
  int pairs = 0;
  int concordant = 0;
  int checked = 0;
  for (std::size_t a = 0; a < plans.size(); ++a) {
    for (std::size_t b = a + 1; b < plans.size(); ++b) {
      ++pairs;
      const bool sim_order = sim_finish[a] < sim_finish[b];
      const bool real_order = real_finish[a] < real_finish[b];
      concordant += sim_order == real_order ? 1 : 0;
      if (std::abs(sim_finish[a] - sim_finish[b]) > 2 * kRoundSeconds) {
        ++checked;
        EXPECT_EQ(sim_order, real_order)
            << "jobs " << a << " and " << b << ": simulated " << sim_finish[a] << " vs "
            << sim_finish[b] << " s";
      }
    }
  }
  std::cout << "completion order: " << concordant << "/" << pairs
            << " pairs agree with the simulator; " << checked
            << " pairs more than two rounds apart, all required to agree\n";
}

TEST(RuntimeEndToEnd, AKilledAgentsJobFinishesElsewhereFromItsCheckpoint) {
  constexpr double kSpeedup = 2.0;
  const JobPlan plan{"ResNet-18 (batch size 64)", 240};
  Cluster cluster("agent_kill");
  cluster.StartDaemon(/*expected_gpus=*/2);
  auto id = cluster.Submit(plan, kSpeedup);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  cluster.StartAgent("v100");
  cluster.StartAgent("k80");
  // Wait until the job runs on the v100 with some progress checkpointed.
  bool killed = false;
  std::uint64_t before = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(50);
  wire::ListJobsResponse last;
  while (Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto jobs = cluster.Jobs();
    ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
    last = *jobs;
    const auto& job = last.jobs(0);
    if (!killed && job.state() == wire::RUNNING && job.gpu_type() == "v100" &&
        job.steps_done() > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(700));  // mid-round
      cluster.StopAgent("v100", /*kill_jobs=*/true);
      killed = true;
      before = job.steps_done();
    }
    if (killed && AllFinished(last)) break;
  }
  ASSERT_TRUE(killed) << "the job never ran on the v100";
  ASSERT_TRUE(AllFinished(last)) << last.DebugString();
  const auto& job = last.jobs(0);
  EXPECT_EQ(job.state(), wire::DONE) << job.DebugString();
  EXPECT_EQ(job.steps_done(), plan.steps);
  std::uint64_t per_type = 0;
  for (const auto& t : job.per_type()) per_type += t.steps();
  EXPECT_EQ(per_type, plan.steps);
  EXPECT_GT(before, 0u);
  EXPECT_EQ(cluster.Checkpoint(job.id()), std::make_pair(plan.steps, ExpectedChecksum(plan.steps)));
  const std::vector<std::uint64_t> executed = ReadExecLog(cluster.ExecLog(plan));
  std::set<std::uint64_t> distinct(executed.begin(), executed.end());
  EXPECT_EQ(distinct.size(), plan.steps) << "every step ran";
  std::cout << "steps redone after the kill: " << executed.size() - plan.steps << "\n";
}

TEST(RuntimeEndToEnd, AKilledDaemonRestartsWithNoJobLostAndProgressKept) {
  constexpr double kSpeedup = 2.0;
  const std::vector<JobPlan> plans = {{"ResNet-18 (batch size 64)", 300},
                                      {"Transformer (batch size 16)", 120},
                                      {"LM (batch size 20)", 600}};
  Cluster cluster("daemon_kill");
  cluster.StartDaemon(/*expected_gpus=*/2);
  std::map<std::uint64_t, std::size_t> plan_of;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    auto id = cluster.Submit(plans[i], kSpeedup);
    ASSERT_TRUE(id.ok());
    plan_of[*id] = i;
  }
  cluster.StartAgent("v100");
  cluster.StartAgent("p100");
  std::this_thread::sleep_for(std::chrono::milliseconds(4500));
  auto before = cluster.Jobs();
  ASSERT_TRUE(before.ok());
  std::uint64_t progress = 0;
  for (const auto& job : before->jobs()) progress += job.steps_done();
  ASSERT_GT(progress, 0u);
  cluster.KillDaemon();
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  cluster.StartDaemon(/*expected_gpus=*/2);
  auto after = cluster.Jobs();
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  ASSERT_EQ(after->jobs_size(), before->jobs_size()) << "no job lost";
  for (int i = 0; i < after->jobs_size(); ++i) {
    EXPECT_EQ(after->jobs(i).id(), before->jobs(i).id());
    EXPECT_GE(after->jobs(i).steps_done(), before->jobs(i).steps_done()) << "progress kept";
  }
  Result<wire::ListJobsResponse> finished = WaitAllFinished(cluster, std::chrono::seconds(45));
  ASSERT_TRUE(finished.ok()) << finished.status().ToString();
  const wire::ListJobsResponse& last = *finished;
  ASSERT_TRUE(AllFinished(last)) << last.DebugString();
  for (const auto& job : last.jobs()) {
    const JobPlan& plan = plans[plan_of.at(job.id())];
    EXPECT_EQ(job.state(), wire::DONE);
    EXPECT_EQ(job.steps_done(), plan.steps);
    EXPECT_EQ(cluster.Checkpoint(job.id()),
              std::make_pair(plan.steps, ExpectedChecksum(plan.steps)));
  }
}

// Space sharing under a packing policy: four jobs of types that pack well
// on two v100 agents, so pairs share GPUs. train.py runs at the table's co-located rate when
// the agent tells it its partner (GAVEL_PARTNER_JOB_TYPE). An agent is killed -9 (with its
// jobs) while pairs run, then the daemon. Truths: every job ends DONE with exactly its steps
// and its checkpointed checksum (each step once, in order); two jobs were seen RUNNING on one
// GPU (the job list, and `gavel jobs`); co-located throughputs were measured and shown.
TEST(RuntimeEndToEnd, PackedPairsShareGpusAndSurviveAgentAndDaemonKills) {
  constexpr double kSpeedup = 2.0;
  const std::vector<JobPlan> plans = {{"A3C", 150},
                                      {"Transformer (batch size 16)", 220},
                                      {"LM (batch size 5)", 2000},
                                      {"Transformer (batch size 32)", 210}};
  Cluster cluster("packed");
  cluster.StartDaemon(/*expected_gpus=*/2, "", "max_min_fairness_packed");
  std::map<std::uint64_t, std::size_t> plan_of;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    auto id = cluster.Submit(plans[i], kSpeedup);
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    plan_of[*id] = i;
  }
  cluster.StartAgent("v100", "", 1, "va");
  cluster.StartAgent("v100", "", 1, "vb");

  bool shared = false;         // two jobs RUNNING on one GPU, each naming the other
  bool shown = false;          // ... and `gavel jobs` shows it
  std::map<std::uint64_t, double> colocated;  // measured co-located steps/s seen per job
  bool agent_killed = false;
  bool daemon_killed = false;
  wire::ListJobsResponse last;
  const auto deadline = Clock::now() + std::chrono::seconds(100);
  while (Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    auto jobs = cluster.Jobs();
    if (!jobs.ok()) continue;  // the daemon restarting
    last = *jobs;
    std::map<std::uint64_t, const wire::JobInfo*> running_on;
    for (const auto& job : last.jobs()) {
      if (job.colocated_measurements() > 0) {
        EXPECT_GT(job.colocated_steps_per_s(), 0.0);
        colocated[job.id()] = job.colocated_steps_per_s();
      }
      if (job.state() != wire::RUNNING || job.worker_ids_size() == 0 || !job.sharing()) continue;
      const auto [other, fresh] = running_on.emplace(job.worker_ids(0), &job);
      if (!fresh && other->second->partner_job_id() == job.id() &&
          job.partner_job_id() == other->second->id()) {
        if (!shown) {
          auto [code, out] = cluster.Cli({"jobs", "--scheduler", cluster.address()});
          shown = code == 0 && out.find("with " + std::to_string(job.id())) != std::string::npos;
        }
        shared = true;
      }
    }
    std::uint64_t progress = 0;
    for (const auto& job : last.jobs()) progress += job.steps_done();
    if (shared && !agent_killed && progress > 0) {
      cluster.StopAgent("va", /*kill_jobs=*/true);
      agent_killed = true;
    } else if (agent_killed && !daemon_killed && !colocated.empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      cluster.KillDaemon();
      daemon_killed = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      cluster.StartDaemon(/*expected_gpus=*/1, "", "max_min_fairness_packed");
      cluster.StartAgent("v100", "", 1, "va");  // the host comes back
    }
    if (daemon_killed && AllFinished(last)) break;
  }
  ASSERT_TRUE(shared) << "no two jobs were seen sharing a GPU: " << last.DebugString();
  EXPECT_TRUE(shown) << "`gavel jobs` did not show the partner";
  ASSERT_TRUE(agent_killed && daemon_killed);
  ASSERT_TRUE(AllFinished(last)) << last.DebugString();
  EXPECT_FALSE(colocated.empty()) << "no co-located throughput was measured";
  for (const auto& [job, rate] : colocated) {
    std::cout << "job " << job << " measured " << rate << " steps/s next to its partner\n";
  }
  for (const auto& job : last.jobs()) {
    const JobPlan& plan = plans[plan_of.at(job.id())];
    EXPECT_EQ(job.state(), wire::DONE) << job.DebugString();
    EXPECT_EQ(job.steps_done(), plan.steps);
    EXPECT_EQ(cluster.Checkpoint(job.id()),
              std::make_pair(plan.steps, ExpectedChecksum(plan.steps)));
    const std::vector<std::uint64_t> executed = ReadExecLog(cluster.ExecLog(plan));
    EXPECT_EQ(std::set<std::uint64_t>(executed.begin(), executed.end()).size(), plan.steps);
  }
}

TEST(RuntimeEndToEnd, AJobThatCrashesTheSameWayIsFailedAndOthersRunOn) {
  constexpr double kSpeedup = 4.0;
  Cluster cluster("crash");
  cluster.StartDaemon(/*expected_gpus=*/1);
  const JobPlan good{"ResNet-18 (batch size 64)", 200};
  JobPlan bad{"Transformer (batch size 16)", 100};
  // The bad job's program fails at step 5 every time (exit status 3).
  auto bad_id = [&]() -> Result<std::uint64_t> {
    std::vector<std::string> argv = cluster.TrainCommand(bad, kSpeedup);
    argv.push_back("--fail-at-step");
    argv.push_back("5");
    const std::string file = cluster.dir() + "/bad.json";
    nlohmann::json job = {{"command", argv}, {"steps", bad.steps},
                          {"job_type", bad.type}, {"name", "bad"}};
    std::ofstream(file) << job.dump();
    auto [code, out] = cluster.Cli({"submit", "--scheduler", cluster.address(), "--job-file", file});
    if (code != 0) return Status::Internal(out);
    return static_cast<std::uint64_t>(std::stoull(out));
  }();
  ASSERT_TRUE(bad_id.ok()) << bad_id.status().ToString();
  auto good_id = cluster.Submit(good, kSpeedup);
  ASSERT_TRUE(good_id.ok());
  cluster.StartAgent("v100");
  Result<wire::ListJobsResponse> finished = WaitAllFinished(cluster, std::chrono::seconds(45));
  ASSERT_TRUE(finished.ok()) << finished.status().ToString();
  const wire::ListJobsResponse& last = *finished;
  ASSERT_TRUE(AllFinished(last)) << last.DebugString();
  for (const auto& job : last.jobs()) {
    if (job.id() == *bad_id) {
      EXPECT_EQ(job.state(), wire::FAILED);
      EXPECT_EQ(job.failures(), 2u) << "retried once, then recognised as failing the same way";
      EXPECT_EQ(job.last_exit_code(), 3);
      EXPECT_NE(job.message().find("exit code 3"), std::string::npos) << job.message();
      EXPECT_EQ(job.steps_done(), 0u);
    } else {
      EXPECT_EQ(job.state(), wire::DONE);
      EXPECT_EQ(job.steps_done(), good.steps);
    }
  }
}

TEST(RuntimeEndToEnd, TheCommandLineRefusesUnauthorisedAndMalformedRequests) {
  Cluster cluster("access");
  const std::string tokens = cluster.dir() + "/tokens";
  std::ofstream(tokens) << "alice-token-0001 alice\nbob-token-000002 bob\nops-token-000003 ops admin\n";
  std::ofstream(cluster.dir() + "/alice") << "alice-token-0001\n";
  std::ofstream(cluster.dir() + "/bob") << "bob-token-000002\n";
  std::ofstream(cluster.dir() + "/wrong") << "wrong-token-0000\n";
  // Owner-only, as docs/runtime.md tells users: a readable token file draws a warning.
  for (const char* name : {"tokens", "alice", "bob", "wrong"}) {
    std::filesystem::permissions(cluster.dir() + "/" + name,
                                 std::filesystem::perms::owner_read |
                                     std::filesystem::perms::owner_write);
  }
  cluster.StartDaemon(0, tokens);
  const std::string addr = cluster.address();

  auto [code, out] = cluster.Cli({"submit", "--scheduler", addr, "--steps", "10", "--", "true"});
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("unauthenticated"), std::string::npos) << out;
  std::tie(code, out) = cluster.Cli({"jobs", "--scheduler", addr, "--token-file",
                                     cluster.dir() + "/wrong"});
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("unauthenticated"), std::string::npos) << out;

  std::tie(code, out) = cluster.Cli({"submit", "--scheduler", addr, "--token-file",
                                     cluster.dir() + "/alice", "--steps", "10", "--name", "mine",
                                     "--", "true"});
  ASSERT_EQ(code, 0) << out;
  const std::string id = out.substr(0, out.find('\n'));

  std::tie(code, out) = cluster.Cli({"submit", "--scheduler", addr, "--token-file",
                                     cluster.dir() + "/alice", "--steps", "10", "--throughput",
                                     "tpu=3", "--", "true"});
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("spec.throughputs[\"tpu\"]"), std::string::npos) << out;
  std::ofstream(cluster.dir() + "/jobs.json") << R"([{"command": ["true"], "steps": 5},
                                                     {"command": ["true"], "stepz": 5}])";
  std::tie(code, out) = cluster.Cli({"submit", "--scheduler", addr, "--token-file",
                                     cluster.dir() + "/alice", "--job-file",
                                     cluster.dir() + "/jobs.json"});
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("job 1: unknown field `stepz`"), std::string::npos) << out;

  std::tie(code, out) = cluster.Cli({"cancel", "--scheduler", addr, "--token-file",
                                     cluster.dir() + "/bob", id});
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("permission denied"), std::string::npos) << out;

  std::tie(code, out) = cluster.Cli({"jobs", "--scheduler", addr, "--token-file",
                                     cluster.dir() + "/bob", "-o", "json", "--all"});
  ASSERT_EQ(code, 0) << out;
  const auto jobs = nlohmann::json::parse(out);
  ASSERT_EQ(jobs.size(), 1u) << "nothing lost, nothing half-accepted";
  EXPECT_EQ(jobs[0]["id"].get<std::uint64_t>(), std::stoull(id));
  EXPECT_EQ(jobs[0]["state"], "queued");
  EXPECT_EQ(jobs[0]["user"], "alice");
  EXPECT_EQ(jobs[0]["steps_done"], 0);
  EXPECT_EQ(jobs[0]["total_steps"], 10);

  std::tie(code, out) = cluster.Cli({"cancel", "--scheduler", addr, "--token-file",
                                     cluster.dir() + "/alice", id});
  EXPECT_EQ(code, 0) << out;
  std::tie(code, out) = cluster.Cli({"jobs", "--scheduler", addr, "--token-file",
                                     cluster.dir() + "/alice", "--all"});
  EXPECT_EQ(code, 0);
  EXPECT_NE(out.find("cancelled"), std::string::npos) << out;
  EXPECT_NE(out.find("STATE"), std::string::npos) << out;
}

// Credentials, on the real binaries: a job tries every credential its
// environment holds against another user's job (cancel) and against the daemon's agent
// service (a forged completion); the state and its files are private; a second `gavel serve`
// on the same address fails at start; `gavel jobs --limit` pages.
TEST(RuntimeEndToEnd, AJobHoldsNoCredentialThatWorksAgainstOthers) {
  Cluster cluster("trust");
  const std::string tokens = cluster.dir() + "/tokens";
  std::ofstream(tokens) << "alice-token-0001 alice\nbob-token-000002 bob\n"
                           "ops-token-000003 ops admin\nhost-token-00004 host1 agent\n";
  std::ofstream(cluster.dir() + "/alice") << "alice-token-0001\n";
  std::ofstream(cluster.dir() + "/bob") << "bob-token-000002\n";
  std::ofstream(cluster.dir() + "/host") << "host-token-00004\n";
  for (const char* name : {"tokens", "alice", "bob", "host"}) {
    fs::permissions(cluster.dir() + "/" + name,
                    fs::perms::owner_read | fs::perms::owner_write);
  }
  cluster.StartDaemon(2, tokens);
  cluster.StartAgent("v100", cluster.dir() + "/host", 2);
  const std::string addr = cluster.address();

  auto [code, out] = cluster.Cli({"submit", "--scheduler", addr, "--token-file",
                                  cluster.dir() + "/bob", "--steps", "1000000", "--", "sleep",
                                  "600"});
  ASSERT_EQ(code, 0) << out;
  const std::uint64_t bobs = std::stoull(out);
  const std::string dump = cluster.dir() + "/alice-env.txt";
  std::tie(code, out) = cluster.Cli({"submit", "--scheduler", addr, "--token-file",
                                     cluster.dir() + "/alice", "--steps", "1000000", "--", "sh",
                                     "-c", "env > " + dump + ".tmp && mv " + dump + ".tmp " +
                                     dump + "; sleep 600"});
  ASSERT_EQ(code, 0) << out;
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (!fs::exists(dump) && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(fs::exists(dump)) << "alice's job never ran";

  // Every value of its environment that could be a token (and every whole line).
  std::set<std::string> candidates;
  {
    std::istringstream lines(ReadFile(dump));
    std::string line;
    while (std::getline(lines, line)) {
      candidates.insert(line);
      const std::size_t eq = line.find('=');
      if (eq != std::string::npos) candidates.insert(line.substr(eq + 1));
    }
  }
  auto workers = wire::WorkerToScheduler::NewStub(rpc::MakeChannel(addr));
  int tried = 0;
  for (const std::string& value : candidates) {
    if (value.size() < 8 || value.size() > 4096 ||
        value.find_first_of(" \t") != std::string::npos) {
      continue;
    }
    ++tried;
    const std::string file = cluster.dir() + "/stolen";
    std::ofstream(file, std::ios::trunc) << value << "\n";
    fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write);
    std::tie(code, out) = cluster.Cli({"cancel", "--scheduler", addr, "--token-file", file,
                                       std::to_string(bobs)});
    EXPECT_NE(code, 0) << "cancelled bob's job with " << value;
    grpc::ClientContext context;
    rpc::PrepareContext(&context, Seconds(5.0), value);
    wire::ReportDoneRequest forged;
    forged.set_agent_id("any");
    forged.set_job_id(bobs);
    forged.set_outcome(wire::COMPLETED);
    forged.set_checkpointed_steps(1000000);
    wire::ReportDoneResponse done;
    const grpc::Status status = workers->ReportDone(&context, forged, &done);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << value;
  }
  EXPECT_GT(tried, 5);
  std::tie(code, out) = cluster.Cli({"jobs", "--scheduler", addr, "--token-file",
                                     cluster.dir() + "/bob", "-o", "json", std::to_string(bobs)});
  ASSERT_EQ(code, 0) << out;
  const auto bob_job = nlohmann::json::parse(out);
  ASSERT_EQ(bob_job.size(), 1u);
  EXPECT_NE(bob_job[0]["state"], "cancelled");
  EXPECT_EQ(bob_job[0]["steps_done"], 0);

  // Paging on the command line: one job, and the token of the next page on stderr.
  std::tie(code, out) = cluster.Cli({"jobs", "--scheduler", addr, "--token-file",
                                     cluster.dir() + "/bob", "-o", "json", "--limit", "1",
                                     "--all"});
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("--page-token " + std::to_string(bobs)), std::string::npos) << out;

  // The state is private.
  const auto mode = [](const std::string& path) {
    return fs::status(path).permissions() & fs::perms::mask;
  };
  EXPECT_EQ(mode(cluster.dir() + "/state"), fs::perms::owner_all);
  for (const char* file : {"/state/state.db", "/state/LOCK"}) {
    EXPECT_EQ(mode(cluster.dir() + file), fs::perms::owner_read | fs::perms::owner_write)
        << file;
  }
  // A second daemon on the same address (another state) fails at start, saying why.
  std::tie(code, out) = cluster.Cli({"serve", "--listen", addr, "--state",
                                     cluster.dir() + "/state2", "--token-file", tokens});
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("in use"), std::string::npos) << out;
}

// With its descriptors used up by idle connections, Debian's gRPC 1.51 stops
// accepting for good (grpc/grpc#20418). `gavel serve` started with 128 descriptors — once
// with a hard limit it can raise that to, once with none to spare (soft = hard = 128) — gets
// 600 idle connections and must still answer a normal call: its own accept loop
// (rpc::GuardedListener) sheds what it cannot hold and closes silent connections.
TEST(RuntimeEndToEnd, IdleConnectionsBeyondTheInheritedDescriptorLimitLeaveItServing) {
  rlimit inherited{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &inherited), 0);
  if (inherited.rlim_max < 2048) GTEST_SKIP() << "hard descriptor limit too low to test";
  for (const bool raisable : {true, false}) {
  SCOPED_TRACE(raisable ? "hard limit unchanged" : "hard limit 128");
  Cluster cluster(raisable ? "flood" : "flood-hard");
  const std::string out = cluster.dir() + "/serve.out";
  const pid_t pid = ::fork();
  if (pid == 0) {
    rlimit low = inherited;
    low.rlim_cur = 128;
    if (!raisable) low.rlim_max = 128;
    ::setrlimit(RLIMIT_NOFILE, &low);
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(o, 1);
    ::dup2(o, 2);
    const std::string state = cluster.dir() + "/state";
    ::execl(GAVEL_BINARY, GAVEL_BINARY, "serve", "--listen", "127.0.0.1:0", "--state",
            state.c_str(), "-q", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ASSERT_GT(pid, 0);
  std::string address;
  const auto deadline = Clock::now() + std::chrono::seconds(15);
  while (address.empty() && Clock::now() < deadline) {
    const std::string text = ReadFile(out);
    const std::size_t at = text.find("listening on ");
    const std::size_t end = at == std::string::npos ? at : text.find('\n', at);
    if (end != std::string::npos) address = text.substr(at + 13, end - at - 13);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_FALSE(address.empty()) << ReadFile(out);
  const int port = std::stoi(address.substr(address.rfind(':') + 1));
  std::vector<int> idle;
  for (int i = 0; i < 600; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << i;
    idle.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // let it accept them all
  auto [code, text] = cluster.Cli({"status", "--scheduler", address, "-o", "json"});
  EXPECT_EQ(code, 0) << text;
  EXPECT_NE(text.find("\"policy\""), std::string::npos) << text;
  for (int fd : idle) ::close(fd);
  ::kill(pid, SIGTERM);
  ::waitpid(pid, nullptr, 0);
  }
}

// The issue's check: `gavel serve --entity-weights` under
// max_min_fairness_water_filling_perf on a loopback cluster of two v100s, four identical jobs
// submitted with `gavel submit --entity`, two per entity. Entity e's share of the two GPUs is
// W_e / (W_lab + W_prod), split equally between its two jobs (no job reaches a whole GPU), so
// `gavel jobs -o json` must show 0.25 per lab job and 0.75 per prod job: a 1:3 split.
TEST(RuntimeEndToEnd, EntityWeightsSplitTheAllocationsBetweenEntities) {
  Cluster cluster("entities");
  cluster.StartDaemon(2, "", "max_min_fairness_water_filling_perf",
                      {"--entity-weights", "prod=3"});
  cluster.StartAgent("v100", "", 2);
  const std::string addr = cluster.address();
  const std::map<std::string, double> weight = {{"lab", 1.0}, {"prod", 3.0}};
  for (const char* entity : {"lab", "prod", "lab", "prod"}) {
    auto [code, out] = cluster.Cli({"submit", "--scheduler", addr, "--steps", "100000000",
                                    "--entity", entity, "--", "sleep", "600"});
    ASSERT_EQ(code, 0) << out;
  }
  // Wait for the first round's allocation to show.
  nlohmann::json jobs;
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (Clock::now() < deadline) {
    auto [code, out] = cluster.Cli({"jobs", "--scheduler", addr, "-o", "json"});
    ASSERT_EQ(code, 0) << out;
    jobs = nlohmann::json::parse(out);
    bool all = jobs.size() == 4;
    for (const auto& job : jobs) all = all && job["allocation"].value("v100", 0.0) > 0.0;
    if (all) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_EQ(jobs.size(), 4u);
  std::map<std::string, double> per_entity;
  for (const auto& job : jobs) {
    const std::string entity = job["entity"];
    const double x = job["allocation"].value("v100", 0.0);
    EXPECT_NEAR(x, weight.at(entity) / (weight.at("lab") + weight.at("prod")), 1e-4)
        << job.dump();
    per_entity[entity] += x;
  }
  EXPECT_NEAR(per_entity["prod"] / per_entity["lab"], 3.0, 1e-3);
  auto [code, out] = cluster.Cli({"status", "--scheduler", addr, "-o", "json"});
  ASSERT_EQ(code, 0) << out;
  EXPECT_EQ(nlohmann::json::parse(out)["entity_weights"]["prod"], 3.0) << out;
}

// ------------------------------------------------------------------------------------------
// The observation port (--metrics-listen): Prometheus metrics and the dashboard.

// A daemon with --metrics-listen, agents with 2 v100 and 1 k80, and three long jobs running
// on them; returns the metrics address and the jobs' ids.
std::pair<std::string, std::vector<std::uint64_t>> StartObservedCluster(Cluster& cluster) {
  cluster.StartDaemon(3, "", "max_min_fairness_perf", {"--metrics-listen", "127.0.0.1:0"});
  const std::string out = ReadFile(cluster.dir() + "/serve.out");
  const std::string prefix = "metrics on 127.0.0.1:";
  const std::size_t at = out.find(prefix);
  if (at == std::string::npos) {
    ADD_FAILURE() << "no metrics line in: " << out;
    return {};
  }
  const std::string metrics = "127.0.0.1:" + std::to_string(std::stoi(out.substr(at + prefix.size())));
  cluster.StartAgent("v100", "", 2);
  cluster.StartAgent("k80", "", 1);
  std::vector<std::uint64_t> ids;
  // Jobs under the iterator (they report each round), far from done within the test.
  for (std::uint64_t steps : {1000000, 1000001, 1000002}) {
    auto id = cluster.Submit(JobPlan{"ResNet-18 (batch size 64)", steps}, 2.0);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
  }
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (Clock::now() < deadline) {
    auto jobs = cluster.Jobs();
    ids.clear();
    if (jobs.ok()) {
      for (const auto& job : jobs->jobs()) {
        if (job.state() == wire::RUNNING) ids.push_back(job.id());
      }
    }
    if (ids.size() == 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(ids.size(), 3u) << "the three jobs never ran together";
  return {metrics, ids};
}

// A GET over HTTP/1.1 (Connection: close); the body.
std::string HttpGet(const std::string& address, const std::string& path) {
  const int port = std::stoi(address.substr(address.rfind(':') + 1));
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  std::string in;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string request = "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) > 0) {
      char buffer[8192];
      ssize_t n;
      while ((n = ::recv(fd, buffer, sizeof(buffer), 0)) > 0) in.append(buffer, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  const std::size_t body = in.find("\r\n\r\n");
  return body == std::string::npos ? "" : in.substr(body + 4);
}

// Exposition lines "name{labels} value" as a map (comments skipped).
std::map<std::string, double> ParseExposition(const std::string& text) {
  std::map<std::string, double> samples;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    const std::size_t space = line.rfind(' ');
    samples[line.substr(0, space)] = std::stod(line.substr(space + 1));
  }
  return samples;
}

TEST(RuntimeEndToEnd, MetricsAgreeWithTheJobListAndPassPromtool) {
  Cluster cluster("metrics");
  const auto [metrics, running] = StartObservedCluster(cluster);
  ASSERT_EQ(running.size(), 3u);
  // The daemon says what it runs: the policy as named (no option added), and a round on an
  // idle cluster waits 5 % of the round for more arrivals (at most 1 s).
  {
    auto [code, out] = cluster.Cli({"status", "--scheduler", cluster.address(), "-o", "json"});
    ASSERT_EQ(code, 0) << out;
    const nlohmann::json status = nlohmann::json::parse(out);
    EXPECT_EQ(status["policy"], "max_min_fairness_perf") << out;
    EXPECT_NEAR(status["arrival_settle_s"].get<double>(), std::min(1.0, 0.05 * kRoundSeconds),
                1e-9)
        << out;
    EXPECT_EQ(status["lag_bound_restarts"], 0.0) << out;  // StartDaemon's --lag-bound 0
  }
  // Wait for a few rounds, so that the round histogram has observations.
  std::map<std::string, double> m;
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (Clock::now() < deadline) {
    m = ParseExposition(HttpGet(metrics, "/metrics"));
    if (m["gavel_round_duration_seconds_count"] >= 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  // The job list (gRPC) just before and just after the scrape, until they agree on who runs
  // where (a round may start in between): the truth the metrics are checked against.
  std::string text;
  Result<wire::ListJobsResponse> jobs = Status::Internal("no list");
  std::map<std::string, int> running_on;  // GPU type -> running jobs (one GPU each)
  for (int attempt = 0; attempt < 20; ++attempt) {
    auto before = cluster.Jobs();
    text = HttpGet(metrics, "/metrics");
    jobs = cluster.Jobs();
    ASSERT_TRUE(before.ok() && jobs.ok());
    auto placement = [](const wire::ListJobsResponse& list) {
      std::map<std::uint64_t, std::string> out;
      for (const auto& job : list.jobs()) {
        if (job.state() == wire::RUNNING) out[job.id()] = job.gpu_type();
      }
      return out;
    };
    if (placement(*before) == placement(*jobs)) {
      running_on.clear();
      for (const auto& [id, type] : placement(*jobs)) ++running_on[type];
      break;
    }
  }
  m = ParseExposition(text);
  int running_jobs = 0;
  for (const auto& [type, n] : running_on) running_jobs += n;
  ASSERT_GE(running_jobs, 1) << text;
  // Jobs by state, GPUs by type and state: what the job list says (3 GPUs, 2 v100 + 1 k80).
  EXPECT_EQ(m["gavel_jobs{state=\"running\"}"], running_jobs) << text;
  EXPECT_EQ(m["gavel_jobs{state=\"running\"}"] + m["gavel_jobs{state=\"queued\"}"], 3) << text;
  EXPECT_EQ(m["gavel_gpus{gpu_type=\"v100\",state=\"busy\"}"], running_on["v100"]) << text;
  EXPECT_EQ(m["gavel_gpus{gpu_type=\"k80\",state=\"busy\"}"], running_on["k80"]) << text;
  EXPECT_EQ(m["gavel_gpus{gpu_type=\"v100\",state=\"idle\"}"], 2 - running_on["v100"]) << text;
  EXPECT_EQ(m["gavel_gpus{gpu_type=\"k80\",state=\"idle\"}"], 1 - running_on["k80"]) << text;
  // The allocation matrix: each job's shares are the job list's, and sum to at most 1.
  for (const auto& job : jobs->jobs()) {
    double total = 0.0;
    for (const auto& t : job.per_type()) {
      const std::string key = "gavel_job_allocation_ratio{job_id=\"" + std::to_string(job.id()) +
                              "\",gpu_type=\"" + t.gpu_type() + "\"}";
      ASSERT_TRUE(m.count(key)) << key << "\n" << text;
      EXPECT_NEAR(m[key], t.allocation(), 1e-9) << key;
      total += m[key];
    }
    EXPECT_LE(total, 1.0 + 1e-6);
  }
  // Rounds last --round-seconds (2 s) while every job keeps its GPUs: the histogram's mean
  // must say so, and its buckets must be cumulative.
  const double count = m["gavel_round_duration_seconds_count"];
  ASSERT_GE(count, 2) << text;
  const double mean = m["gavel_round_duration_seconds_sum"] / count;
  EXPECT_GT(mean, kRoundSeconds - 0.5) << text;
  EXPECT_LT(mean, kRoundSeconds + 2.0) << text;
  EXPECT_EQ(m["gavel_round_duration_seconds_bucket{le=\"+Inf\"}"], count);
  EXPECT_LE(m["gavel_round_duration_seconds_bucket{le=\"1\"}"],
            m["gavel_round_duration_seconds_bucket{le=\"5\"}"]);
  EXPECT_GE(m["gavel_solve_duration_seconds_count"], 1) << text;
  EXPECT_GE(m["gavel_rounds_started_total"], count) << text;

  // Prometheus' own linter on the live output.
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "promtool is absent (Debian package prometheus): format not linted";
  }
  const std::string file = cluster.dir() + "/metrics.txt";
  std::ofstream(file) << text;
  const std::string lint = cluster.dir() + "/promtool.out";
  const int status = std::system(("promtool check metrics < " + file + " > " + lint + " 2>&1").c_str());
  EXPECT_EQ(status, 0) << ReadFile(lint) << "\n" << text;
}

TEST(RuntimeEndToEnd, TheDashboardInHeadlessChromiumShowsTheRunningJobs) {
  if (std::system("command -v chromium >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "chromium is absent (Debian package chromium)";
  }
  Cluster cluster("dashboard");
  const auto [metrics, running] = StartObservedCluster(cluster);
  ASSERT_EQ(running.size(), 3u);
  const std::string dom = cluster.dir() + "/dom.html";
  const std::string command = "timeout 90 chromium --headless --no-sandbox --disable-gpu "
                              "--user-data-dir=" + cluster.dir() + "/chromium --dump-dom http://" +
                              metrics + "/ > " + dom + " 2> " + cluster.dir() + "/chromium.err";
  ASSERT_EQ(std::system(command.c_str()), 0) << ReadFile(cluster.dir() + "/chromium.err");
  const std::string html = ReadFile(dom);
  // The rows exist only once the page's script ran (the served table body is empty). The
  // three jobs share three GPUs of two types, so a round may hold one of them back: each is
  // active, and most run.
  int shown_running = 0;
  for (const std::uint64_t id : running) {
    const std::string row = "<tr id=\"job-" + std::to_string(id) + "\"";
    const std::size_t at = html.find(row);
    ASSERT_NE(at, std::string::npos) << row << " not in the DOM:\n" << html;
    const std::string tag = html.substr(at, html.find('>', at) - at);
    const bool is_running = tag.find("data-state=\"running\"") != std::string::npos;
    EXPECT_TRUE(is_running || tag.find("data-state=\"queued\"") != std::string::npos) << tag;
    shown_running += is_running ? 1 : 0;
  }
  EXPECT_GE(shown_running, 2) << html;
  EXPECT_NE(html.find("<th>v100 (2)</th>"), std::string::npos) << "allocation matrix header";
  EXPECT_NE(html.find("<polyline"), std::string::npos) << "utilisation chart";
}

// ------------------------------------------------------------------------------------------
// TLS (--tls-cert/--tls-key/--tls-ca), with certificates made here by the openssl CLI.

// Makes DIR/ca.pem and DIR/<name>.pem + .key (signed by it, for 127.0.0.1); false on failure.
bool MakeCertificates(const std::string& dir, const std::string& ca, const std::string& name) {
  const std::string ext = dir + "/san.ext";
  std::ofstream(ext) << "subjectAltName=IP:127.0.0.1,DNS:localhost\n";
  const std::string q = " >>" + dir + "/openssl.log 2>&1";
  const std::string commands[] = {
      "openssl req -x509 -newkey rsa:2048 -nodes -keyout " + dir + "/" + ca + ".key -out " + dir +
          "/" + ca + ".pem -days 1 -subj /CN=" + ca + q,
      "openssl req -newkey rsa:2048 -nodes -keyout " + dir + "/" + name + ".key -out " + dir +
          "/" + name + ".csr -subj /CN=127.0.0.1" + q,
      "openssl x509 -req -in " + dir + "/" + name + ".csr -CA " + dir + "/" + ca + ".pem -CAkey " +
          dir + "/" + ca + ".key -CAcreateserial -out " + dir + "/" + name + ".pem -days 1 -extfile " +
          ext + q};
  for (const std::string& command : commands) {
    if (std::system(command.c_str()) != 0) return false;
  }
  return true;
}

TEST(RuntimeEndToEnd, WithTlsPlaintextAndForeignCertificatesAreRefusedAndJobsRun) {
  if (std::system("command -v openssl >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "openssl is absent (Debian package openssl)";
  }
  Cluster cluster("tls");
  const std::string d = cluster.dir();
  ASSERT_TRUE(MakeCertificates(d, "ca", "node")) << ReadFile(d + "/openssl.log");
  ASSERT_TRUE(MakeCertificates(d, "other-ca", "impostor")) << ReadFile(d + "/openssl.log");
  const std::string ca = d + "/ca.pem";
  // Everything over TLS: the daemon's port, the agent's own service, both directions.
  cluster.StartDaemon(1, "", "max_min_fairness_perf",
                      {"--tls-cert", d + "/node.pem", "--tls-key", d + "/node.key", "--tls-ca", ca});
  cluster.StartAgent("v100", "", 1, "",
                     {"--tls-ca", ca, "--tls-cert", d + "/node.pem", "--tls-key", d + "/node.key"});
  const std::string addr = cluster.address();

  // A plaintext client is refused: the gRPC stub of the test, and the CLI without --tls-ca.
  auto plain = cluster.Jobs();
  EXPECT_FALSE(plain.ok());
  auto [plain_code, plain_out] = cluster.Cli({"status", "--scheduler", addr, "--timeout-seconds", "3"});
  EXPECT_NE(plain_code, 0) << plain_out;
  // So is a client that trusts another CA (the daemon is not who it expects).
  auto [foreign_code, foreign_out] = cluster.Cli(
      {"status", "--scheduler", addr, "--tls-ca", d + "/other-ca.pem", "--timeout-seconds", "3"});
  EXPECT_NE(foreign_code, 0) << foreign_out;
  // A bad --tls-ca names the flag.
  auto [bad_code, bad_out] = cluster.Cli({"status", "--scheduler", addr, "--tls-ca", d + "/san.ext"});
  EXPECT_NE(bad_code, 0);
  EXPECT_NE(bad_out.find("--tls-ca"), std::string::npos) << bad_out;

  // With the CA: a job submitted over TLS runs on the TLS agent to its exact steps.
  const JobPlan plan{"ResNet-18 (batch size 64)", 60};
  std::vector<std::string> submit = {"submit", "--scheduler", addr, "--tls-ca", ca, "--steps", "60",
                                     "--"};
  for (const std::string& arg : cluster.TrainCommand(plan, 8.0)) submit.push_back(arg);
  auto [code, out] = cluster.Cli(submit);
  ASSERT_EQ(code, 0) << out;
  nlohmann::json jobs;
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < deadline) {
    auto [list_code, list_out] = cluster.Cli({"jobs", "--scheduler", addr, "--tls-ca", ca, "-o", "json",
                                                   "--all"});
    ASSERT_EQ(list_code, 0) << list_out;
    jobs = nlohmann::json::parse(list_out);
    if (jobs.size() == 1 && jobs[0]["state"] != "queued" && jobs[0]["state"] != "running") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0]["state"], "done") << jobs.dump();
  EXPECT_EQ(jobs[0]["steps_done"], 60) << jobs.dump();
  const std::vector<std::uint64_t> executed = ReadExecLog(cluster.ExecLog(plan));
  EXPECT_EQ(executed.size(), 60u) << "each step once";
}

}  // namespace
}  // namespace gavel::daemon
