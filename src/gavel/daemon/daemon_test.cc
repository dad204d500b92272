// The daemon over real gRPC on loopback, with a fake agent transport and an in-memory store:
// tokens and permissions, malformed requests refused with a clear error and nothing already
// accepted lost, concurrent submissions each durable before their reply.
#include "gavel/daemon/daemon.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <future>
#include <fstream>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include <google/protobuf/util/message_differencer.h>

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
constexpr const char* kHost1 = "agent-token-0004";  // role agent, identity host1
constexpr const char* kHost2 = "agent-token-0005";  // role agent, identity host2

class DaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "gavel_daemon_test_XXXXXX").string();
    dir_ = ::mkdtemp(pattern.data());
    std::ofstream(dir_ + "/tokens") << "# test tokens\n"
                                    << kAlice << " alice\n"
                                    << kBob << " bob\n"
                                    << kAdmin << " ops admin\n"
                                    << kHost1 << " host1 agent\n"
                                    << kHost2 << " host2 agent\n";
    auto table = ThroughputTable::LoadFile(DefaultThroughputsFile());
    ASSERT_TRUE(table.ok());
    DaemonOptions options;
    options.listen = "127.0.0.1:0";
    options.limits.handshake_timeout = Seconds(1.0);  // IdleConnectionsAreDroppedAndServed
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
    options_ = options;
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
  // Every job, page after page.
  wire::ListJobsResponse Jobs() {
    wire::ListJobsRequest request;
    wire::ListJobsResponse all;
    while (true) {
      grpc::ClientContext context;
      Prepare(&context, kAlice);
      wire::ListJobsResponse page;
      EXPECT_TRUE(scheduler_->ListJobs(&context, request, &page).ok());
      for (const wire::JobInfo& job : page.jobs()) *all.add_jobs() = job;
      if (page.next_page_token().empty()) return all;
      request.set_page_token(page.next_page_token());
    }
  }
  grpc::Status Cancel(std::uint64_t id, const char* token) {
    grpc::ClientContext context;
    Prepare(&context, token);
    wire::CancelJobRequest request;
    request.set_job_id(id);
    wire::CancelJobResponse response;
    return scheduler_->CancelJob(&context, request, &response);
  }
  grpc::Status Register(const char* token, const std::string& type = "v100",
                        const std::string& agent_id = "agent-1") {
    grpc::ClientContext context;
    Prepare(&context, token);
    wire::RegisterWorkerRequest request;
    request.set_agent_id(agent_id);
    request.set_callback_token("callback-of-" + agent_id);
    request.set_gpu_type(type);
    request.set_num_gpus(1);
    request.set_address("127.0.0.1:1");
    wire::RegisterWorkerResponse response;
    return workers_->RegisterWorker(&context, request, &response);
  }

  grpc::Status Heartbeat(const char* token, const std::string& agent_id, bool* known = nullptr) {
    grpc::ClientContext context;
    Prepare(&context, token);
    wire::HeartbeatRequest request;
    request.set_agent_id(agent_id);
    wire::HeartbeatResponse response;
    grpc::Status status = workers_->Heartbeat(&context, request, &response);
    if (known != nullptr) *known = response.known();
    return status;
  }
  grpc::Status Report(const char* token, const wire::ReportDoneRequest& request) {
    grpc::ClientContext context;
    Prepare(&context, token);
    wire::ReportDoneResponse response;
    return workers_->ReportDone(&context, request, &response);
  }
  grpc::Status ListJobs(const char* token, const wire::ListJobsRequest& request,
                        wire::ListJobsResponse* response) {
    grpc::ClientContext context;
    Prepare(&context, token);
    return scheduler_->ListJobs(&context, request, response);
  }
  grpc::Status ListWorkers(const char* token) {
    grpc::ClientContext context;
    Prepare(&context, token);
    wire::ListWorkersResponse response;
    return scheduler_->ListWorkers(&context, wire::ListWorkersRequest(), &response);
  }
  grpc::Status GetStatus(const char* token, wire::GetStatusResponse* response = nullptr) {
    grpc::ClientContext context;
    Prepare(&context, token);
    wire::GetStatusResponse ignored;
    return scheduler_->GetStatus(&context, wire::GetStatusRequest(),
                                 response != nullptr ? response : &ignored);
  }

  std::string dir_;
  DaemonOptions options_;
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
  EXPECT_EQ(Register(kAlice, "v100", "agent-9").error_code(), grpc::StatusCode::PERMISSION_DENIED);
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

