// Unit tests of the agent core with fake ports: a fake scheduler, a fake process launcher and
// a manual clock. Each test drives the agent by calling its RPC entry points and Tick().
#include "gavel/agent/agent.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "gavel/agent/fakes.h"
#include "gavel/agent/job_logs.h"

namespace gavel::agent {
namespace {

namespace fs = std::filesystem;
using testing::FakeProcessLauncher;
using testing::FakeSchedulerClient;
using ::testing::HasSubstr;

constexpr std::uint64_t kGpu0 = 10;  // FakeSchedulerClient numbers this agent's GPUs 10, 11
constexpr std::uint64_t kGpu1 = 11;

wire::Task MakeTask(std::uint64_t worker, std::uint64_t job, double duration = 60.0,
                    std::uint64_t checkpointed = 0) {
  wire::Task task;
  task.set_worker_id(worker);
  wire::JobLaunch* launch = task.mutable_job();
  launch->set_job_id(job);
  launch->add_command("sh");
  launch->add_command("-c");
  launch->add_command("exit 0");
  launch->set_total_steps(1000);
  launch->set_checkpointed_steps(checkpointed);
  launch->set_world_size(1);
  launch->set_job_type("ResNet-18 (batch size 64)");
  // Built, not assigned from a literal: GCC 12 at -O3 reports a false -Wrestrict inside
  // libstdc++ for that assignment here.
  (*launch->mutable_env())["JOB_VAR"] = std::string(1, 'x');
  task.mutable_lease()->set_stop_at_step(1000);
  task.mutable_lease()->set_max_duration_s(duration);
  return task;
}

wire::StartRoundRequest Round(std::uint64_t id, std::vector<wire::Task> tasks) {
  wire::StartRoundRequest request;
  request.set_round_id(id);
  for (auto& task : tasks) *request.add_tasks() = std::move(task);
  return request;
}

// Captures the reply of a Done call.
struct DoneCapture {
  bool called = false;
  Result<wire::DoneResponse> result = Status::Internal("not called");
  Agent::DoneReply Reply() {
    return [this](Result<wire::DoneResponse> r) {
      called = true;
      result = std::move(r);
    };
  }
};

class AgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gavel_agent_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "run");
    options_.agent_id = "agent-a";
    options_.gpu_type = "v100";
    options_.num_gpus = 2;
    options_.log_dir = (dir_ / "logs").string();
    options_.checkpoint_root = (dir_ / "checkpoints").string();
    options_.run_dir = (dir_ / "run").string();
    options_.address = "127.0.0.1:5555";
    options_.iterator_url = "http://127.0.0.1:6666";
    options_.base_env = {{"PATH", "/usr/bin:/bin"}, {"HOME", "/root"}, {"GAVEL_JOB_ID", "stale"}};
    options_.program_path = "/usr/bin:/bin";
    options_.kill_grace = Seconds(5.0);
    options_.lease_overrun_grace = Seconds(20.0);
    options_.log = [this](const std::string& line) { log_.push_back(line); };
  }
  void TearDown() override {
    agent_.reset();
    fs::remove_all(dir_);
  }

  // Has the fake scheduler, during the agent's next registration, send round 1 (job 7 on
  // kGpu0) from `sender` and answer only once that round waits for the reply (bounded, in
  // case it never does). `started` receives StartRound's status.
  void SendRoundDuringRegistration(Agent& agent, std::thread& sender, Status& started) {
    scheduler_.SetOnRegister([this, &agent, &sender, &started] {
      scheduler_.SetOnRegister(nullptr);
      sender = std::thread([&] { started = agent.StartRound(Round(1, {MakeTask(kGpu0, 7)})); });
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (agent.Snapshot().start_rounds_waiting == 0 &&
             std::chrono::steady_clock::now() < give_up) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      EXPECT_EQ(agent.Snapshot().start_rounds_waiting, 1);
    });
  }

  Agent& MakeAgent() {
    agent_ = std::make_unique<Agent>(options_, &scheduler_, &launcher_, &clock_);
    return *agent_;
  }
  // A registered agent.
  Agent& Registered() {
    Agent& agent = MakeAgent();
    agent.Tick();
    EXPECT_TRUE(agent.Snapshot().registered);
    return agent;
  }
  // A registered agent running job 7 on GPU 10 (launch 0), started in round 1.
  Agent& Running() {
    Agent& agent = Registered();
    EXPECT_TRUE(agent.StartRound(Round(1, {MakeTask(kGpu0, 7)})).ok());
    agent.Tick();
    EXPECT_EQ(launcher_.num_launched(), 1u);
    return agent;
  }
  wire::InitResponse Init(Agent& agent, std::uint64_t job, std::uint64_t worker,
                          std::uint64_t restored) {
    wire::InitRequest request;
    request.set_job_id(job);
    request.set_worker_id(worker);
    request.set_restored_steps(restored);
    Result<wire::InitResponse> response = agent.Init(request);
    EXPECT_TRUE(response.ok()) << response.status().ToString();
    return response.ok() ? *response : wire::InitResponse();
  }
  wire::ProgressResponse Progress(Agent& agent, std::uint64_t job, std::uint64_t worker,
                                  std::uint64_t steps, std::uint64_t checkpointed) {
    wire::ProgressRequest request;
    request.set_job_id(job);
    request.set_worker_id(worker);
    request.set_steps(steps);
    request.set_checkpointed_steps(checkpointed);
    request.set_training_seconds(1.0);
    Result<wire::ProgressResponse> response = agent.Progress(request);
    EXPECT_TRUE(response.ok()) << response.status().ToString();
    return response.ok() ? *response : wire::ProgressResponse();
  }
  void Done(Agent& agent, std::uint64_t job, std::uint64_t worker, wire::DoneReason reason,
            std::uint64_t checkpointed, DoneCapture& capture) {
    wire::DoneRequest request;
    request.set_job_id(job);
    request.set_worker_id(worker);
    request.set_reason(reason);
    request.set_checkpointed_steps(checkpointed);
    request.set_steps_trained(checkpointed);
    request.set_training_seconds(30.0);
    agent.Done(request, capture.Reply());
  }

  fs::path dir_;
  AgentOptions options_;
  ManualClock clock_{testing::kTestClockStart};
  FakeSchedulerClient scheduler_;
  FakeProcessLauncher launcher_;
  std::vector<std::string> log_;
  std::unique_ptr<Agent> agent_;
};

TEST_F(AgentTest, RegistersItsGpusThenHeartbeats) {
  Agent& agent = MakeAgent();
  agent.Tick();
  ASSERT_EQ(scheduler_.registrations().size(), 1u);
  const wire::RegisterWorkerRequest registration = scheduler_.registrations()[0];
  EXPECT_EQ(registration.agent_id(), "agent-a");
  EXPECT_EQ(registration.gpu_type(), "v100");
  EXPECT_EQ(registration.num_gpus(), 2u);
  EXPECT_EQ(registration.address(), "127.0.0.1:5555");
  const AgentSnapshot snapshot = agent.Snapshot();
  EXPECT_TRUE(snapshot.registered);
  ASSERT_EQ(snapshot.gpus.size(), 2u);
  EXPECT_EQ(snapshot.gpus[0].worker_id, WorkerId(kGpu0));
  EXPECT_EQ(snapshot.gpus[1].worker_id, WorkerId(kGpu1));

  agent.Tick();  // heartbeat not due yet (interval 2 s from the registration)
  EXPECT_TRUE(scheduler_.heartbeats().empty());
  clock_.Advance(Seconds(2.0));
  agent.Tick();
  ASSERT_EQ(scheduler_.heartbeats().size(), 1u);
  EXPECT_EQ(scheduler_.heartbeats()[0].gpus_size(), 2);
  clock_.Advance(Seconds(2.0));
  agent.Tick();
  EXPECT_EQ(scheduler_.heartbeats().size(), 2u);
}

