// The daemon over real gRPC on loopback, with a fake agent transport and an in-memory store:
// tokens and permissions, malformed requests refused with a clear error and nothing already
// accepted lost, concurrent submissions each durable before their reply.
#include "gavel/daemon/daemon.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "gavel/core/snapshot.h"
#include "gavel/daemon/fake_transport.h"
#include "gavel/rpc/grpc_util.h"
#include "gavel/wire/scheduler.grpc.pb.h"
#include "gavel/wire/worker.grpc.pb.h"

namespace gavel::daemon {
namespace {

constexpr const char* kAlice = "alice-token-0001";
constexpr const char* kBob = "bob-token-000002";
constexpr const char* kAdmin = "admin-token-0003";

class DaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "gavel_daemon_test_XXXXXX").string();
    dir_ = ::mkdtemp(pattern.data());
    std::ofstream(dir_ + "/tokens") << "# test tokens\n"
                                    << kAlice << " alice\n"
                                    << kBob << " bob\n"
                                    << kAdmin << " ops admin\n";
    auto table = ThroughputTable::LoadFile(DefaultThroughputsFile());
    ASSERT_TRUE(table.ok());
    DaemonOptions options;
    options.listen = "127.0.0.1:0";
    options.token_file = dir_ + "/tokens";
    options.log_events = false;
    options.core.throughputs = std::make_shared<const ThroughputTable>(*std::move(table));
    options.core.round_length = Seconds(60.0);
    options.core.background_solves = false;
    auto store = std::make_unique<MemoryStore>();
    store_ = store.get();
    auto daemon = Daemon::Start(options, nullptr, std::make_unique<FakeAgentTransport>(),
                                std::move(store));
    ASSERT_TRUE(daemon.ok()) << daemon.status().ToString();
    daemon_ = *std::move(daemon);
    auto channel = rpc::MakeChannel(daemon_->address());
    scheduler_ = wire::Scheduler::NewStub(channel);
    workers_ = wire::WorkerToScheduler::NewStub(channel);
  }
  void TearDown() override {
    daemon_.reset();
    std::filesystem::remove_all(dir_);
  }

  static void Prepare(grpc::ClientContext* context, const char* token) {
    rpc::PrepareContext(context, Seconds(10.0), token == nullptr ? "" : token);
  }
  static wire::SubmitJobRequest Submission(std::uint64_t steps) {
    wire::SubmitJobRequest request;
    wire::JobSpec* spec = request.mutable_spec();
    spec->add_command("python3");
    spec->add_command("train.py");
    spec->set_total_steps(steps);
    spec->set_scale_factor(1);
    spec->set_job_type("ResNet-18 (batch size 64)");
    return request;
  }
  grpc::Status Submit(const wire::SubmitJobRequest& request, const char* token,
                      std::uint64_t* id = nullptr) {
    grpc::ClientContext context;
    Prepare(&context, token);
    wire::SubmitJobResponse response;
    grpc::Status status = scheduler_->SubmitJob(&context, request, &response);
    if (id != nullptr) *id = response.job_id();
    return status;
  }
  wire::ListJobsResponse Jobs() {
    grpc::ClientContext context;
    Prepare(&context, kAlice);
    wire::ListJobsResponse response;
    EXPECT_TRUE(scheduler_->ListJobs(&context, wire::ListJobsRequest(), &response).ok());
    return response;
  }
  grpc::Status Cancel(std::uint64_t id, const char* token) {
    grpc::ClientContext context;
    Prepare(&context, token);
    wire::CancelJobRequest request;
    request.set_job_id(id);
    wire::CancelJobResponse response;
    return scheduler_->CancelJob(&context, request, &response);
  }
  grpc::Status Register(const char* token, const std::string& type = "v100") {
    grpc::ClientContext context;
    Prepare(&context, token);
    wire::RegisterWorkerRequest request;
    request.set_agent_id("agent-1");
    request.set_gpu_type(type);
    request.set_num_gpus(1);
    request.set_address("127.0.0.1:1");
    wire::RegisterWorkerResponse response;
    return workers_->RegisterWorker(&context, request, &response);
  }

  std::string dir_;
  MemoryStore* store_ = nullptr;
  std::unique_ptr<Daemon> daemon_;
  std::unique_ptr<wire::Scheduler::Stub> scheduler_;
  std::unique_ptr<wire::WorkerToScheduler::Stub> workers_;
};

