// `gavel simulate` end to end: the binary's exit status, error messages, the JSON result and
// the per-job CSV.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <map>
#include <sstream>
#include <string>

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string Quoted(const std::string& s) { return "'" + s + "'"; }

std::string ReadText(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Ran {
  int exit_code = -1;
  std::string out;
  std::string err;
};

class SimulateCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("gavel_simulate_test_" + std::to_string(::getpid()) + "_" + test->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  Ran Simulate(const std::string& args) const {
    const fs::path out = dir_ / "stdout.txt";
    const fs::path err = dir_ / "stderr.txt";
    const std::string command = "cd " + Quoted(dir_.string()) + " && " + Quoted(GAVEL_BINARY) +
                                " simulate " + args + " >" + Quoted(out.string()) + " 2>" +
                                Quoted(err.string());
    const int status = std::system(command.c_str());
    Ran ran;
    ran.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    ran.out = ReadText(out);
    ran.err = ReadText(err);
    return ran;
  }

  fs::path dir_;
};

TEST_F(SimulateCliTest, WritesTheJsonResultAndTheJobsCsv) {
  const Ran ran = Simulate(
      "-c 2:2:2 -p max_min_fairness_perf --seed 1 -l 20000 -s 2 -e 12 --json - "
      "--jobs-csv jobs.csv");
  ASSERT_EQ(ran.exit_code, 0) << ran.err;
  const nlohmann::json result = nlohmann::json::parse(ran.out);
  for (const char* key : {"average_jct_seconds", "makespan_seconds", "utilization", "rounds",
                          "policy_solves", "wall_seconds"}) {
    EXPECT_TRUE(result.contains(key)) << key;
  }
  EXPECT_GT(result["average_jct_seconds"].get<double>(), 0.0);
  EXPECT_EQ(result["window"]["jobs_completed"].get<int>(), 10);
  EXPECT_EQ(result["compat"], "none");
  const std::string csv = ReadText(dir_ / "jobs.csv");
  EXPECT_THAT(csv, HasSubstr("id,job_type,scale_factor"));
  EXPECT_GE(std::count(csv.begin(), csv.end(), '\n'), 13);
}

// Both solve paths of a policy with a unique optimum for the mechanism to act on (every job
// alone on its fastest type: a static run on a cluster with room for all) give one schedule.
TEST_F(SimulateCliTest, BothSolvePathsRunAndAgreeWhereTheOptimumIsUnique) {
  std::map<std::string, double> makespans;
  for (const std::string solver : {"auto", "clp"}) {
    const Ran ran =
        Simulate("-c 4:4:4 -p max_min_fairness_perf -l 0 -e 3 --json - --solver " + solver);
    ASSERT_EQ(ran.exit_code, 0) << ran.err;
    makespans[solver] = nlohmann::json::parse(ran.out)["makespan_seconds"].get<double>();
  }
  EXPECT_GT(makespans["auto"], 0.0);
  EXPECT_NEAR(makespans["auto"], makespans["clp"], 1e-9 * makespans["clp"]);
}

// The cluster physics: --compat gavel ignores it (the result is the original's to the last
// digit), and without compat --realistic makes restarts happen and JCT grow.
TEST_F(SimulateCliTest, PhysicsIsIgnoredUnderCompatAndOffByDefault) {
  const std::string run = "-c 2:2:2 -p max_min_fairness_perf --seed 2 -l 0 -e 12 --json - ";
  const auto without_timing = [](nlohmann::json j) {
    j.erase("wall_seconds");
    j.erase("policy_solve_seconds");
    return j;
  };
  const std::string single = run + "--compat gavel";
  const Ran compat = Simulate(single);
  const Ran compat_realistic = Simulate(single + " --realistic --servers-per-rack 1");
  ASSERT_EQ(compat.exit_code, 0) << compat.err;
  ASSERT_EQ(compat_realistic.exit_code, 0) << compat_realistic.err;
  EXPECT_THAT(compat_realistic.err, HasSubstr("physics flags are ignored"));
  EXPECT_EQ(without_timing(nlohmann::json::parse(compat.out)),
            without_timing(nlohmann::json::parse(compat_realistic.out)));

  const Ran plain = Simulate(run);
  const Ran none = Simulate(run + "--placement-penalty none --restart-overhead none --failures none");
  const Ran restarts = Simulate(run + "--restart-overhead 120 --placement-penalty default");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(none.exit_code, 0) << none.err;
  ASSERT_EQ(restarts.exit_code, 0) << restarts.err;
  const nlohmann::json p = nlohmann::json::parse(plain.out);
  EXPECT_EQ(without_timing(p), without_timing(nlohmann::json::parse(none.out)));
  EXPECT_EQ(p["restarts"].get<int>(), 0);
  const nlohmann::json r = nlohmann::json::parse(restarts.out);
  EXPECT_GT(r["restarts"].get<int>(), 0);
  EXPECT_GT(r["restart_overhead_gpu_seconds"].get<double>(), 0.0);
  EXPECT_GT(r["average_jct_seconds"].get<double>(), p["average_jct_seconds"].get<double>());
  EXPECT_TRUE(r.contains("jct_by_size"));

  const Ran bad = Simulate(run + "--placement-penalty /nonexistent.csv");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.err, HasSubstr("--placement-penalty: /nonexistent.csv"));
}