TEST_F(AgentTest, HeartbeatSecondsOptionOverridesTheScheduler) {
  options_.heartbeat_interval = Seconds(0.5);
  Agent& agent = Registered();
  clock_.Advance(Seconds(0.5));
  agent.Tick();
  clock_.Advance(Seconds(0.5));
  agent.Tick();
  EXPECT_EQ(scheduler_.heartbeats().size(), 2u);
}

TEST_F(AgentTest, RetriesRegistrationWithExponentialBackoffWhileTheSchedulerIsDown) {
  scheduler_.SetDown(Status::IoError("connection refused"));
  Agent& agent = MakeAgent();
  // Attempts at t = 0, 0.2, 0.6, 1.4, 3.0 (backoff 0.2, 0.4, 0.8, 1.6), ticking every 0.1 s.
  std::vector<double> attempt_times;
  for (int i = 0; i <= 30; ++i) {
    const std::size_t before = scheduler_.registrations().size();
    agent.Tick();
    if (scheduler_.registrations().size() > before) attempt_times.push_back(i * 0.1);
    clock_.Advance(Seconds(0.1));
  }
  ASSERT_EQ(attempt_times.size(), 5u);
  const std::vector<double> expected = {0.0, 0.2, 0.6, 1.4, 3.0};
  for (std::size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(attempt_times[i], expected[i], 1e-6);
  EXPECT_FALSE(agent.Snapshot().registered);

  scheduler_.SetDown(Status::Ok());
  clock_.Advance(Seconds(5.0));
  agent.Tick();
  EXPECT_TRUE(agent.Snapshot().registered);
}

TEST_F(AgentTest, StartRoundLaunchesTheJobWithItsEnvironment) {
  options_.token = "the-agents-own-token-123";  // must reach no job
  options_.base_env.emplace_back("GAVEL_TOKEN", "inherited-admin-token");
  Agent& agent = Registered();
  ASSERT_TRUE(agent.StartRound(Round(4, {MakeTask(kGpu1, 7, 60.0, 120)})).ok());
  EXPECT_EQ(launcher_.num_launched(), 0u);  // processes start on the monitor thread (Tick)
  agent.Tick();
  ASSERT_EQ(launcher_.num_launched(), 1u);
  const testing::FakeProcessState process = launcher_.process(0);
  EXPECT_TRUE(process.spec.argv[0] == "/usr/bin/sh" || process.spec.argv[0] == "/bin/sh")
      << process.spec.argv[0];
  EXPECT_EQ(process.spec.argv[2], "exit 0");
  EXPECT_EQ(process.spec.working_directory, options_.run_dir);
  EXPECT_EQ(process.spec.stdout_path, options_.log_dir + "/job-7.out");
  EXPECT_EQ(process.spec.stderr_path, options_.log_dir + "/job-7.err");
  EXPECT_EQ(launcher_.Env(0, "GAVEL_JOB_ID"), "7");
  EXPECT_EQ(launcher_.Env(0, "GAVEL_WORKER_ID"), "11");
  EXPECT_EQ(launcher_.Env(0, "GAVEL_ROUND_ID"), "4");
  EXPECT_EQ(launcher_.Env(0, "GAVEL_TOTAL_STEPS"), "1000");
  EXPECT_EQ(launcher_.Env(0, "GAVEL_CHECKPOINTED_STEPS"), "120");
  EXPECT_EQ(launcher_.Env(0, "GAVEL_AGENT_URL"), "http://127.0.0.1:6666");
  EXPECT_EQ(launcher_.Env(0, "GAVEL_GPU_TYPE"), "v100");
  EXPECT_EQ(launcher_.Env(0, "GAVEL_JOB_TYPE"), "ResNet-18 (batch size 64)");
  EXPECT_EQ(launcher_.Env(0, "GAVEL_WORLD_SIZE"), "1");
  EXPECT_EQ(launcher_.Env(0, "GAVEL_RANK"), "0");
  EXPECT_EQ(launcher_.Env(0, "CUDA_VISIBLE_DEVICES"), "1");
  EXPECT_EQ(launcher_.Env(0, "GAVEL_CHECKPOINT_DIR"), options_.checkpoint_root + "/job-7");
  EXPECT_TRUE(fs::is_directory(options_.checkpoint_root + "/job-7"));
  EXPECT_EQ(launcher_.Env(0, "JOB_VAR"), "x");     // the job's own environment
  EXPECT_EQ(launcher_.Env(0, "HOME"), "/root");    // the agent's environment is inherited
  // The job's own key (64 hex digits), never the agent's token nor an inherited one.
  const std::string key = launcher_.Env(0, "GAVEL_TOKEN");
  EXPECT_EQ(key.size(), 64u);
  for (const auto& [name, value] : process.spec.env) {
    EXPECT_EQ(value.find(options_.token), std::string::npos) << name;
    EXPECT_EQ(value.find("inherited-admin-token"), std::string::npos) << name;
  }
  EXPECT_TRUE(agent.CheckJobKey(7, kGpu1, key).ok());
  EXPECT_EQ(agent.CheckJobKey(7, kGpu1, options_.token).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(agent.CheckJobKey(7, kGpu0, key).code(), StatusCode::kNotFound);
  // The log files start with a banner naming the launch.
  std::ifstream out(process.spec.stdout_path);
  std::string banner;
  std::getline(out, banner);
  EXPECT_THAT(banner, HasSubstr("job 7 round 4 worker 11"));

  const AgentSnapshot snapshot = agent.Snapshot();
  EXPECT_EQ(snapshot.gpus[1].phase, AgentSnapshot::Phase::kRunning);
  EXPECT_EQ(snapshot.gpus[1].job_id, 7u);
  EXPECT_EQ(snapshot.gpus[0].phase, AgentSnapshot::Phase::kIdle);
}

// `gavel serve --checkpoint-dir` sends the job's directory on shared storage: it replaces the
// agent's own default and is created if missing (a relative one lives under the run directory).
TEST_F(AgentTest, TheSchedulersCheckpointDirectoryWinsAndIsCreated) {
  Agent& agent = Registered();
  const fs::path shared = dir_ / "shared" / "ckpt" / "job-7";
  wire::Task task = MakeTask(kGpu0, 7);
  task.mutable_job()->set_checkpoint_dir(shared.string());
  wire::Task relative = MakeTask(kGpu1, 8);
  relative.mutable_job()->set_checkpoint_dir("ckpt/job-8");
  ASSERT_TRUE(agent.StartRound(Round(1, {task, relative})).ok());
  agent.Tick();
  ASSERT_EQ(launcher_.num_launched(), 2u);
  std::map<std::string, std::string> dir_of_job;
  for (std::size_t i = 0; i < 2; ++i) {
    dir_of_job[launcher_.Env(i, "GAVEL_JOB_ID")] = launcher_.Env(i, "GAVEL_CHECKPOINT_DIR");
  }
  EXPECT_EQ(dir_of_job["7"], shared.string());
  EXPECT_EQ(dir_of_job["8"], (fs::path(options_.run_dir) / "ckpt/job-8").string());
  EXPECT_TRUE(fs::is_directory(shared));
  EXPECT_TRUE(fs::is_directory(fs::path(options_.run_dir) / "ckpt/job-8"));
  EXPECT_FALSE(fs::exists(fs::path(options_.checkpoint_root) / "job-7"))
      << "the agent's default is not used";
}

// A directory that cannot be created fails the launch, naming it.
TEST_F(AgentTest, AnUncreatableCheckpointDirectoryFailsTheLaunch) {
  Agent& agent = Registered();
  const fs::path file = dir_ / "a-file";
  std::ofstream(file) << "x";
  wire::Task task = MakeTask(kGpu0, 7);
  task.mutable_job()->set_checkpoint_dir((file / "job-7").string());
  ASSERT_TRUE(agent.StartRound(Round(1, {task})).ok());
  agent.Tick();
  agent.Tick();
  EXPECT_EQ(launcher_.num_launched(), 0u);
  const auto reports = scheduler_.reports();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].outcome(), wire::LAUNCH_FAILED);
  EXPECT_THAT(reports[0].message(), HasSubstr("checkpoint directory"));
}