TEST_F(DaemonTest, RequestsWithoutAValidTokenAreRefused) {
  for (const char* token : {static_cast<const char*>(nullptr), "not-a-known-token"}) {
    EXPECT_EQ(Submit(Submission(10), token).error_code(), grpc::StatusCode::UNAUTHENTICATED);
    grpc::ClientContext list;
    Prepare(&list, token);
    wire::ListJobsResponse jobs;
    EXPECT_EQ(scheduler_->ListJobs(&list, wire::ListJobsRequest(), &jobs).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(Register(token).error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(Cancel(1, token).error_code(), grpc::StatusCode::UNAUTHENTICATED);
    grpc::ClientContext beat;
    Prepare(&beat, token);
    wire::HeartbeatRequest heartbeat;
    heartbeat.set_agent_id("agent-1");
    wire::HeartbeatResponse known;
    EXPECT_EQ(workers_->Heartbeat(&beat, heartbeat, &known).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    grpc::ClientContext report;
    Prepare(&report, token);
    wire::ReportDoneResponse done;
    EXPECT_EQ(workers_->ReportDone(&report, wire::ReportDoneRequest(), &done).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
  }
  EXPECT_EQ(Jobs().jobs_size(), 0);
}

TEST_F(DaemonTest, OnlyAdminsRegisterWorkersAndOnlyOwnersOrAdminsCancel) {
  EXPECT_EQ(Register(kAlice).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(Register(kAdmin).ok());
  std::uint64_t alices = 0;
  ASSERT_TRUE(Submit(Submission(100), kAlice, &alices).ok());
  const grpc::Status denied = Cancel(alices, kBob);
  EXPECT_EQ(denied.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(denied.error_message().find("another user"), std::string::npos);
  EXPECT_EQ(Jobs().jobs(0).state(), wire::RUNNING) << "untouched (running on the one GPU)";
  EXPECT_TRUE(Cancel(alices, kAlice).ok());
  EXPECT_EQ(Jobs().jobs(0).state(), wire::CANCELLED);
  std::uint64_t another = 0;
  ASSERT_TRUE(Submit(Submission(100), kAlice, &another).ok());
  EXPECT_TRUE(Cancel(another, kAdmin).ok());
  EXPECT_EQ(Jobs().jobs(1).user(), "alice");
}

TEST_F(DaemonTest, MalformedRequestsAreRefusedAndNothingAcceptedIsLost) {
  std::uint64_t kept = 0;
  ASSERT_TRUE(Submit(Submission(123), kAlice, &kept).ok());

  wire::SubmitJobRequest no_spec;
  const grpc::Status missing = Submit(no_spec, kAlice);
  EXPECT_EQ(missing.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(missing.error_message().find("spec"), std::string::npos);

  wire::SubmitJobRequest zero = Submission(0);
  const grpc::Status zero_steps = Submit(zero, kAlice);
  EXPECT_EQ(zero_steps.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(zero_steps.error_message().find("spec.total_steps"), std::string::npos);

  wire::SubmitJobRequest bad_rate = Submission(10);
  (*bad_rate.mutable_spec()->mutable_throughputs())["v100"] = -3;
  EXPECT_NE(Submit(bad_rate, kAlice).error_message().find("spec.throughputs[\"v100\"]"),
            std::string::npos);

  const grpc::Status bad_type = Register(kAdmin, "tpu");
  EXPECT_EQ(bad_type.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(bad_type.error_message().find("gpu_type"), std::string::npos);

  grpc::ClientContext report_context;
  Prepare(&report_context, kAdmin);
  wire::ReportDoneRequest report;
  report.set_agent_id("ghost");
  report.set_job_id(kept);
  report.set_outcome(wire::COMPLETED);
  report.set_checkpointed_steps(123);
  wire::ReportDoneResponse done;
  const grpc::Status ghost = workers_->ReportDone(&report_context, report, &done);
  EXPECT_EQ(ghost.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(ghost.error_message().find("agent_id"), std::string::npos);

  // An enum value no version of the protocol defines (proto3 keeps unknown values).
  ASSERT_TRUE(Register(kAdmin).ok());
  grpc::ClientContext odd_context;
  Prepare(&odd_context, kAdmin);
  report.set_agent_id("agent-1");
  report.set_worker_id(0);
  report.set_outcome(static_cast<wire::TaskOutcome>(99));
  const grpc::Status odd = workers_->ReportDone(&odd_context, report, &done);
  EXPECT_EQ(odd.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(odd.error_message().find("outcome"), std::string::npos);

  const wire::ListJobsResponse jobs = Jobs();
  ASSERT_EQ(jobs.jobs_size(), 1);
  EXPECT_EQ(jobs.jobs(0).id(), kept);
  EXPECT_EQ(jobs.jobs(0).total_steps(), 123u);
  EXPECT_EQ(jobs.jobs(0).state(), wire::RUNNING) << "placed once a GPU registered";
}

TEST_F(DaemonTest, ConcurrentSubmissionsAreEachDurableBeforeTheirReply) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 25;
  std::vector<std::vector<std::uint64_t>> ids(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        std::uint64_t id = 0;
        if (Submit(Submission(10), kBob, &id).ok()) ids[static_cast<std::size_t>(t)].push_back(id);
        // Durable before the reply: the store already holds it.
        auto state = store_->Load();
        bool found = false;
        for (const JobRow& row : state->jobs) found = found || row.id == id;
        EXPECT_TRUE(found) << "job " << id << " replied before it was committed";
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::set<std::uint64_t> all;
  for (const auto& list : ids) all.insert(list.begin(), list.end());
  EXPECT_EQ(all.size(), static_cast<std::size_t>(kThreads * kPerThread));
  EXPECT_EQ(Jobs().jobs_size(), kThreads * kPerThread);
}

}  // namespace
}  // namespace gavel::daemon