// --restart-aware weighs each job's restart overhead: it needs one, and with free restarts
// (an overhead of 0 s) it changes no decision.
TEST_F(SimulateCliTest, RestartAwareNeedsAnOverheadAndFreeRestartsChangeNothing) {
  const std::string run = "-c 4:4:4 -p max_min_fairness_perf --seed 3 --jobs-per-hour 1 "
                          "-e 12 --json - ";
  const Ran alone = Simulate(run + "--restart-aware");
  EXPECT_NE(alone.exit_code, 0);
  EXPECT_THAT(alone.err, HasSubstr("--restart-aware: needs a restart overhead"));
  const auto without_timing = [](nlohmann::json j) {
    j.erase("wall_seconds");
    j.erase("policy_solve_seconds");
    return j;
  };
  const Ran free = Simulate(run + "--restart-overhead 0");
  const Ran free_aware = Simulate(run + "--restart-overhead 0 --restart-aware");
  ASSERT_EQ(free.exit_code, 0) << free.err;
  ASSERT_EQ(free_aware.exit_code, 0) << free_aware.err;
  EXPECT_EQ(without_timing(nlohmann::json::parse(free.out)),
            without_timing(nlohmann::json::parse(free_aware.out)));
  const Ran costly = Simulate(run + "--restart-overhead 300 --restart-aware");
  ASSERT_EQ(costly.exit_code, 0) << costly.err;
  EXPECT_GT(nlohmann::json::parse(costly.out)["restarts"].get<int>(), 0);
}

TEST_F(SimulateCliTest, StaticRunReportsItsMakespanInTheSummary) {
  const Ran ran = Simulate("-c 2:2:2 -p fifo_perf -l 0 -e 8 --compat gavel");
  ASSERT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_THAT(ran.out, HasSubstr("Total duration: "));
  EXPECT_THAT(ran.out, HasSubstr("Average job completion time: "));
  EXPECT_THAT(ran.out, HasSubstr("compat gavel"));
}

TEST_F(SimulateCliTest, BadInputFailsWithAClearMessage) {
  struct Case {
    const char* args;
    const char* message;
  };
  for (const Case& c : {
           Case{"-c 2:2 -p fifo -l 100", "--cluster"},
           Case{"-c 2:x:2 -p fifo -l 100", "--cluster: \"x\" is not a number"},
           Case{"-p no_such_policy -l 100", "unknown policy"},
           Case{"-p fifo", "exactly one of --lam"},
           Case{"-p fifo -l 100 --jobs-per-hour 3", "exactly one of --lam"},
           Case{"-p fifo -l -5", "--lam"},
           Case{"-p fifo -l 100 -s 10 -e 10", "holds no job"},
           Case{"-p fifo -l 100 --compat nonsense", "unknown compat switch"},
           Case{"-p fifo --trace no_such_file.trace", "no_such_file.trace"},
           Case{"-p fifo -l 100 --throughputs missing.json", "missing.json"},
           Case{"-p max_sum_throughput_normalized_by_cost_perf -l 100 -e 5", "prices"},
           Case{"-p fifo -l 100 --solver glpk", "--solver"},
           // Bounds (docs/formats.md): these once wrapped or were accepted.
           Case{"-p fifo -l 100 --seed -1", "--seed: `-1` is not an integer in [0, 4294967295]"},
           Case{"-p fifo -l 100 -i 1e-9", "--round-seconds: `1e-9` is outside [0.001, 86400]"},
           Case{"-p fifo --jobs-per-hour nan", "--jobs-per-hour"},
           Case{"-p fifo -l 1e300", "--lam"},
           Case{"-p fifo -l 100 --time-limit inf", "--time-limit"},
           Case{"-c 2000000:1:1 -p fifo -l 100", "--cluster"},
           Case{"-p max_min_fairness_packed -l 100 --profiling-percentage 1.5",
                "--profiling-percentage must be in [0, 1]"},
           Case{"-p max_min_fairness_packed -l 100 --num-reference-models 0",
                "--num-reference-models must be in [1, 26]"},
       }) {
    SCOPED_TRACE(c.args);
    const Ran ran = Simulate(c.args);
    EXPECT_NE(ran.exit_code, 0);
    EXPECT_THAT(ran.err, HasSubstr(c.message));
  }
}

