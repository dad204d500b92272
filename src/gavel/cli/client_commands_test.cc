// The client commands' parsing and rendering: command lines as a user types them, job files,
// the `gavel jobs` table fed with hostile names, and which jobs `gavel jobs` lists (against a
// daemon in this process).
#include "gavel/cli/client_commands.h"
#include "gavel/cli/logs_command.h"
#include "gavel/cli/serve_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "gavel/core/shipped_table.h"
#include "gavel/daemon/daemon.h"
#include "gavel/daemon/fake_transport.h"
#include "gavel/daemon/store.h"

namespace gavel::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// Parses `gavel <args...>` with the client commands; returns CLI11's error text, "" if none.
std::string Parse(ClientCommandOptions* options, std::vector<std::string> args) {
  CLI::App app("gavel");
  AddClientCommands(app, options);
  std::vector<const char*> argv = {"gavel"};
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

TEST(SubmitCommandLineTest, EverythingAfterTheDashesIsTheCommandEvenAfterEnv) {
  // Regression: `--env A=B -- python3 train.py --lr 0.1` was refused with "argument was not
  // expected: --lr" because the list option swallowed `--`.
  ClientCommandOptions o;
  ASSERT_EQ(Parse(&o, {"submit", "--steps", "5", "--env", "A=B", "--env", "C=D", "--throughput",
                       "v100=2", "--", "python3", "train.py", "--lr", "0.1", "--env", "X=Y"}),
            "");
  EXPECT_THAT(o.submit.env, ElementsAre("A=B", "C=D"));
  EXPECT_THAT(o.submit.throughputs, ElementsAre("v100=2"));
  EXPECT_THAT(o.submit.command,
              ElementsAre("python3", "train.py", "--lr", "0.1", "--env", "X=Y"));
  const auto spec = SpecFromFlags(o.submit);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->env().at("A"), "B");
  EXPECT_EQ(spec->command_size(), 6);
}

TEST(SubmitCommandLineTest, NumbersOutsideTheirBoundsAreRefusedNamingTheFlag) {
  // The flag, the value and the documented bound (docs/formats.md, "Bounds"): CLI11's own
  // conversion errors name the flag too, so the bound is what shows the validator refused it.
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--steps", "-1"}, "--steps: `-1` is not an integer in [1, 10000000000]"},
      {{"--steps", "1e18"}, "--steps: `1e18` is not an integer in [1, 10000000000]"},
      {{"--steps", "100000000000"},
       "--steps: `100000000000` is not an integer in [1, 10000000000]"},
      {{"--scale-factor", "0"}, "--scale-factor: `0` is not an integer in [1, 1000000]"},
      {{"--scale-factor", "-3"}, "--scale-factor: `-3` is not an integer in [1, 1000000]"},
      {{"--priority-weight", "nan"}, "--priority-weight: `nan` is not a finite number"},
      {{"--priority-weight", "1e300"}, "--priority-weight: `1e300` is outside [1e-06, 1e+06]"},
      {{"--timeout-seconds", "-5"}, "--timeout-seconds: `-5` is outside [0.001, 1e+09] s"},
  };
  for (const auto& [flags, named] : cases) {
    ClientCommandOptions o;
    std::vector<std::string> args = {"submit"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--", "true"});
    EXPECT_THAT(Parse(&o, args), HasSubstr(named)) << flags[1];
  }
}

// `gavel serve` holds its numbers to their bounds: `--seed -1` must not wrap to 2^64-1, nor
// `--round-seconds 1e-9` or `--expected-gpus -3` be accepted.
TEST(ServeCommandLineTest, NumbersOutsideTheirBoundsAreRefusedNamingTheFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--seed", "-1"}, "--seed: `-1` is not an integer in [0, 4294967295]"},
      {{"--round-seconds", "1e-9"}, "--round-seconds: `1e-9` is outside [0.001, 86400] s"},
      {{"--expected-gpus", "-3"}, "--expected-gpus: `-3` is not an integer in [0, 1000000]"},
  };
  for (const auto& [flags, named] : cases) {
    CLI::App app("gavel");
    ServeOptions o;
    AddServeCommand(app, &o);
    std::vector<std::string> args = {"gavel", "serve", "--state", "/nonexistent"};
    args.insert(args.end(), flags.begin(), flags.end());
    std::vector<const char*> argv;
    for (const std::string& arg : args) argv.push_back(arg.c_str());
    std::string error;
    try {
      app.parse(static_cast<int>(argv.size()), argv.data());
    } catch (const CLI::ParseError& e) {
      error = e.what();
    }
    EXPECT_THAT(error, HasSubstr(named)) << flags[0];
  }
}

