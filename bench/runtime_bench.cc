// Runtime benchmarks (docs/runtime.md, "Performance"):
//   BM_RoundDecisionAndDispatch  a round boundary of the daemon's core with 1,000 GPUs
//                                (250 agents of 4) and 5,000 active jobs: close the round,
//                                plan the next (RoundScheduler::PlanRound) and hand one
//                                StartRound per agent to the (fake) transport. The policy solve
//                                is excluded (the allocation was computed before timing, and
//                                the daemon solves in the background anyway).
//   BM_SubmitDurable             job submissions through the real daemon over gRPC on
//                                loopback into SQLite (WAL, synchronous=FULL), each reply sent
//                                only after its job was committed; 16 client threads.
//   BM_SubmitCommitEach          the same store without group commit: one fsync'ed
//                                transaction per submission (the floor group commit lifts).
#include <benchmark/benchmark.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <thread>

#include "gavel/core/shipped_table.h"
#include "gavel/core/snapshot.h"
#include "gavel/daemon/daemon.h"
#include "gavel/daemon/fake_transport.h"
#include "gavel/daemon/scheduler_core.h"
#include "gavel/daemon/sqlite_store.h"
#include "gavel/rpc/grpc_util.h"
#include "gavel/wire/scheduler.grpc.pb.h"

