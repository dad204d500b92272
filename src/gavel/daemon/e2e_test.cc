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
  cluster.StartDaemon(/*expected_gpus=*/3);
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
  ASSERT_TRUE(AllFinished(last)) << "not done in time:\n" << cluster.Cli({"jobs", "--scheduler", cluster.address()}).second;

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
  options.policy = "max_min_fairness_perf";
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
                                     cluster.dir() + "/bob", "-o", "json"});
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
                                     cluster.dir() + "/alice"});
  EXPECT_EQ(code, 0);
  EXPECT_NE(out.find("cancelled"), std::string::npos) << out;
  EXPECT_NE(out.find("STATE"), std::string::npos) << out;
}

// Issue 16's hidden checks, on the real binaries: a job tries every credential its
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
                                     cluster.dir() + "/bob", "-o", "json", "--limit", "1"});
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

// Issue 16: with its descriptors used up by idle connections, Debian's gRPC 1.51 stops
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

}  // namespace
}  // namespace gavel::daemon