// A refused `gavel serve` leaves nothing behind (refusals here: a cost policy without prices,
// naming the flag; an unknown policy; a packing policy on Slurm).
TEST(ServeCommandLineTest, ARefusedServeCreatesNoStateDirectory) {
  const std::filesystem::path state =
      std::filesystem::temp_directory_path() /
      ("gavel_refused_serve_" + std::to_string(::getpid())) / "state";
  std::filesystem::remove_all(state.parent_path());
  ServeOptions o;
  o.state_dir = state.string();
  o.listen = "127.0.0.1:0";
  o.policy = "max_sum_throughput_normalized_by_cost_perf";
  std::ostringstream out;
  const Status status = RunServe(o, out);
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("--instance-costs"));
  EXPECT_FALSE(std::filesystem::exists(state.parent_path()));
  o.policy = "no_such_policy";
  EXPECT_FALSE(RunServe(o, out).ok());
  EXPECT_FALSE(std::filesystem::exists(state.parent_path()));
  // Space sharing needs two processes on one device, which Slurm's job steps cannot give:
  // refused before Slurm is asked anything.
  o.policy = "max_min_fairness_packed";
  o.backend = "slurm";
  const Status packed_on_slurm = RunServe(o, out);
  EXPECT_FALSE(packed_on_slurm.ok());
  EXPECT_THAT(packed_on_slurm.message(), HasSubstr("--policy max_min_fairness_packed"));
  EXPECT_THAT(packed_on_slurm.message(), HasSubstr("--backend slurm"));
  EXPECT_FALSE(std::filesystem::exists(state.parent_path()));
}

TEST(JobsCommandLineTest, PagesAreBoundedOnTheCommandLine) {
  ClientCommandOptions o;
  ASSERT_EQ(Parse(&o, {"jobs", "--limit", "25", "--page-token", "117"}), "");
  EXPECT_EQ(o.paging.limit, 25u);
  EXPECT_EQ(o.paging.page_token, "117");
  ClientCommandOptions none;
  ASSERT_EQ(Parse(&none, {"jobs"}), "");
  EXPECT_FALSE(none.paging.limit.has_value());  // every page, fetched one at a time
  for (const char* bad : {"0", "1001", "-1"}) {
    ClientCommandOptions refused;
    EXPECT_THAT(Parse(&refused, {"jobs", "--limit", bad}), HasSubstr("--limit")) << bad;
  }
}

TEST(JobsCommandLineTest, ActiveIsTheDefaultViewAndAllIsItsOpposite) {
  ClientCommandOptions plain;
  ASSERT_EQ(Parse(&plain, {"jobs"}), "");
  EXPECT_EQ(ViewOf(plain.all_jobs, plain.job_ids), JobsView::kActive);
  ClientCommandOptions all;
  ASSERT_EQ(Parse(&all, {"jobs", "--all"}), "");
  EXPECT_EQ(ViewOf(all.all_jobs, all.job_ids), JobsView::kAll);
  ClientCommandOptions named;
  ASSERT_EQ(Parse(&named, {"jobs", "7"}), "");
  EXPECT_EQ(ViewOf(named.all_jobs, named.job_ids), JobsView::kAll);
  ClientCommandOptions both;
  EXPECT_THAT(Parse(&both, {"jobs", "--all", "--active"}), HasSubstr("excludes"));
}