TEST_F(AgentTest, LeaseIsCountedFromTheGrantAndExtendedWithoutRestart) {
  Agent& agent = Running();
  clock_.Advance(Seconds(2.0));  // process startup
  const wire::InitResponse init = Init(agent, 7, kGpu0, 0);
  EXPECT_EQ(init.total_steps(), 1000u);
  EXPECT_EQ(init.lease().stop_at_step(), 1000u);
  // The lease begins when the process is ready: its start-up is not training time.
  EXPECT_DOUBLE_EQ(init.lease().max_duration_s(), 60.0);
  EXPECT_DOUBLE_EQ(init.hold_timeout_s(), 60.0);          // the round duration

  clock_.Advance(Seconds(10.0));
  // The same lease again: a client resets its timer only when the lease changes.
  EXPECT_DOUBLE_EQ(Progress(agent, 7, kGpu0, 300, 0).lease().max_duration_s(), 60.0);

  clock_.Advance(Seconds(48.0));
  DoneCapture done;
  Done(agent, 7, kGpu0, wire::LEASE_REACHED, 700, done);
  EXPECT_FALSE(done.called);  // held until the next round is decided
  agent.Tick();
  ASSERT_EQ(scheduler_.reports().size(), 1u);
  EXPECT_EQ(scheduler_.reports()[0].outcome(), wire::LEASE_EXPIRED);
  EXPECT_EQ(scheduler_.reports()[0].round_id(), 1u);
  EXPECT_EQ(scheduler_.reports()[0].checkpointed_steps(), 700u);
  EXPECT_EQ(scheduler_.reports()[0].worker_id(), kGpu0);
  EXPECT_DOUBLE_EQ(scheduler_.reports()[0].elapsed_s(), 60.0);  // from the launch
  EXPECT_DOUBLE_EQ(scheduler_.reports()[0].startup_s(), 2.0);
  EXPECT_EQ(agent.Snapshot().gpus[0].phase, AgentSnapshot::Phase::kPaused);

  clock_.Advance(Seconds(1.0));
  ASSERT_TRUE(agent.StartRound(Round(2, {MakeTask(kGpu0, 7, 60.0, 700)})).ok());
  ASSERT_TRUE(done.called);
  ASSERT_TRUE(done.result.ok());
  EXPECT_TRUE(done.result->continue_running());
  EXPECT_EQ(done.result->round_id(), 2u);
  EXPECT_DOUBLE_EQ(done.result->lease().max_duration_s(), 60.0);  // delivered at the grant
  agent.Tick();
  EXPECT_EQ(launcher_.num_launched(), 1u);  // no restart
  EXPECT_TRUE(launcher_.process(0).signals.empty());

  DoneCapture complete;
  Done(agent, 7, kGpu0, wire::COMPLETE, 1000, complete);
  ASSERT_TRUE(complete.called);
  EXPECT_FALSE(complete.result->continue_running());
  agent.Tick();  // reported at Done(COMPLETE), not at the exit: a slow exit is no straggler
  ASSERT_EQ(scheduler_.reports().size(), 2u);
  launcher_.Exit(0, 0);
  agent.Tick();
  ASSERT_EQ(scheduler_.reports().size(), 2u);
  EXPECT_EQ(scheduler_.reports()[1].outcome(), wire::COMPLETED);
  EXPECT_EQ(scheduler_.reports()[1].round_id(), 2u);
  EXPECT_EQ(scheduler_.reports()[1].checkpointed_steps(), 1000u);
  EXPECT_EQ(scheduler_.reports()[1].exit_code(), 0);
  EXPECT_DOUBLE_EQ(scheduler_.reports()[1].startup_s(), 0.0);  // no start-up in an extension
  EXPECT_EQ(agent.Snapshot().gpus[0].phase, AgentSnapshot::Phase::kIdle);
}

// With rounds that begin on time the lease ends with its round: its time counts from the
// launch, start-up included (Lease.startup_inside), and the process is no longer "starting"
// once the round's time is up, so a missing report is then a straggler's.
TEST_F(AgentTest, ALeaseWithStartUpInsideCountsFromTheLaunch) {
  Agent& agent = Registered();
  wire::Task task = MakeTask(kGpu0, 7);
  task.mutable_lease()->set_startup_inside(true);
  ASSERT_TRUE(agent.StartRound(Round(1, {task})).ok());
  agent.Tick();
  clock_.Advance(Seconds(2.5));  // start-up
  const wire::InitResponse init = Init(agent, 7, kGpu0, 0);
  EXPECT_DOUBLE_EQ(init.lease().max_duration_s(), 57.5) << "60 s from the launch";
  clock_.Advance(Seconds(57.0));
  DoneCapture done;
  Done(agent, 7, kGpu0, wire::LEASE_REACHED, 300, done);
  agent.Tick();
  ASSERT_EQ(scheduler_.reports().size(), 1u);
  EXPECT_DOUBLE_EQ(scheduler_.reports()[0].elapsed_s(), 59.5) << "in by the round's end";
  EXPECT_DOUBLE_EQ(scheduler_.reports()[0].startup_s(), 2.5);
  // Without it the lease is 60 s from Init (LeaseIsCountedFromTheGrantAndExtendedWithoutRestart).
  ASSERT_TRUE(agent.StartRound(Round(2, {})).ok());  // the held Done is answered: exit
  EXPECT_TRUE(done.called);
}

TEST_F(AgentTest, HeldJobIsToldToExitWhenTheNextRoundGivesItsGpuAway) {
  Agent& agent = Running();
  Init(agent, 7, kGpu0, 0);
  DoneCapture done;
  Done(agent, 7, kGpu0, wire::LEASE_REACHED, 500, done);
  ASSERT_TRUE(agent.StartRound(Round(2, {MakeTask(kGpu0, 8)})).ok());
  ASSERT_TRUE(done.called);
  EXPECT_FALSE(done.result->continue_running());
  agent.Tick();
  EXPECT_EQ(launcher_.num_launched(), 1u);            // job 8 waits for job 7's process to go
  EXPECT_TRUE(launcher_.process(0).signals.empty());  // a paused job exits by itself
  launcher_.Exit(0, 0);
  agent.Tick();
  ASSERT_EQ(launcher_.num_launched(), 2u);
  EXPECT_EQ(launcher_.Env(1, "GAVEL_JOB_ID"), "8");
  // Job 7's micro-task was reported once, at its lease end; its exit adds nothing.
  ASSERT_EQ(scheduler_.reports().size(), 1u);
  EXPECT_EQ(scheduler_.reports()[0].outcome(), wire::LEASE_EXPIRED);
  EXPECT_EQ(scheduler_.reports()[0].job_id(), 7u);
}

TEST_F(AgentTest, RunningJobDisplacedByANewRoundIsTerminatedThenKilledAndReported) {
  launcher_.set_exits_on_sigterm(false);  // a job that ignores SIGTERM
  Agent& agent = Running();
  Init(agent, 7, kGpu0, 100);
  Progress(agent, 7, kGpu0, 250, 200);
  ASSERT_TRUE(agent.StartRound(Round(2, {MakeTask(kGpu0, 8)})).ok());
  EXPECT_EQ(launcher_.process(0).signals, std::vector<int>{SIGTERM});
  clock_.Advance(Seconds(4.9));
  agent.Tick();
  EXPECT_EQ(launcher_.process(0).signals, std::vector<int>{SIGTERM});
  EXPECT_EQ(launcher_.num_launched(), 1u);
  clock_.Advance(Seconds(0.1));  // the kill grace (5 s) is over
  agent.Tick();
  EXPECT_EQ(launcher_.process(0).signals, (std::vector<int>{SIGTERM, SIGKILL}));
  agent.Tick();  // reaped; job 8 starts
  ASSERT_EQ(scheduler_.reports().size(), 1u);
  const wire::ReportDoneRequest report = scheduler_.reports()[0];
  EXPECT_EQ(report.outcome(), wire::KILLED);
  EXPECT_EQ(report.job_id(), 7u);
  EXPECT_EQ(report.round_id(), 1u);
  EXPECT_EQ(report.checkpointed_steps(), 200u);  // the last checkpoint, not the steps trained
  EXPECT_EQ(report.steps_trained(), 150u);       // 250 trained since the restore at 100
  EXPECT_EQ(report.exit_code(), -SIGKILL);
  EXPECT_THAT(report.message(), HasSubstr("gives GPU 10 to job 8"));
  ASSERT_EQ(launcher_.num_launched(), 2u);
  EXPECT_EQ(launcher_.Env(1, "GAVEL_JOB_ID"), "8");
}