// One row per RPC of docs/runtime.md's "Who may call what": a caller without the role is
// refused with PERMISSION_DENIED and changes nothing; the caller with it succeeds.
TEST_F(DaemonTest, EveryRpcRefusesCallersWithoutTheRole) {
  constexpr auto kDenied = grpc::StatusCode::PERMISSION_DENIED;
  // Scheduler service: users and admins, never an agent token.
  for (const char* agent : {kHost1, kHost2}) {
    EXPECT_EQ(Submit(Submission(10), agent).error_code(), kDenied);
    wire::ListJobsResponse jobs;
    EXPECT_EQ(ListJobs(agent, {}, &jobs).error_code(), kDenied);
    EXPECT_EQ(ListWorkers(agent).error_code(), kDenied);
    EXPECT_EQ(GetStatus(agent).error_code(), kDenied);
  }
  std::uint64_t alices = 0;
  ASSERT_TRUE(Submit(Submission(100), kAlice, &alices).ok());
  EXPECT_EQ(Cancel(alices, kHost1).error_code(), kDenied);
  EXPECT_EQ(Cancel(alices, kBob).error_code(), kDenied);  // another user's job
  EXPECT_TRUE(ListWorkers(kBob).ok());
  EXPECT_TRUE(GetStatus(kBob).ok());

  // WorkerToScheduler: agents and admins, never a user's token.
  for (const char* user : {kAlice, kBob}) {
    EXPECT_EQ(Register(user).error_code(), kDenied);
  }
  ASSERT_TRUE(Register(kHost1).ok());  // agent-1 now belongs to host1
  EXPECT_EQ(Register(kHost2).error_code(), kDenied) << "host2 may not take agent-1 over";
  ASSERT_TRUE(Register(kHost2, "v100", "agent-2").ok());

  // Heartbeat and ReportDone: only the identity that registered the agent, admins included.
  for (const char* other : {kAlice, kBob, kHost2, kAdmin}) {
    EXPECT_EQ(Heartbeat(other, "agent-1").error_code(), kDenied) << other;
  }
  bool known = false;
  ASSERT_TRUE(Heartbeat(kHost1, "agent-1", &known).ok());
  EXPECT_TRUE(known);

  // Alice's job runs on one of the GPUs; everyone but its agent forges its completion.
  const wire::JobInfo running = Jobs().jobs(0);
  ASSERT_EQ(running.state(), wire::RUNNING);
  ASSERT_EQ(running.worker_ids_size(), 1);
  const std::string owner_agent = running.worker_ids(0) == 0 ? "agent-1" : "agent-2";
  const char* owner_token = owner_agent == "agent-1" ? kHost1 : kHost2;
  wire::GetStatusResponse status;
  ASSERT_TRUE(GetStatus(kAdmin, &status).ok());
  wire::ReportDoneRequest forged;
  forged.set_agent_id(owner_agent);
  forged.set_worker_id(running.worker_ids(0));
  forged.set_job_id(alices);
  forged.set_round_id(status.round_id());
  forged.set_outcome(wire::COMPLETED);
  forged.set_checkpointed_steps(100);
  forged.set_steps_trained(100);
  for (const char* other : {kAlice, kBob, kAdmin, kHost1, kHost2}) {
    if (other == owner_token) continue;
    EXPECT_EQ(Report(other, forged).error_code(), kDenied) << other;
  }
  const wire::JobInfo after = Jobs().jobs(0);
  EXPECT_EQ(after.state(), wire::RUNNING);
  EXPECT_EQ(after.steps_done(), 0u);
  // Its own agent is heard.
  EXPECT_TRUE(Report(owner_token, forged).ok());
  EXPECT_EQ(Jobs().jobs(0).steps_done(), 100u);
}

// The store keeps who registered an agent and the callback token the agent chose, never the
// token the agent authenticated with.
TEST_F(DaemonTest, NoTokenOfTheFileIsStored) {
  ASSERT_TRUE(Register(kHost1).ok());
  auto state = store_->Load();
  ASSERT_TRUE(state.ok());
  ASSERT_EQ(state->agents.size(), 1u);
  EXPECT_EQ(state->agents[0].owner, "host1");
  EXPECT_EQ(state->agents[0].token, "callback-of-agent-1");
  for (const char* token : {kAlice, kBob, kAdmin, kHost1, kHost2}) {
    EXPECT_EQ(state->agents[0].token.find(token), std::string::npos);
  }
}