// Which jobs `gavel jobs` lists, against a daemon: by default the queued and running ones
// (Slurm's squeue), with --all every job, and jobs named by id whatever their state.
TEST(JobsViewTest, TheDefaultListsActiveJobsAllListsEveryJobIdsListThoseJobs) {
  daemon::DaemonOptions options;
  options.listen = "127.0.0.1:0";
  options.log_events = false;
  options.core.throughputs = ShippedThroughputTable();
  options.core.round_length = Seconds(60.0);
  options.core.background_solves = false;
  auto started = daemon::Daemon::Start(options, nullptr,
                                       std::make_unique<daemon::FakeAgentTransport>(),
                                       std::make_unique<daemon::MemoryStore>());
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  const std::unique_ptr<daemon::Daemon> scheduler = *std::move(started);
  ClientOptions client;
  client.scheduler = scheduler->address();
  SubmitOptions submit;
  submit.steps = 10;
  submit.command = {"true"};
  for (int i = 0; i < 6; ++i) {
    std::ostringstream ids;
    ASSERT_TRUE(RunSubmit(client, submit, ids).ok());
  }
  std::ostringstream cancelled_out;
  ASSERT_TRUE(RunCancel(client, {2, 5}, cancelled_out).ok());
  const auto listed = [&](std::vector<std::uint64_t> ids, JobsView view) {
    std::ostringstream out;
    const Status status = RunJobs(client, ids, view, "json", out);
    EXPECT_TRUE(status.ok()) << status.ToString();
    std::map<std::uint64_t, std::string> states;
    for (const auto& job : nlohmann::json::parse(out.str())) {
      states[job["id"].get<std::uint64_t>()] = job["state"].get<std::string>();
    }
    return states;
  };
  using States = std::map<std::uint64_t, std::string>;
  EXPECT_EQ(listed({}, ViewOf(false, {})),
            (States{{1, "queued"}, {3, "queued"}, {4, "queued"}, {6, "queued"}}));
  EXPECT_EQ(listed({}, ViewOf(true, {})),
            (States{{1, "queued"}, {2, "cancelled"}, {3, "queued"}, {4, "queued"},
                    {5, "cancelled"}, {6, "queued"}}));
  EXPECT_EQ(listed({2, 3}, ViewOf(false, {2, 3})), (States{{2, "cancelled"}, {3, "queued"}}));
  // The table shows the same rows.
  std::ostringstream table;
  ASSERT_TRUE(RunJobs(client, {}, JobsView::kActive, "table", table).ok());
  const std::string rows = table.str();
  EXPECT_THAT(rows, Not(HasSubstr("cancelled")));
  EXPECT_EQ(std::count(rows.begin(), rows.end(), '\n'), 1 + 4);  // the header and 4 jobs
}

TEST(SubmitCommandLineTest, ExtremeThroughputsAreRefused) {
  // One user's --throughput v100=1e308 once zeroed every job's allocation.
  for (const char* rate : {"1e308", "inf", "nan", "-1", "1e-300"}) {
    SubmitOptions o;
    o.steps = 10;
    o.command = {"true"};
    o.throughputs = {std::string("v100=") + rate};
    const auto spec = SpecFromFlags(o);
    ASSERT_FALSE(spec.ok()) << rate;
    EXPECT_THAT(spec.status().message(), HasSubstr("--throughput v100=")) << rate;
  }
  SubmitOptions ok;
  ok.steps = 10;
  ok.command = {"true"};
  ok.throughputs = {"v100=0", "k80=100000"};
  EXPECT_TRUE(SpecFromFlags(ok).ok());
}

TEST(JobFileTest, NumbersOutsideTheirBoundsNameTheJobAndField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"command": ["x"], "steps": 1e999})", "not JSON"},
      {R"({"command": ["x"], "steps": 18446744073709551615})", "field steps"},
      {R"({"command": ["x"], "steps": 100000000000})", "field steps"},
      {R"({"command": ["x"], "steps": 5, "scale_factor": 4294967297})", "field scale_factor"},
      {R"({"command": ["x"], "steps": 5, "priority_weight": 1e300})", "priority_weight"},
      {R"({"command": ["x"], "steps": 5, "throughputs": {"v100": 1e308}})", "throughputs.v100"},
      // The field's schedulers' keys.
      {R"({"command": ["x"], "steps": 5, "utility": "cubic:1:2"})", "job 0, field utility"},
      {R"({"command": ["x"], "steps": 5, "utility": 3})", "job 0, field utility"},
      {R"({"command": ["x"], "steps": 5, "cpus_per_gpu": -2})", "job 0, field cpus_per_gpu"},
      {R"({"command": ["x"], "steps": 5, "mem_gb_per_gpu": 1e300})", "field mem_gb_per_gpu"},
      {R"({"command": ["x"], "steps": 5, "app": ["a"]})", "job 0, field app"},
  };
  for (const auto& [text, named] : cases) {
    const auto specs = ParseJobFile(text, "jobs.json");
    ASSERT_FALSE(specs.ok()) << text;
    EXPECT_THAT(specs.status().message(), HasSubstr("jobs.json")) << text;
    EXPECT_THAT(specs.status().message(), HasSubstr(named)) << text;
  }
}