TEST_F(AgentTest, CrashIsReportedWithExitCodeAndStderrTail) {
  Agent& agent = Running();
  Init(agent, 7, kGpu0, 0);
  Progress(agent, 7, kGpu0, 40, 30);
  std::ofstream(launcher_.process(0).spec.stderr_path, std::ios::app)
      << "Traceback (most recent call last):\nValueError: boom\n";
  launcher_.Exit(0, 3);
  agent.Tick();
  ASSERT_EQ(scheduler_.reports().size(), 1u);
  const wire::ReportDoneRequest report = scheduler_.reports()[0];
  EXPECT_EQ(report.outcome(), wire::CRASHED);
  EXPECT_EQ(report.exit_code(), 3);
  EXPECT_EQ(report.checkpointed_steps(), 30u);
  EXPECT_THAT(report.message(), HasSubstr("exit status 3"));
  EXPECT_THAT(report.message(), HasSubstr("ValueError: boom"));
}

// Space sharing: under a packing scheduler each GPU gets a partner slot on the same device; a
// pair runs as two processes that see the same GPU, each with its own lease, checkpoint and
// report, so one crashing leaves the other running.
TEST_F(AgentTest, UnderAPackingSchedulerAPairRunsAsTwoProcessesOnOneDevice) {
  scheduler_.SetFirstPartnerId(110);
  Agent& agent = Registered();
  const AgentSnapshot snapshot = agent.Snapshot();
  ASSERT_EQ(snapshot.gpus.size(), 4u);
  EXPECT_EQ(snapshot.gpus[2].worker_id, WorkerId(110));
  EXPECT_TRUE(snapshot.gpus[2].partner_slot);
  EXPECT_EQ(snapshot.gpus[2].device, snapshot.gpus[0].device);
  EXPECT_EQ(snapshot.gpus[3].device, snapshot.gpus[1].device);

  wire::Task second = MakeTask(110, 8);
  second.mutable_job()->set_partner_job_type("A3C");
  ASSERT_TRUE(agent.StartRound(Round(1, {MakeTask(kGpu0, 7), second})).ok());
  agent.Tick();
  ASSERT_EQ(launcher_.num_launched(), 2u);
  EXPECT_EQ(launcher_.Env(0, "CUDA_VISIBLE_DEVICES"), "0");
  EXPECT_EQ(launcher_.Env(1, "CUDA_VISIBLE_DEVICES"), "0") << "both see the same GPU";
  EXPECT_EQ(launcher_.Env(1, "GAVEL_WORKER_ID"), "110");
  EXPECT_EQ(launcher_.Env(1, "GAVEL_PARTNER_JOB_TYPE"), "A3C");
  EXPECT_EQ(launcher_.Env(0, "GAVEL_PARTNER_JOB_TYPE"), "");
  EXPECT_NE(launcher_.Env(0, "GAVEL_CHECKPOINT_DIR"), launcher_.Env(1, "GAVEL_CHECKPOINT_DIR"));

  Init(agent, 7, kGpu0, 0);
  Init(agent, 8, 110, 0);
  Progress(agent, 8, 110, 20, 10);
  launcher_.Exit(1, 3);  // the partner crashes
  agent.Tick();
  ASSERT_EQ(scheduler_.reports().size(), 1u);
  EXPECT_EQ(scheduler_.reports()[0].worker_id(), 110u);
  EXPECT_EQ(scheduler_.reports()[0].job_id(), 8u);
  EXPECT_EQ(scheduler_.reports()[0].outcome(), wire::CRASHED);
  EXPECT_EQ(scheduler_.reports()[0].checkpointed_steps(), 10u);
  EXPECT_EQ(agent.Snapshot().gpus[0].phase, AgentSnapshot::Phase::kRunning)
      << "its GPU's other job runs on";
  clock_.Advance(Seconds(2.0));
  agent.Tick();
  ASSERT_FALSE(scheduler_.heartbeats().empty());
  EXPECT_EQ(scheduler_.heartbeats().back().gpus_size(), 4) << "every slot is reported";
}

TEST_F(AgentTest, ProcessKilledFromOutsideIsReportedAsCrashedWithTheSignal) {
  Agent& agent = Running();
  launcher_.Exit(0, -SIGKILL);
  agent.Tick();
  ASSERT_EQ(scheduler_.reports().size(), 1u);
  EXPECT_EQ(scheduler_.reports()[0].outcome(), wire::CRASHED);
  EXPECT_EQ(scheduler_.reports()[0].exit_code(), -SIGKILL);
  EXPECT_THAT(scheduler_.reports()[0].message(), HasSubstr("signal 9"));
}

TEST_F(AgentTest, LaunchFailuresAreReported) {
  Agent& agent = Registered();
  wire::Task missing = MakeTask(kGpu0, 7);
  missing.mutable_job()->set_command(0, "no-such-program-gavel");
  launcher_.FailNextLaunch(Status::NotFound("cannot execute"));
  ASSERT_TRUE(agent.StartRound(Round(1, {missing, MakeTask(kGpu1, 8)})).ok());
  agent.Tick();
  agent.Tick();
  const auto reports = scheduler_.reports();
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].job_id(), 7u);
  EXPECT_EQ(reports[0].outcome(), wire::LAUNCH_FAILED);
  EXPECT_THAT(reports[0].message(), HasSubstr("no-such-program-gavel"));
  EXPECT_EQ(reports[1].job_id(), 8u);
  EXPECT_EQ(reports[1].outcome(), wire::LAUNCH_FAILED);
  EXPECT_THAT(reports[1].message(), HasSubstr("cannot execute"));
  EXPECT_EQ(launcher_.num_launched(), 0u);
}

TEST_F(AgentTest, JobThatOverrunsItsLeaseIsEnded) {
  Agent& agent = Running();  // lease: 60 s; overrun grace: 20 s
  Init(agent, 7, kGpu0, 0);
  clock_.Advance(Seconds(79.0));
  agent.Tick();
  EXPECT_TRUE(launcher_.process(0).signals.empty());
  clock_.Advance(Seconds(1.0));
  agent.Tick();
  EXPECT_EQ(launcher_.process(0).signals, std::vector<int>{SIGTERM});
  agent.Tick();
  ASSERT_EQ(scheduler_.reports().size(), 1u);
  EXPECT_EQ(scheduler_.reports()[0].outcome(), wire::KILLED);
  EXPECT_THAT(scheduler_.reports()[0].message(), HasSubstr("lease overrun"));
}

TEST_F(AgentTest, HeldDoneTimesOutWhenNoRoundComes) {
  options_.hold_timeout = Seconds(15.0);
  Agent& agent = Running();
  Init(agent, 7, kGpu0, 0);
  DoneCapture done;
  Done(agent, 7, kGpu0, wire::LEASE_REACHED, 10, done);
  clock_.Advance(Seconds(14.0));
  agent.Tick();
  EXPECT_FALSE(done.called);
  clock_.Advance(Seconds(1.0));
  agent.Tick();
  ASSERT_TRUE(done.called);
  EXPECT_FALSE(done.result->continue_running());
  // If it does not exit, it is killed after the grace; its micro-task stays reported once.
  clock_.Advance(Seconds(5.0));
  agent.Tick();
  agent.Tick();
  EXPECT_EQ(launcher_.process(0).signals, std::vector<int>{SIGKILL});
  EXPECT_EQ(scheduler_.reports().size(), 1u);
  EXPECT_EQ(agent.Snapshot().gpus[0].phase, AgentSnapshot::Phase::kIdle);
}