namespace gavel::daemon {
namespace {

wire::JobSpec Spec(std::uint64_t steps, const std::string& type) {
  wire::JobSpec spec;
  spec.add_command("python3");
  spec.add_command("train.py");
  spec.set_total_steps(steps);
  spec.set_scale_factor(1);
  spec.set_job_type(type);
  return spec;
}

std::string TempDir(const std::string& name) {
  std::string pattern = (std::filesystem::temp_directory_path() / (name + "_XXXXXX")).string();
  return ::mkdtemp(pattern.data());
}

void BM_RoundDecisionAndDispatch(benchmark::State& state) {
  const int agents = 250;
  const int gpus_per_agent = 4;
  const int jobs = static_cast<int>(state.range(0));
  ManualClock clock{Seconds(1'700'000'000.0)};  // a Unix time, in 2023
  MemoryStore store;
  FakeAgentTransport transport;
  transport.set_record(false);
  CoreOptions options;
  options.throughputs = ShippedThroughputTable();
  options.round_length = Seconds(360.0);
  options.heartbeat_timeout = Seconds(1e9);  // fake agents never heartbeat
  auto created = SchedulerCore::Create(options, &store, &transport, &clock);
  GAVEL_CHECK(created.ok());
  std::unique_ptr<SchedulerCore> core = *std::move(created);
  const rpc::Principal admin{"ops", true, false};
  const char* types[] = {"v100", "p100", "k80"};
  for (int a = 0; a < agents; ++a) {
    wire::RegisterWorkerRequest r;
    r.set_agent_id("agent-" + std::to_string(a));
    r.set_gpu_type(types[a % 3]);
    r.set_num_gpus(gpus_per_agent);
    r.set_address("127.0.0.1:" + std::to_string(20000 + a));
    GAVEL_CHECK(core->RegisterWorker(admin, r).ok());
  }
  const auto& keys = ShippedThroughputTable()->job_types();
  std::vector<std::string> models;
  for (const JobTypeKey& key : keys) {
    if (key.scale_factor == 1) models.push_back(key.model);
  }
  for (int j = 0; j < jobs; ++j) {
    GAVEL_CHECK(core->Submit(admin, Spec(1'000'000'000, models[static_cast<std::size_t>(j) %
                                                                models.size()]))
                    .ok());
  }
  // The first round computes the first allocation (synchronously, untimed).
  core->Tick();
  GAVEL_CHECK(core->Flush().ok());
  GAVEL_CHECK(core->current_round().has_value());
  core->allocation_service().WaitIdle();
  std::uint64_t step = 0;
  std::size_t tasks = 0;
  for (auto _ : state) {
    state.PauseTiming();
    // Every GPU reports the end of its lease (no throughput sample: no re-solve is triggered).
    const std::uint64_t round = *core->current_round();
    ++step;
    auto workers = core->ListWorkers();
    tasks = 0;
    std::map<std::uint64_t, std::uint32_t> launches;  // the launch each report belongs to
    wire::ListJobsRequest page;
    page.set_limit(1000);
    while (true) {
      const auto listed = core->ListJobs(page);
      GAVEL_CHECK(listed.ok());
      for (const wire::JobInfo& job : listed->jobs()) launches[job.id()] = job.attempts();
      if (listed->next_page_token().empty()) break;
      page.set_page_token(listed->next_page_token());
    }
    for (const wire::WorkerInfo& w : workers.workers()) {
      if (!w.busy()) continue;
      ++tasks;
      wire::ReportDoneRequest r;
      r.set_agent_id(w.agent_id());
      r.set_worker_id(w.worker_id());
      r.set_job_id(w.job_id());
      r.set_round_id(round);
      r.set_attempt(launches[w.job_id()] > 0 ? launches[w.job_id()] - 1 : 0);
      r.set_outcome(wire::LEASE_EXPIRED);
      r.set_checkpointed_steps(step * 100);
      r.set_elapsed_s(360.0);
      GAVEL_CHECK(core->ReportDone(r).ok());
    }
    GAVEL_CHECK(core->Flush().ok());
    clock.AdvanceMs(360'000);
    state.ResumeTiming();
    core->Tick();  // close the round, plan the next, dispatch it
    state.PauseTiming();
    GAVEL_CHECK(core->current_round().has_value() && *core->current_round() == round + 1);
    GAVEL_CHECK(core->Flush().ok());
    state.ResumeTiming();
  }
  state.counters["workers"] = agents * gpus_per_agent;
  state.counters["jobs"] = jobs;
  state.counters["tasks_per_round"] = static_cast<double>(tasks);
  state.counters["plan_and_dispatch_ms"] = core->counters().last_plan_seconds * 1000.0;
  state.counters["solves_on_critical_path"] =
      static_cast<double>(core->allocation_stats().synchronous_solves) - 1.0;
}
BENCHMARK(BM_RoundDecisionAndDispatch)->Arg(5000)->Unit(benchmark::kMillisecond)->Iterations(10);

void BM_SubmitDurable(benchmark::State& state) {
  const std::string dir = TempDir("gavel_bench_submit");
  DaemonOptions options;
  options.listen = "127.0.0.1:0";
  options.state_dir = dir;
  options.log_events = false;
  options.core.throughputs = ShippedThroughputTable();
  auto daemon = Daemon::Start(options, nullptr, std::make_unique<FakeAgentTransport>());
  GAVEL_CHECK(daemon.ok());
  auto channel = rpc::MakeChannel((*daemon)->address());
  const int threads = static_cast<int>(state.range(0));
  const int per_thread = 125;
  std::vector<std::unique_ptr<wire::Scheduler::Stub>> stubs;
  for (int t = 0; t < threads; ++t) stubs.push_back(wire::Scheduler::NewStub(channel));
  wire::SubmitJobRequest request;
  *request.mutable_spec() = Spec(1000, "ResNet-18 (batch size 64)");
  std::int64_t submitted = 0;
  for (auto _ : state) {
    std::atomic<int> failures = 0;
    std::vector<std::thread> clients;
    for (int t = 0; t < threads; ++t) {
      clients.emplace_back([&, t] {
        for (int i = 0; i < per_thread; ++i) {
          grpc::ClientContext context;
          rpc::PrepareContext(&context, Seconds(30.0), "");
          wire::SubmitJobResponse response;
          if (!stubs[static_cast<std::size_t>(t)]->SubmitJob(&context, request, &response).ok()) {
            ++failures;
          }
        }
      });
    }
    for (std::thread& c : clients) c.join();
    GAVEL_CHECK(failures == 0);
    submitted += threads * per_thread;
  }
  state.SetItemsProcessed(submitted);
  state.counters["submissions_per_s"] =
      benchmark::Counter(static_cast<double>(submitted), benchmark::Counter::kIsRate);
  (*daemon)->Shutdown();
  daemon->reset();
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_SubmitDurable)->Arg(16)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

void BM_SubmitCommitEach(benchmark::State& state) {
  const std::string dir = TempDir("gavel_bench_commit");
  auto store = SqliteStore::Open(dir);
  GAVEL_CHECK(store.ok());
  ManualClock clock{Seconds(1'700'000'000.0)};  // a Unix time, in 2023
  FakeAgentTransport transport;
  CoreOptions options;
  options.throughputs = ShippedThroughputTable();
  options.background_solves = false;
  auto core = SchedulerCore::Create(options, store->get(), &transport, &clock);
  GAVEL_CHECK(core.ok());
  const rpc::Principal user{"alice", false, false};
  const wire::JobSpec spec = Spec(1000, "ResNet-18 (batch size 64)");
  for (auto _ : state) {
    GAVEL_CHECK((*core)->Submit(user, spec).ok());
    GAVEL_CHECK((*core)->Flush().ok());
  }
  state.SetItemsProcessed(state.iterations());
  core->reset();
  store->reset();
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_SubmitCommitEach)->Unit(benchmark::kMicrosecond)->Iterations(300);

}  // namespace
}  // namespace gavel::daemon

BENCHMARK_MAIN();