// The field's schedulers' inputs: flags and job file keys reach the spec,
// the utility in the trace's text form; bad values name the flag or the job and field.
TEST(SubmitCommandLineTest, AppUtilityAndHostDemandsReachTheSpec) {
  ClientCommandOptions o;
  ASSERT_EQ(Parse(&o, {"submit", "--steps", "5", "--app", "search", "--utility",
                       "sigmoid:4:3600:0.002", "--cpus-per-gpu", "6", "--mem-gb-per-gpu", "30",
                       "--", "true"}),
            "");
  const auto spec = SpecFromFlags(o.submit);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->app(), "search");
  EXPECT_EQ(spec->cpus_per_gpu(), 6.0);
  EXPECT_EQ(spec->mem_gb_per_gpu(), 30.0);
  EXPECT_EQ(spec->utility().family(), wire::JobUtility::SIGMOID);
  EXPECT_EQ(spec->utility().value(), 4.0);
  EXPECT_EQ(spec->utility().time_s(), 3600.0);
  EXPECT_EQ(spec->utility().steepness(), 0.002);

  EXPECT_THAT(Parse(&o, {"submit", "--steps", "5", "--cpus-per-gpu", "-1", "--", "true"}),
              HasSubstr("--cpus-per-gpu"));
  ClientCommandOptions bad;
  ASSERT_EQ(Parse(&bad, {"submit", "--steps", "5", "--utility", "linear:4:-3", "--", "true"}), "");
  const auto refused = SpecFromFlags(bad.submit);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("--utility"));
  EXPECT_THAT(refused.status().message(), HasSubstr("zero_at"));

  const auto specs = ParseJobFile(
      R"({"command": ["x"], "steps": 5, "app": "a", "utility": "linear:2:600", "cpus_per_gpu": 2,
          "mem_gb_per_gpu": 8.5})",
      "jobs.json");
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  EXPECT_EQ((*specs)[0].app(), "a");
  EXPECT_EQ((*specs)[0].utility().family(), wire::JobUtility::LINEAR);
  EXPECT_EQ((*specs)[0].utility().time_s(), 600.0);
  EXPECT_EQ((*specs)[0].mem_gb_per_gpu(), 8.5);
}