TEST_F(AgentTest, RunningJobExtendedIntoANewRoundClosesTheOldMicroTask) {
  Agent& agent = Running();
  Init(agent, 7, kGpu0, 0);
  Progress(agent, 7, kGpu0, 400, 0);
  clock_.Advance(Seconds(61.0));
  ASSERT_TRUE(agent.StartRound(Round(2, {MakeTask(kGpu0, 7, 30.0)})).ok());
  agent.Tick();
  ASSERT_EQ(scheduler_.reports().size(), 1u);
  EXPECT_EQ(scheduler_.reports()[0].outcome(), wire::LEASE_EXPIRED);
  EXPECT_EQ(scheduler_.reports()[0].round_id(), 1u);
  EXPECT_EQ(scheduler_.reports()[0].steps_trained(), 400u);
  // A Done at the old lease (the process had not seen the new one) continues at once.
  DoneCapture done;
  Done(agent, 7, kGpu0, wire::LEASE_REACHED, 420, done);
  ASSERT_TRUE(done.called);
  EXPECT_TRUE(done.result->continue_running());
  EXPECT_EQ(done.result->round_id(), 2u);
  EXPECT_DOUBLE_EQ(done.result->lease().max_duration_s(), 30.0);
  EXPECT_EQ(scheduler_.reports().size(), 1u);
  EXPECT_TRUE(launcher_.process(0).signals.empty());
}

TEST_F(AgentTest, ProgressDeliversALeaseExtendedWhileRunning) {
  Agent& agent = Running();
  Init(agent, 7, kGpu0, 0);
  ASSERT_TRUE(agent.StartRound(Round(2, {MakeTask(kGpu0, 7, 45.0)})).ok());
  clock_.Advance(Seconds(3.0));
  // Delivered 3 s after the grant: 42 s left.
  EXPECT_DOUBLE_EQ(Progress(agent, 7, kGpu0, 10, 0).lease().max_duration_s(), 42.0);
}

TEST_F(AgentTest, StartRoundIsIdempotent) {
  Agent& agent = Running();
  ASSERT_TRUE(agent.StartRound(Round(1, {MakeTask(kGpu0, 7)})).ok());
  ASSERT_TRUE(agent.StartRound(Round(1, {MakeTask(kGpu0, 9)})).ok());  // a repeat: ignored
  agent.Tick();
  EXPECT_EQ(launcher_.num_launched(), 1u);
  EXPECT_TRUE(launcher_.process(0).signals.empty());
  EXPECT_TRUE(scheduler_.reports().empty());
}

TEST_F(AgentTest, MalformedStartRoundIsRefusedAndChangesNothing) {
  Agent& agent = Running();
  Status status = agent.StartRound(Round(2, {MakeTask(kGpu1, 8), MakeTask(99, 9)}));
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("tasks[1].worker_id: 99 is not a GPU of agent agent-a"));
  status = agent.StartRound(Round(2, {MakeTask(kGpu1, 8), MakeTask(kGpu1, 9)}));
  EXPECT_THAT(status.message(), HasSubstr("tasks[1].worker_id: GPU 11 has two tasks"));
  wire::Task empty = MakeTask(kGpu1, 8);
  empty.mutable_job()->clear_command();
  status = agent.StartRound(Round(2, {empty}));
  EXPECT_THAT(status.message(), HasSubstr("tasks[0].job.command: empty"));
  wire::Task no_lease = MakeTask(kGpu1, 8);
  no_lease.clear_lease();
  status = agent.StartRound(Round(2, {no_lease}));
  EXPECT_THAT(status.message(), HasSubstr("tasks[0].lease: missing"));
  wire::Task bad_rank = MakeTask(kGpu1, 8);
  bad_rank.mutable_job()->set_rank(2);
  bad_rank.mutable_job()->set_world_size(2);
  status = agent.StartRound(Round(2, {bad_rank}));
  EXPECT_THAT(status.message(), HasSubstr("tasks[0].job.rank"));
  // Nothing changed: job 7 still runs, untouched, and round 2 can still be applied.
  agent.Tick();
  EXPECT_EQ(launcher_.num_launched(), 1u);
  EXPECT_TRUE(launcher_.process(0).signals.empty());
  EXPECT_TRUE(agent.StartRound(Round(2, {MakeTask(kGpu0, 7)})).ok());
}

// The scheduler sends the first round as soon as it has committed the registration, so the
// round can reach the agent before the reply with its worker ids does. The agent waits for
// the reply instead of refusing the round (which made the scheduler retry).
TEST_F(AgentTest, StartRoundOvertakingTheRegistrationReplyIsAccepted) {
  Agent& agent = MakeAgent();
  std::thread scheduler_side;
  Status started = Status::Internal("StartRound not called");
  SendRoundDuringRegistration(agent, scheduler_side, started);
  agent.Tick();  // registers; the round arrives during the call
  scheduler_side.join();
  EXPECT_TRUE(started.ok()) << started.ToString();
  EXPECT_TRUE(agent.Snapshot().registered);
  EXPECT_EQ(agent.Snapshot().start_rounds_waiting, 0);
  agent.Tick();
  ASSERT_EQ(launcher_.num_launched(), 1u);
  EXPECT_EQ(launcher_.Env(0, "GAVEL_WORKER_ID"), std::to_string(kGpu0));
  EXPECT_EQ(launcher_.Env(0, "GAVEL_ROUND_ID"), "1");
}