TEST_F(SimulateCliTest, RunsATraceFile) {
  std::ofstream(dir_ / "small.trace")
      << "A3C\tpython3 main.py\trl\t--max-steps\t0\t5000\t1\t1\t-1.000000\t0.000000\n"
         "LM (batch size 20)\tpython main.py\tlanguage_modeling\t--steps\t1\t90000\t1\t1"
         "\t-1.000000\t120.000000\n";
  const Ran ran = Simulate("-c 1:1:0 -p max_min_fairness_perf --trace small.trace --json out.json");
  ASSERT_EQ(ran.exit_code, 0) << ran.err;
  const nlohmann::json result = nlohmann::json::parse(ReadText(dir_ / "out.json"));
  EXPECT_EQ(result["window"]["jobs_completed"].get<int>(), 2);
  EXPECT_EQ(result["window"]["end"].get<int>(), 2);
}

// --workload philly end to end: same seed, same jobs and schedule; another seed, other jobs.
TEST_F(SimulateCliTest, PhillyWorkloadIsReproducibleFromTheSeed) {
  const std::string args = "-c 64:0:0 -p max_min_fairness --workload philly --jobs-per-hour 1 "
                           "-e 20 --jobs-csv - --seed ";
  const Ran a = Simulate(args + "2");
  const Ran b = Simulate(args + "2");
  const Ran c = Simulate(args + "3");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out, c.out);
  EXPECT_GE(std::count(a.out.begin(), a.out.end(), '\n'), 21);
  const Ran bad = Simulate("-p fifo --workload philly -l 60 --diurnal-amplitude 1");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.err, HasSubstr("--diurnal-amplitude"));
}

// A public trace imports, runs, and says what it skipped; a bad row names file, line, field.
TEST_F(SimulateCliTest, ImportsAPublicTraceAndReportsSkippedRows) {
  const std::string helios =
      std::string(GAVEL_SOURCE_DIR) + "/src/gavel/workload/testdata/helios_cluster_log.csv";
  const Ran ran = Simulate("-p fifo --trace-format helios --trace " + Quoted(helios) +
                           " --json out.json");
  ASSERT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_THAT(ran.out, HasSubstr("imported 4 of 6 jobs; skipped 1 without GPUs"));
  const nlohmann::json result = nlohmann::json::parse(ReadText(dir_ / "out.json"));
  EXPECT_EQ(result["window"]["jobs_completed"].get<int>(), 4);

  std::ofstream(dir_ / "bad.csv")
      << "job_id,gpu_num,state,submit_time,start_time,end_time\n"
         "1,1,COMPLETED,2020-01-01 00:00:00,2020-01-01 00:00:00,2020-01-01 01:00:00\n"
         "2,1,COMPLETED,2020-01-01 00:00:00,2020-01-01 00:00:00,2020-13-01 01:00:00\n";
  const Ran strict = Simulate("-p fifo --trace-format helios --trace bad.csv");
  EXPECT_NE(strict.exit_code, 0);
  EXPECT_THAT(strict.err, HasSubstr("bad.csv:3: end_time: '2020-13-01 01:00:00'"));
  const Ran lenient =
      Simulate("-p fifo --trace-format helios --trace bad.csv --skip-bad-rows --json -");
  ASSERT_EQ(lenient.exit_code, 0) << lenient.err;
  EXPECT_THAT(lenient.err, HasSubstr("imported 1 of 2 jobs; skipped 1 unreadable"));
  EXPECT_EQ(nlohmann::json::parse(lenient.out)["window"]["jobs_completed"].get<int>(), 1);
}

}  // namespace