// `gavel logs`: launches from two hosts come out in round order (the order they ran in),
// each under its launch line tagged with rank, stream and host.
TEST(LogsTest, LaunchesFromSeveralHostsAreMergedInRoundOrder) {
  wire::GetJobLogsResponse response;
  auto add = [&](const std::string& agent, const std::string& file, std::uint32_t rank,
                 const std::string& stream, const std::string& data, std::uint64_t offset) {
    wire::AgentLogChunk* chunk = response.add_chunks();
    chunk->set_agent_id(agent);
    chunk->mutable_chunk()->set_file(file);
    chunk->mutable_chunk()->set_rank(rank);
    chunk->mutable_chunk()->set_stream(stream);
    chunk->mutable_chunk()->set_data(data);
    chunk->mutable_chunk()->set_offset(offset);
  };
  add("host-a", "job-4.out", 0, "stdout",
      "==== gavel: t1 job 4 round 1 worker 1 (v100, device 0) attempt 0 ====\nfirst\n"
      "==== gavel: t5 job 4 round 12 worker 1 (v100, device 0) attempt 2 ====\nthird\n",
      0);
  add("host-a", "job-4.err", 0, "stderr",
      "==== gavel: t1 job 4 round 1 worker 1 (v100, device 0) attempt 0 ====\noops\n", 0);
  add("host-b", "job-4.out", 0, "stdout",
      "==== gavel: t3 job 4 round 7 worker 5 (k80, device 0) attempt 1 ====\nsecond", 0);
  add("host-c", "job-4.out", 0, "stdout", "tail of a long file\n", 4096);
  const std::string merged = MergeJobLogs(response);
  const std::size_t cut = merged.find("4096 earlier bytes of job-4.out not shown");
  const std::size_t first = merged.find("round 1 worker 1 (v100, device 0) attempt 0 ==== "
                                        "[rank 0 stdout on host-a]\nfirst\n");
  const std::size_t oops = merged.find("[rank 0 stderr on host-a]\noops\n");
  const std::size_t second = merged.find("attempt 1 ==== [rank 0 stdout on host-b]\nsecond\n");
  const std::size_t third = merged.find("attempt 2 ==== [rank 0 stdout on host-a]\nthird\n");
  ASSERT_NE(cut, std::string::npos) << merged;
  ASSERT_NE(first, std::string::npos) << merged;
  ASSERT_NE(oops, std::string::npos) << merged;
  ASSERT_NE(second, std::string::npos) << merged;
  ASSERT_NE(third, std::string::npos) << merged;
  EXPECT_LT(cut, first);  // what came before any launch line of the cut file: first
  EXPECT_LT(first, oops);
  EXPECT_LT(oops, second);
  EXPECT_LT(second, third);
}

// Space sharing: the SHARED column names the job next to it (`with`, or `last` once it runs
// alone) and its measured co-located rate; -o json carries the same fields.
TEST(JobsTableTest, ASharedJobShowsItsPartnerAndColocatedRate) {
  wire::ListJobsResponse jobs;
  wire::JobInfo* job = jobs.add_jobs();
  job->set_id(3);
  job->set_state(wire::RUNNING);
  job->set_gpu_type("v100");
  job->add_worker_ids(0);
  job->set_sharing(true);
  job->set_partner_job_id(4);
  job->set_partner_job_type("A3C");
  job->set_colocated_steps_per_s(6.5);
  job->set_colocated_measurements(2);
  wire::JobInfo* alone = jobs.add_jobs();
  alone->set_id(5);
  alone->set_state(wire::QUEUED);
  alone->set_partner_job_id(6);
  std::ostringstream out;
  PrintJobsTable(jobs, 0, out);
  EXPECT_THAT(out.str(), HasSubstr("SHARED"));
  EXPECT_THAT(out.str(), HasSubstr("with 4 @6.50/s"));
  EXPECT_THAT(out.str(), HasSubstr("last 6"));
  const auto json = nlohmann::json::parse(JobsJson(jobs));
  EXPECT_EQ(json[0]["partner_job_id"], 4);
  EXPECT_EQ(json[0]["partner_job_type"], "A3C");
  EXPECT_EQ(json[0]["sharing"], true);
  EXPECT_DOUBLE_EQ(json[0]["colocated_steps_per_s"].get<double>(), 6.5);
  EXPECT_TRUE(json[1]["colocated_steps_per_s"].is_null());
}

TEST(JobsTableTest, ControlCharactersInNamesCannotForgeRows) {
  wire::ListJobsResponse jobs;
  wire::JobInfo* job = jobs.add_jobs();
  job->set_id(7);
  job->set_name("mine\n8  root  running  \x1b[31mred");
  job->set_user("eve\r");
  job->set_state(wire::QUEUED);
  job->set_message("line1\nline2");
  std::ostringstream out;
  PrintJobsTable(jobs, 0, out);
  const std::string table = out.str();
  // A header and exactly one row, whatever the name holds; no raw ESC or CR reaches the screen.
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 2) << table;
  EXPECT_EQ(table.find('\x1b'), std::string::npos);
  EXPECT_EQ(table.find('\r'), std::string::npos);
  EXPECT_THAT(table, HasSubstr("mine\\n8  root  running  \\x1b[31mred"));
  EXPECT_THAT(table, HasSubstr("eve\\r"));
  EXPECT_THAT(table, HasSubstr("line1\\nline2"));
}

}  // namespace
}  // namespace gavel::cli