// A registration that fails releases a waiting round, which is then refused as before.
TEST_F(AgentTest, StartRoundWaitingForAFailedRegistrationIsRefused) {
  Agent& agent = MakeAgent();
  scheduler_.SetDown(Status::IoError("down"));
  std::thread scheduler_side;
  Status started = Status::Ok();
  SendRoundDuringRegistration(agent, scheduler_side, started);
  agent.Tick();
  scheduler_side.join();
  EXPECT_EQ(started.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(launcher_.num_launched(), 0u);
}

TEST_F(AgentTest, StartRoundBeforeRegistrationIsRefused) {
  scheduler_.SetDown(Status::IoError("down"));
  Agent& agent = MakeAgent();
  agent.Tick();
  EXPECT_EQ(agent.StartRound(Round(1, {MakeTask(kGpu0, 7)})).code(),
            StatusCode::kFailedPrecondition);
}

TEST_F(AgentTest, ReportsAreResentInOrderUntilTheSchedulerAcknowledges) {
  Agent& agent = Registered();
  ASSERT_TRUE(agent.StartRound(Round(1, {MakeTask(kGpu0, 7), MakeTask(kGpu1, 8)})).ok());
  agent.Tick();
  scheduler_.SetDown(Status::IoError("scheduler restarting"));
  launcher_.Exit(0, 1);
  agent.Tick();
  launcher_.Exit(1, 2);
  for (int i = 0; i < 20; ++i) {
    clock_.Advance(Seconds(0.5));
    agent.Tick();
  }
  EXPECT_GT(scheduler_.report_attempts(), 2u);
  EXPECT_TRUE(scheduler_.reports().empty());
  EXPECT_EQ(agent.Snapshot().reports_pending, 2u);
  scheduler_.SetDown(Status::Ok());
  clock_.Advance(Seconds(5.0));
  agent.Tick();
  ASSERT_EQ(scheduler_.reports().size(), 2u);
  EXPECT_EQ(scheduler_.reports()[0].job_id(), 7u);
  EXPECT_EQ(scheduler_.reports()[0].exit_code(), 1);
  EXPECT_EQ(scheduler_.reports()[1].job_id(), 8u);
  EXPECT_EQ(scheduler_.reports()[1].exit_code(), 2);
  clock_.Advance(Seconds(5.0));
  agent.Tick();
  EXPECT_EQ(scheduler_.reports().size(), 2u);  // sent once each
  EXPECT_EQ(agent.Snapshot().reports_pending, 0u);
}

TEST_F(AgentTest, ReportRefusedForGoodIsDroppedNotRetried) {
  Agent& agent = Running();
  scheduler_.RefuseReports(Status::InvalidArgument("round_id: unknown"));
  launcher_.Exit(0, 1);
  agent.Tick();
  agent.Tick();
  EXPECT_EQ(scheduler_.report_attempts(), 1u);
  EXPECT_EQ(agent.Snapshot().reports_pending, 0u);
}

TEST_F(AgentTest, ReRegistersWithItsRunningJobsWhenTheSchedulerForgetsIt) {
  Agent& agent = Running();
  Init(agent, 7, kGpu0, 0);
  scheduler_.SetKnown(false);
  clock_.Advance(Seconds(2.0));
  agent.Tick();  // heartbeat: unknown
  EXPECT_FALSE(agent.Snapshot().registered);
  scheduler_.SetKnown(true);
  agent.Tick();  // registers again
  ASSERT_EQ(scheduler_.registrations().size(), 2u);
  const wire::RegisterWorkerRequest again = scheduler_.registrations()[1];
  EXPECT_EQ(again.agent_id(), "agent-a");
  ASSERT_EQ(again.running_size(), 1);
  EXPECT_EQ(again.running(0).worker_id(), kGpu0);
  EXPECT_EQ(again.running(0).job_id(), 7u);
  EXPECT_TRUE(again.running(0).busy());
  EXPECT_EQ(again.running(0).round_id(), 1u);
  // The job kept running throughout.
  EXPECT_TRUE(launcher_.process(0).signals.empty());
  EXPECT_EQ(agent.Snapshot().gpus[0].phase, AgentSnapshot::Phase::kRunning);
}

TEST_F(AgentTest, AcceptsRestartedRoundNumberingAfterRegisteringAgain) {
  Agent& agent = Running();  // round 1 applied
  ASSERT_TRUE(agent.StartRound(Round(5, {MakeTask(kGpu0, 7)})).ok());
  scheduler_.SetKnown(false);
  clock_.Advance(Seconds(2.0));
  agent.Tick();  // unknown: register again
  agent.Tick();
  EXPECT_EQ(scheduler_.registrations().size(), 2u);
  // The restarted scheduler counts from 0 again; its round is applied, not ignored.
  ASSERT_TRUE(agent.StartRound(Round(0, {MakeTask(kGpu0, 8)})).ok());
  EXPECT_EQ(launcher_.process(0).signals, std::vector<int>{SIGTERM});
}

TEST_F(AgentTest, KillJobEndsItsProcessAndItsWaitingTask) {
  Agent& agent = Running();
  ASSERT_TRUE(agent.StartRound(Round(2, {MakeTask(kGpu1, 7)})).ok());  // moves to GPU 11
  launcher_.set_exits_on_sigterm(false);
  wire::KillJobRequest kill;
  kill.set_job_id(7);
  kill.set_reason("cancelled by alice");
  // Job 7's old process got SIGTERM from round 2 (and exited); the move waits for the Tick.
  ASSERT_TRUE(agent.KillJob(kill).ok());
  agent.Tick();
  agent.Tick();
  EXPECT_EQ(launcher_.num_launched(), 1u);  // the waiting task never started
  const auto reports = scheduler_.reports();
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].outcome(), wire::KILLED);  // the task waiting on GPU 11
  EXPECT_EQ(reports[0].round_id(), 2u);
  EXPECT_THAT(reports[0].message(), HasSubstr("cancelled by alice"));
  EXPECT_EQ(reports[1].outcome(), wire::KILLED);  // the process displaced from GPU 10
  EXPECT_EQ(reports[1].round_id(), 1u);
  EXPECT_TRUE(agent.KillJob(kill).ok());  // unknown now: still fine
}

TEST_F(AgentTest, KillJobForAnEarlierRoundSparesTheJobsLaterRound) {
  Agent& agent = Running();  // round 1: job 7 on GPU 10
  ASSERT_TRUE(agent.StartRound(Round(2, {MakeTask(kGpu0, 7)})).ok());  // extended into round 2
  wire::KillJobRequest kill;
  kill.set_job_id(7);
  kill.set_round_id(1);  // overtaken by round 2
  ASSERT_TRUE(agent.KillJob(kill).ok());
  EXPECT_TRUE(launcher_.process(0).signals.empty());
  EXPECT_EQ(agent.Snapshot().gpus[0].phase, AgentSnapshot::Phase::kRunning);
  kill.set_round_id(2);
  ASSERT_TRUE(agent.KillJob(kill).ok());
  EXPECT_EQ(launcher_.process(0).signals, std::vector<int>{SIGTERM});
}

TEST_F(AgentTest, JobMovingBetweenGpusStartsOnlyAfterItsOldProcessIsGone) {
  launcher_.set_exits_on_sigterm(false);
  Agent& agent = Running();
  ASSERT_TRUE(agent.StartRound(Round(2, {MakeTask(kGpu1, 7)})).ok());
  agent.Tick();
  EXPECT_EQ(launcher_.num_launched(), 1u);
  launcher_.Exit(0, 0);
  agent.Tick();
  ASSERT_EQ(launcher_.num_launched(), 2u);
  EXPECT_EQ(launcher_.Env(1, "GAVEL_WORKER_ID"), "11");
  EXPECT_EQ(launcher_.Env(1, "CUDA_VISIBLE_DEVICES"), "1");
}