// ~70 jobs with 64 KB commands made `gavel jobs` exceed gRPC's 4 MB limit for
// everyone. Listings are pages now: every page fits the client's default 4 MB limit (the
// stub's channel keeps it), and walking the pages yields every job once, in id order.
TEST_F(DaemonTest, ListingsArePagedSoNoneOutgrowsTheMessageLimit) {
  wire::SubmitJobRequest big = Submission(10);
  *big.mutable_spec()->mutable_command(1) = std::string(64 * 1024 - 16, 'x');
  (*big.mutable_spec()->mutable_env())["BIG"] = std::string(60 * 1024, 'y');
  std::vector<std::uint64_t> submitted;
  for (int i = 0; i < 120; ++i) {  // ~15 MB of jobs
    std::uint64_t id = 0;
    ASSERT_TRUE(Submit(big, i % 2 ? kAlice : kBob, &id).ok());
    submitted.push_back(id);
  }
  for (std::uint32_t limit : {0u, 7u, 1000u}) {
    std::vector<std::uint64_t> seen;
    wire::ListJobsRequest request;
    request.set_limit(limit);
    int pages = 0;
    while (true) {
      wire::ListJobsResponse page;
      const grpc::Status status = ListJobs(kAlice, request, &page);
      ASSERT_TRUE(status.ok()) << status.error_message();
      ++pages;
      EXPECT_LT(page.ByteSizeLong(), 2u << 20);
      EXPECT_LE(page.jobs_size(), limit == 0 ? 100 : static_cast<int>(limit));
      for (const wire::JobInfo& job : page.jobs()) seen.push_back(job.id());
      if (page.next_page_token().empty()) break;
      request.set_page_token(page.next_page_token());
    }
    EXPECT_EQ(seen, submitted) << "limit " << limit;
    EXPECT_GT(pages, 1);
  }
  wire::ListJobsRequest small;
  small.set_limit(3);
  wire::ListJobsResponse three;
  ASSERT_TRUE(ListJobs(kBob, small, &three).ok());
  EXPECT_EQ(three.jobs_size(), 3);
  EXPECT_EQ(three.next_page_token(), std::to_string(submitted[2]));

  wire::ListJobsRequest too_many;
  too_many.set_limit(1001);
  wire::ListJobsResponse none;
  const grpc::Status over = ListJobs(kBob, too_many, &none);
  EXPECT_EQ(over.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(over.error_message().find("limit"), std::string::npos);
  wire::ListJobsRequest forged;
  forged.set_page_token("abc");
  const grpc::Status bad = ListJobs(kBob, forged, &none);
  EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(bad.error_message().find("page_token"), std::string::npos);

  wire::SubmitJobRequest huge_env = Submission(10);
  (*huge_env.mutable_spec()->mutable_env())["X"] = std::string(65 * 1024, 'z');
  const grpc::Status refused = Submit(huge_env, kAlice);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(refused.error_message().find("spec.env"), std::string::npos);
}

// ListJobs is answered with the published listing's bytes: what a client parses is the page
// built as a message from the same listing, and the states are those the calls made.
TEST_F(DaemonTest, ListingBytesOnTheWireAreThePagesOfThePublishedListing) {
  std::vector<std::uint64_t> ids;
  for (int i = 0; i < 9; ++i) {
    std::uint64_t id = 0;
    ASSERT_TRUE(Submit(Submission(10 + i), i % 2 ? kAlice : kBob, &id).ok());
    ids.push_back(id);
  }
  const std::set<std::uint64_t> cancelled = {ids[0], ids[4], ids[8]};
  for (std::uint64_t id : cancelled) ASSERT_TRUE(Cancel(id, kAdmin).ok());
  for (bool active_only : {false, true}) {
    wire::ListJobsRequest request;
    request.set_limit(2);
    request.set_active_only(active_only);
    std::vector<std::uint64_t> listed;
    while (true) {
      wire::ListJobsResponse page;
      ASSERT_TRUE(ListJobs(kAlice, request, &page).ok());
      const Result<wire::ListJobsResponse> built = daemon_->loop().listing()->Page(request);
      ASSERT_TRUE(built.ok());
      EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(page, *built));
      for (const wire::JobInfo& job : page.jobs()) {
        listed.push_back(job.id());
        EXPECT_EQ(job.state(), cancelled.contains(job.id()) ? wire::CANCELLED : wire::QUEUED);
        EXPECT_EQ(job.total_steps(), 10 + (job.id() - ids[0]));
      }
      if (page.next_page_token().empty()) break;
      request.set_page_token(page.next_page_token());
    }
    std::vector<std::uint64_t> expected;
    for (std::uint64_t id : ids) {
      if (!active_only || !cancelled.contains(id)) expected.push_back(id);
    }
    EXPECT_EQ(listed, expected) << "active only: " << active_only;
  }
}