TEST_F(AgentTest, IteratorCallsForJobsNotRunningHereAreNotFound) {
  Agent& agent = Running();
  wire::InitRequest init;
  init.set_job_id(8);
  init.set_worker_id(kGpu0);
  EXPECT_EQ(agent.Init(init).status().code(), StatusCode::kNotFound);
  wire::ProgressRequest progress;
  progress.set_job_id(7);
  progress.set_worker_id(kGpu1);
  EXPECT_EQ(agent.Progress(progress).status().code(), StatusCode::kNotFound);
  DoneCapture done;
  Done(agent, 9, kGpu0, wire::COMPLETE, 0, done);
  ASSERT_TRUE(done.called);
  EXPECT_EQ(done.result.status().code(), StatusCode::kNotFound);
  DoneCapture bad;
  Done(agent, 7, kGpu0, wire::DONE_REASON_UNSPECIFIED, 0, bad);
  EXPECT_EQ(bad.result.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(AgentTest, ShutdownEndsEveryJobAndReportsIt) {
  Agent& agent = Registered();
  ASSERT_TRUE(agent.StartRound(Round(1, {MakeTask(kGpu0, 7), MakeTask(kGpu1, 8)})).ok());
  agent.Tick();
  Init(agent, 8, kGpu1, 0);
  DoneCapture done;
  Done(agent, 8, kGpu1, wire::LEASE_REACHED, 5, done);
  agent.BeginShutdown();
  EXPECT_TRUE(done.called);
  EXPECT_FALSE(done.result->continue_running());
  EXPECT_EQ(agent.StartRound(Round(3, {})).code(), StatusCode::kFailedPrecondition);
  for (int i = 0; i < 10 && !agent.ShutdownComplete(); ++i) {
    launcher_.Exit(1, 0);  // the paused job exits when told
    clock_.Advance(Seconds(1.0));
    agent.Tick();
  }
  EXPECT_TRUE(agent.ShutdownComplete());
  std::map<std::uint64_t, wire::TaskOutcome> outcomes;
  for (const auto& report : scheduler_.reports()) {
    EXPECT_TRUE(outcomes.emplace(report.job_id(), report.outcome()).second) << "reported twice";
  }
  EXPECT_EQ(outcomes[7], wire::KILLED);         // was running: SIGTERM
  EXPECT_EQ(outcomes[8], wire::LEASE_EXPIRED);  // was paused: reported at its lease end
}

TEST(AgentOptionsTest, ErrorsNameTheOption) {
  AgentOptions options;
  options.agent_id = "a";
  options.gpu_type = "v100";
  options.num_gpus = 0;
  options.log_dir = options.checkpoint_root = options.run_dir = "/tmp";
  EXPECT_THAT(CheckAgentOptions(options).message(), HasSubstr("--gpus"));
  options.num_gpus = 2;
  options.visible_devices = {"3"};
  EXPECT_THAT(CheckAgentOptions(options).message(), HasSubstr("--visible-devices"));
  options.visible_devices = {"3", "5"};
  options.run_dir = "relative";
  EXPECT_THAT(CheckAgentOptions(options).message(), HasSubstr("absolute"));
  options.run_dir = "/tmp";
  EXPECT_TRUE(CheckAgentOptions(options).ok());
}

// ---- Start-up outside the lease, gang leases, torchrun's environment, logs ----

// A gang task: rank `rank` of a 2-rank job 9 whose lease stops at `stop` (step bound only).
wire::Task GangTask(std::uint64_t worker, std::uint32_t rank, std::uint64_t stop,
                    std::uint64_t checkpointed) {
  wire::Task task = MakeTask(worker, 9, 60.0, checkpointed);
  task.mutable_job()->set_world_size(2);
  task.mutable_job()->set_rank(rank);
  task.mutable_job()->set_local_rank(rank);
  task.mutable_job()->set_local_world_size(2);
  task.mutable_job()->set_master_addr("127.0.0.1");
  task.mutable_job()->set_master_port(29509);
  task.mutable_lease()->set_stop_at_step(stop);
  task.mutable_lease()->set_step_bound_only(true);
  return task;
}

TEST_F(AgentTest, TheLeaseBeginsWhenTheProcessIsReadyAndStartUpIsNoOverrun) {
  Agent& agent = Running();  // lease 60 s, overrun grace 20 s
  // Importing a framework takes long: far past the lease plus its grace, nothing happens...
  clock_.Advance(Seconds(100.0));
  agent.Tick();
  EXPECT_TRUE(launcher_.process(0).signals.empty());
  // ...and the scheduler hears the GPU is still starting (not a straggler).
  clock_.Advance(Seconds(2.0));
  agent.Tick();
  ASSERT_FALSE(scheduler_.heartbeats().empty());
  EXPECT_TRUE(scheduler_.heartbeats().back().gpus(0).starting());
  // Ready: the whole lease is ahead.
  EXPECT_DOUBLE_EQ(Init(agent, 7, kGpu0, 0).lease().max_duration_s(), 60.0);
  clock_.Advance(Seconds(2.0));
  agent.Tick();
  // Ready, and inside a lease that began late: still no straggler for the scheduler.
  EXPECT_TRUE(scheduler_.heartbeats().back().gpus(0).starting());
  clock_.Advance(Seconds(40.0));
  DoneCapture done;
  Done(agent, 7, kGpu0, wire::LEASE_REACHED, 50, done);
  agent.Tick();
  ASSERT_EQ(scheduler_.reports().size(), 1u);
  EXPECT_DOUBLE_EQ(scheduler_.reports()[0].startup_s(), 102.0);
  EXPECT_DOUBLE_EQ(scheduler_.reports()[0].elapsed_s(), 144.0);  // launch to report
  EXPECT_TRUE(launcher_.process(0).signals.empty());
  agent_.reset();  // answers the held Done while `done` still lives
}

TEST_F(AgentTest, AHungStartUpIsEndedAtTheStartUpTimeoutAsACrash) {
  options_.startup_timeout = Seconds(300.0);
  Agent& agent = Running();
  clock_.Advance(Seconds(299.0));
  agent.Tick();
  EXPECT_TRUE(launcher_.process(0).signals.empty());
  clock_.Advance(Seconds(1.0));
  agent.Tick();
  EXPECT_EQ(launcher_.process(0).signals, std::vector<int>{SIGTERM});
  launcher_.Exit(0, -SIGTERM);
  agent.Tick();
  ASSERT_EQ(scheduler_.reports().size(), 1u);
  EXPECT_EQ(scheduler_.reports()[0].outcome(), wire::CRASHED);
  EXPECT_THAT(scheduler_.reports()[0].message(), HasSubstr("start-up timeout"));
  EXPECT_DOUBLE_EQ(scheduler_.reports()[0].startup_s(), 300.0);
}

TEST_F(AgentTest, EveryRankGetsTorchrunsEnvironment) {
  options_.base_env.emplace_back("MASTER_ADDR", "10.9.9.9");  // the agent's own: not inherited
  options_.base_env.emplace_back("RANK", "5");
  Agent& agent = Registered();
  ASSERT_TRUE(agent.StartRound(Round(1, {GangTask(kGpu0, 0, 100, 0), GangTask(kGpu1, 1, 100, 0)}))
                  .ok());
  agent.Tick();
  ASSERT_EQ(launcher_.num_launched(), 2u);
  std::set<std::string> ranks;
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(launcher_.Env(i, "MASTER_ADDR"), "127.0.0.1");
    EXPECT_EQ(launcher_.Env(i, "MASTER_PORT"), "29509");
    EXPECT_EQ(launcher_.Env(i, "WORLD_SIZE"), "2");
    EXPECT_EQ(launcher_.Env(i, "LOCAL_WORLD_SIZE"), "2");
    EXPECT_EQ(launcher_.Env(i, "RANK"), launcher_.Env(i, "GAVEL_RANK"));
    EXPECT_EQ(launcher_.Env(i, "LOCAL_RANK"), launcher_.Env(i, "RANK"));
    ranks.insert(launcher_.Env(i, "RANK"));
  }
  EXPECT_EQ(ranks, (std::set<std::string>{"0", "1"}));
}

// The property gang leases exist for: every rank stops at the same step under every lease,
// whichever rank saw an extension first. Rank 0 reaches its stop and pauses before round 2's
// extension; rank 1 is still running when it comes (and asks Progress in between).
TEST_F(AgentTest, GangRanksSwitchLeasesAtTheSameStep) {
  Agent& agent = Registered();
  ASSERT_TRUE(agent.StartRound(Round(1, {GangTask(kGpu0, 0, 100, 0), GangTask(kGpu1, 1, 100, 0)}))
                  .ok());
  agent.Tick();
  EXPECT_EQ(Init(agent, 9, kGpu0, 0).lease().stop_at_step(), 100u);
  EXPECT_TRUE(Init(agent, 9, kGpu0, 0).lease().step_bound_only());
  EXPECT_EQ(Init(agent, 9, kGpu1, 0).lease().stop_at_step(), 100u);
  DoneCapture rank0;
  Done(agent, 9, kGpu0, wire::LEASE_REACHED, 100, rank0);
  EXPECT_FALSE(rank0.called);
  // Round 2: the scheduler has not credited step 100 yet (it counts from 0) and grants 150.
  ASSERT_TRUE(agent.StartRound(Round(2, {GangTask(kGpu0, 0, 150, 0), GangTask(kGpu1, 1, 150, 0)}))
                  .ok());
  ASSERT_TRUE(rank0.called && rank0.result.ok());
  EXPECT_TRUE(rank0.result->continue_running());
  EXPECT_EQ(rank0.result->lease().stop_at_step(), 250u);  // 100 + the round's 150
  // Rank 1 keeps its stop through Progress (an extension mid-lease would split the ranks)...
  EXPECT_EQ(Progress(agent, 9, kGpu1, 90, 0).lease().stop_at_step(), 100u);
  // ...and gets the same next stop at its lease end.
  DoneCapture rank1;
  Done(agent, 9, kGpu1, wire::LEASE_REACHED, 100, rank1);
  ASSERT_TRUE(rank1.called && rank1.result.ok());
  EXPECT_TRUE(rank1.result->continue_running());
  EXPECT_EQ(rank1.result->lease().stop_at_step(), 250u);
  agent.Tick();
  EXPECT_EQ(launcher_.num_launched(), 2u);  // no restart
}

// A rank that starts after an extension begins at the launch's stop, as the ranks that were
// ready before it did, and meets the extension at its Done.
TEST_F(AgentTest, AGangRankReadyAfterAnExtensionBeginsAtTheLaunchStop) {
  Agent& agent = Registered();
  ASSERT_TRUE(agent.StartRound(Round(1, {GangTask(kGpu0, 0, 100, 0), GangTask(kGpu1, 1, 100, 0)}))
                  .ok());
  agent.Tick();
  EXPECT_EQ(Init(agent, 9, kGpu0, 0).lease().stop_at_step(), 100u);
  ASSERT_TRUE(agent.StartRound(Round(2, {GangTask(kGpu0, 0, 100, 0), GangTask(kGpu1, 1, 100, 0)}))
                  .ok());
  EXPECT_EQ(Init(agent, 9, kGpu1, 0).lease().stop_at_step(), 100u);
  DoneCapture rank1;
  Done(agent, 9, kGpu1, wire::LEASE_REACHED, 100, rank1);
  ASSERT_TRUE(rank1.called && rank1.result.ok());
  EXPECT_EQ(rank1.result->lease().stop_at_step(), 200u);
}

// The scheduler relaunched the job (a new attempt: it had declared this agent dead, say) onto
// the GPU where its old process still waits: that process belongs to the replaced launch, so
// it is stopped, not extended, and the new one starts under the new launch's number. Every
// report says which launch it is about.
TEST_F(AgentTest, ATaskOfANewLaunchReplacesTheOldLaunchsProcessAndReportsSayWhichLaunch) {
  Agent& agent = Registered();
  wire::Task first = MakeTask(kGpu0, 7, 60.0, 0);
  first.mutable_job()->set_attempt(4);
  ASSERT_TRUE(agent.StartRound(Round(1, {first})).ok());
  agent.Tick();
  EXPECT_EQ(launcher_.Env(0, "GAVEL_ATTEMPT"), "4");
  Init(agent, 7, kGpu0, 0);
  wire::Task next = MakeTask(kGpu0, 7, 60.0, 0);
  next.mutable_job()->set_attempt(5);
  ASSERT_TRUE(agent.StartRound(Round(2, {next})).ok());
  agent.Tick();
  EXPECT_EQ(launcher_.process(0).signals, std::vector<int>{SIGTERM}) << "not extended";
  launcher_.Exit(0, 0);
  agent.Tick();
  agent.Tick();
  ASSERT_EQ(launcher_.num_launched(), 2u);
  EXPECT_EQ(launcher_.Env(1, "GAVEL_ATTEMPT"), "5");
  ASSERT_EQ(scheduler_.reports().size(), 1u);
  EXPECT_EQ(scheduler_.reports()[0].outcome(), wire::KILLED);
  EXPECT_EQ(scheduler_.reports()[0].attempt(), 4u) << "the old process's report is launch 4's";
  // The same launch next round is an extension, as ever.
  Init(agent, 7, kGpu0, 0);
  ASSERT_TRUE(agent.StartRound(Round(3, {next})).ok());
  agent.Tick();
  EXPECT_EQ(launcher_.num_launched(), 2u);
  ASSERT_EQ(scheduler_.reports().size(), 2u);
  EXPECT_EQ(scheduler_.reports()[1].attempt(), 5u);
}

TEST_F(AgentTest, ARestartTaskReplacesTheProcessOfTheSameRank) {
  Agent& agent = Registered();
  ASSERT_TRUE(agent.StartRound(Round(1, {GangTask(kGpu0, 0, 100, 0)})).ok());
  agent.Tick();
  Init(agent, 9, kGpu0, 0);
  wire::Task again = GangTask(kGpu0, 0, 100, 0);
  again.set_restart(true);  // its peer moved: a kept process could not rejoin the new one
  ASSERT_TRUE(agent.StartRound(Round(2, {again})).ok());
  agent.Tick();
  EXPECT_EQ(launcher_.process(0).signals, std::vector<int>{SIGTERM});
  launcher_.Exit(0, 0);
  agent.Tick();
  agent.Tick();
  EXPECT_EQ(launcher_.num_launched(), 2u);
  EXPECT_EQ(launcher_.Env(1, "GAVEL_ROUND_ID"), "2");
}

TEST_F(AgentTest, ReadLogsReturnsTheJobsFilesFromTheirOffsets) {
  Agent& agent = Registered();
  fs::create_directories(options_.log_dir);
  std::ofstream(options_.log_dir + "/job-9.rank-1.err") << "==== gavel: a ====\nboom\n";
  std::ofstream(options_.log_dir + "/job-9.rank-0.out") << "==== gavel: b ====\nhello\n";
  std::ofstream(options_.log_dir + "/job-90.out") << "another job\n";
  std::ofstream(options_.log_dir + "/job-9.rank-x.out") << "not a log name\n";
  wire::ReadLogsRequest request;
  request.set_job_id(9);
  request.set_rank(-1);
  Result<wire::ReadLogsResponse> all = agent.ReadLogs(request);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->chunks_size(), 2);
  EXPECT_EQ(all->chunks(0).file(), "job-9.rank-0.out");  // rank order
  EXPECT_EQ(all->chunks(0).stream(), "stdout");
  EXPECT_EQ(all->chunks(0).data(), "==== gavel: b ====\nhello\n");
  EXPECT_EQ(all->chunks(1).rank(), 1u);
  EXPECT_EQ(all->chunks(1).stream(), "stderr");
  // From an offset, only the rest; one rank only.
  request.set_rank(1);
  (*request.mutable_offsets())["job-9.rank-1.err"] = 19;
  Result<wire::ReadLogsResponse> rest = agent.ReadLogs(request);
  ASSERT_TRUE(rest.ok());
  ASSERT_EQ(rest->chunks_size(), 1);
  EXPECT_EQ(rest->chunks(0).offset(), 19u);
  EXPECT_EQ(rest->chunks(0).data(), "boom\n");
  // A cap keeps the newest part.
  request.clear_offsets();
  request.set_max_bytes(3);
  EXPECT_EQ(agent.ReadLogs(request)->chunks(0).data(), "om\n");
  request.set_rank(-2);
  EXPECT_EQ(agent.ReadLogs(request).status().code(), StatusCode::kInvalidArgument);
}

TEST(JobLogsTest, PruningDeletesOnlyOldLogsOfJobsNotRunningHere) {
  const fs::path dir =
      fs::temp_directory_path() / ("gavel_job_logs_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* name : {"job-1.out", "job-1.err", "job-2.out", "job-3.out", "notes.txt"}) {
    std::ofstream(dir / name) << "x";
  }
  const auto old = fs::file_time_type::clock::now() - std::chrono::hours(48);
  for (const char* name : {"job-1.out", "job-1.err", "job-2.out", "notes.txt"}) {
    fs::last_write_time(dir / name, old);
  }
  const double now = std::chrono::duration<double>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  // Job 2 still runs here; job 3 was written just now; notes.txt is not a job log.
  EXPECT_EQ(PruneJobLogs(dir.string(), Seconds(24 * 3600.0), now, {2}), 2);
  EXPECT_FALSE(fs::exists(dir / "job-1.out"));
  EXPECT_FALSE(fs::exists(dir / "job-1.err"));
  EXPECT_TRUE(fs::exists(dir / "job-2.out"));
  EXPECT_TRUE(fs::exists(dir / "job-3.out"));
  EXPECT_TRUE(fs::exists(dir / "notes.txt"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gavel::agent