// A listing is answered from the last commit's snapshot on the gRPC thread: while the core
// thread is held in a long batch, `gavel jobs` still answers, with every acknowledged job and
// without the submission that waits for that batch; once the batch commits, that one shows.
TEST_F(DaemonTest, ListingsAreAnsweredWhileTheCoreThreadIsBusy) {
  std::vector<std::uint64_t> acknowledged;
  for (int i = 0; i < 3; ++i) {
    std::uint64_t id = 0;
    ASSERT_TRUE(Submit(Submission(10), kAlice, &id).ok());
    acknowledged.push_back(id);
  }
  std::promise<void> entered;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  daemon_->loop().Post([&entered, released](SchedulerCore&) {
    entered.set_value();
    released.wait();
  });
  entered.get_future().wait();
  // The core thread is now held; this submission queues behind it.
  std::uint64_t late_id = 0;
  auto late = std::async(std::launch::async, [&] { return Submit(Submission(10), kBob, &late_id); });

  const auto ids_listed = [&] {
    std::vector<std::uint64_t> ids;
    const wire::ListJobsResponse all = Jobs();
    for (const wire::JobInfo& job : all.jobs()) ids.push_back(job.id());
    return ids;
  };
  EXPECT_EQ(ids_listed(), acknowledged);
  wire::ListJobsRequest one;
  one.add_job_ids(acknowledged[1]);
  wire::ListJobsResponse page;
  ASSERT_TRUE(ListJobs(kBob, one, &page).ok());
  ASSERT_EQ(page.jobs_size(), 1);
  EXPECT_EQ(page.jobs(0).state(), wire::QUEUED);
  EXPECT_EQ(late.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout)
      << "the submission was answered while the core thread was held";

  release.set_value();
  ASSERT_TRUE(late.get().ok());
  acknowledged.push_back(late_id);
  EXPECT_EQ(ids_listed(), acknowledged);
}

// GRPC's default SO_REUSEPORT let a second daemon share the port.
TEST_F(DaemonTest, ASecondDaemonOnTheSameAddressFailsAtStart) {
  DaemonOptions second = options_;
  second.listen = daemon_->address();
  auto other = Daemon::Start(second, nullptr, std::make_unique<FakeAgentTransport>(),
                             std::make_unique<MemoryStore>());
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find(daemon_->address()), std::string::npos);
  EXPECT_NE(other.status().message().find("in use"), std::string::npos);
  EXPECT_EQ(GetStatus(kAlice).error_code(), grpc::StatusCode::OK);  // the first still serves
}

// Idle TCP connections that never speak HTTP/2 are closed after the handshake timeout (1 s
// here), and the daemon serves normal calls while they are open.
TEST_F(DaemonTest, IdleConnectionsAreDroppedAndServed) {
  auto address = rpc::ParseAddress(daemon_->address());
  ASSERT_TRUE(address.ok());
  std::vector<int> idle;
  for (int i = 0; i < 300; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(address->port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    idle.push_back(fd);
  }
  EXPECT_TRUE(GetStatus(kAlice).ok());
  std::uint64_t id = 0;
  EXPECT_TRUE(Submit(Submission(5), kAlice, &id).ok());
  // The server closes each idle connection (after its own SETTINGS frame): reads reach end of
  // file or a reset, not the 5-s receive timeout.
  int closed = 0;
  for (int fd : idle) {
    timeval wait{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
    char buffer[256];
    ssize_t n = 0;
    while ((n = ::read(fd, buffer, sizeof buffer)) > 0) {
    }
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) ++closed;
    ::close(fd);
  }
  EXPECT_EQ(closed, 300);
  EXPECT_TRUE(GetStatus(kAlice).ok());
}

}  // namespace
}  // namespace gavel::daemon
