// Trace readers and writers: the original's own files (physical-cluster and msr traces, the
// reference-run traces) parse, our writer reproduces the original's bytes, round trips are
// lossless, and every malformed input is reported with its file, line and column.
#include "gavel/workload/trace_io.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace gavel::workload {
namespace {

const std::string kSharedDir = std::string(GAVEL_SOURCE_DIR) + "/../shared/";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::vector<TraceJob> SampleJobs() {
  std::vector<TraceJob> jobs(3);
  jobs[0].job_type = "ResNet-18 (batch size 64)";
  jobs[0].command = "python3 main.py --data_dir=%s/cifar10 --batch_size 64";
  jobs[0].working_directory = "image_classification/cifar10";
  jobs[0].num_steps_arg = "--num_steps";
  jobs[0].total_steps = 1646636.0;
  jobs[1].job_type = "A3C";
  jobs[1].command = "python3 main.py --env PongDeterministic-v4 --workers 4 --amsgrad True";
  jobs[1].working_directory = "rl";
  jobs[1].num_steps_arg = "--max-steps";
  jobs[1].needs_data_dir = false;
  jobs[1].total_steps = 4000.0;
  jobs[1].scale_factor = 4;
  jobs[1].priority_weight = 5.0;
  jobs[1].slo_multiplier = 1.2;
  jobs[1].arrival_time = Seconds(978.344291641206);
  jobs[2].job_type = "LM (batch size 20)";
  jobs[2].command = "python main.py --cuda --data %s/wikitext2 --batch_size 20";
  jobs[2].working_directory = "language_modeling";
  jobs[2].num_steps_arg = "--steps";
  jobs[2].total_steps = 12.0;
  jobs[2].arrival_time = Seconds(978.344291641206);
  return jobs;
}

TEST(TraceIoTest, GavelWriterFormatsLikeTheOriginal) {
  // '%s\t%f\n' % (str(job), arrival) with str(job) = ...%d...%d...%d...%d...%f (the
  // original's scheduler/job.py).
  auto text = FormatTrace(SampleJobs(), TraceFormat::kGavel);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text,
            "ResNet-18 (batch size 64)\tpython3 main.py --data_dir=%s/cifar10 --batch_size 64\t"
            "image_classification/cifar10\t--num_steps\t1\t1646636\t1\t1\t-1.000000\t0.000000\n"
            "A3C\tpython3 main.py --env PongDeterministic-v4 --workers 4 --amsgrad True\trl\t"
            "--max-steps\t0\t4000\t4\t5\t1.200000\t978.344292\n"
            "LM (batch size 20)\tpython main.py --cuda --data %s/wikitext2 --batch_size 20\t"
            "language_modeling\t--steps\t1\t12\t1\t1\t-1.000000\t978.344292\n");
  // Fractional steps and priorities are truncated like Python's %d.
  TraceJob job = SampleJobs()[0];
  job.total_steps = 343170.96864225325;
  job.priority_weight = 2.9;
  EXPECT_NE(FormatGavelJob(job).find("\t343170\t1\t2\t-1.000000"), std::string::npos);
}

TEST(TraceIoTest, RoundTripGavelAndCsv) {
  const std::vector<TraceJob> jobs = SampleJobs();
  // kGavel keeps what its columns can hold: integral steps and weights, 6-decimal arrivals.
  auto gavel_text = FormatTrace(jobs, TraceFormat::kGavel);
  ASSERT_TRUE(gavel_text.ok());
  auto gavel_back = ParseTrace(*gavel_text, TraceFormat::kGavel, "mem.trace");
  ASSERT_TRUE(gavel_back.ok()) << gavel_back.status().ToString();
  ASSERT_EQ(gavel_back->size(), jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    TraceJob want = jobs[i];
    want.arrival_time = (*gavel_back)[i].arrival_time;
    EXPECT_NEAR((*gavel_back)[i].arrival_time.value(), jobs[i].arrival_time.value(), 5e-7);
    EXPECT_EQ((*gavel_back)[i], want) << i;
  }
  // kCsv is lossless, fractional steps, durations and awkward characters included.
  std::vector<TraceJob> rich = jobs;
  rich[0].total_steps = 1646636.2758419;
  rich[0].duration = Seconds(68344.35010595087);
  rich[0].command = "sh -c \"echo a, b\"";
  rich[1].working_directory = " padded dir ";
  const std::string path =
      (std::filesystem::temp_directory_path() / "gavel_trace_io_test.csv").string();
  ASSERT_TRUE(WriteTraceFile(path, rich, TraceFormat::kCsv).ok());
  auto csv_back = ReadTraceFile(path, TraceFormat::kCsv);
  std::filesystem::remove(path);
  ASSERT_TRUE(csv_back.ok()) << csv_back.status().ToString();
  EXPECT_EQ(*csv_back, rich);
}

TEST(TraceIoTest, CsvColumnsMayComeInAnyOrderAndOptionalOnesMayBeMissing) {
  auto jobs = ParseTrace(
      "arrival_time,job_type,total_steps,scale_factor,slo\n"
      "0,A3C,100,1,\n"
      "\n"
      "2.5,\"CycleGAN\",1e3,2,1.5\r\n",
      TraceFormat::kCsv, "mine.csv");
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[1].job_type, "CycleGAN");
  EXPECT_EQ((*jobs)[1].total_steps, 1000.0);
  EXPECT_EQ((*jobs)[1].scale_factor, 2);
  EXPECT_EQ((*jobs)[1].slo_multiplier, 1.5);
  EXPECT_EQ((*jobs)[1].arrival_time, Seconds(2.5));
  EXPECT_FALSE((*jobs)[0].slo_multiplier.has_value());
  EXPECT_EQ((*jobs)[0].priority_weight, 1.0);
}

// The simulator's host demands per GPU (docs/simulator.md) are optional read-only columns.
TEST(TraceIoTest, CsvMayGiveHostDemandsPerGpu) {
  auto jobs = ParseTrace(
      "job_type,scale_factor,total_steps,arrival_time,cpus_per_gpu,mem_gb_per_gpu\n"
      "A3C,1,100,0,12,\n"
      "LM (batch size 5),1,100,0,,6.5\n",
      TraceFormat::kCsv, "demands.csv");
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  EXPECT_EQ((*jobs)[0].cpus_per_gpu, 12.0);
  EXPECT_FALSE((*jobs)[0].mem_gb_per_gpu.has_value());
  EXPECT_FALSE((*jobs)[1].cpus_per_gpu.has_value());
  EXPECT_EQ((*jobs)[1].mem_gb_per_gpu, 6.5);
  auto bad = ParseTrace("job_type,scale_factor,total_steps,arrival_time,cpus_per_gpu\n"
                        "A3C,1,100,0,-1\n",
                        TraceFormat::kCsv, "demands.csv");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("cpus_per_gpu"), std::string::npos);
}

// Themis' app ids: an optional integer column, read, written back, checked.
TEST(TraceIoTest, CsvMayGroupJobsIntoApps) {
  auto jobs = ParseTrace(
      "job_type,scale_factor,total_steps,arrival_time,app\n"
      "A3C,1,100,0,7\n"
      "A3C,1,100,0,\n"
      "A3C,1,50,1,7\n",
      TraceFormat::kCsv, "apps.csv");
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  EXPECT_EQ((*jobs)[0].app, 7);
  EXPECT_FALSE((*jobs)[1].app.has_value());
  EXPECT_EQ((*jobs)[2].app, 7);
  const Result<std::string> text = FormatTrace(*jobs, TraceFormat::kCsv);
  ASSERT_TRUE(text.ok());
  const auto back = ParseTrace(*text, TraceFormat::kCsv, "again.csv");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, *jobs);
  for (const char* bad_id : {"-1", "x", "1.5", "2000000000"}) {
    auto bad = ParseTrace(std::string("job_type,scale_factor,total_steps,arrival_time,app\n"
                                      "A3C,1,100,0,") + bad_id + "\n",
                          TraceFormat::kCsv, "apps.csv");
    ASSERT_FALSE(bad.ok()) << bad_id;
    EXPECT_NE(bad.status().message().find("app"), std::string::npos) << bad_id;
  }
}

// The optional columns (host demands, planned outcomes) are written when a job has them and
// read back to the same jobs; a plain trace keeps the plain header.
TEST(TraceIoTest, CsvCarriesDemandsAndPlannedOutcomesBothWays) {
  std::vector<TraceJob> jobs = SampleJobs();
  const Result<std::string> plain = FormatTrace(jobs, TraceFormat::kCsv);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->find("cpus_per_gpu"), std::string::npos);
  EXPECT_EQ(plain->find("outcome"), std::string::npos);
  jobs[0].cpus_per_gpu = 6.0;
  jobs[1].mem_gb_per_gpu = 0.5;
  jobs[1].outcome = JobOutcome{OutcomeKind::kInfrastructureFailure, 0.375};
  jobs[2].outcome = JobOutcome{};
  const Result<std::string> text = FormatTrace(jobs, TraceFormat::kCsv);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  const Result<std::vector<TraceJob>> back = ParseTrace(*text, TraceFormat::kCsv, "out.csv");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, jobs);
  // Bad cells name the line and column.
  for (const auto& [row, column] : std::vector<std::pair<std::string, std::string>>{
           {"A3C,1,9,0,crashed,0.5", "outcome"},
           {"A3C,1,9,0,killed,0", "outcome_at_progress"},
           {"A3C,1,9,0,killed,1.5", "outcome_at_progress"},
           {"A3C,1,9,0,,0.5", "outcome_at_progress"}}) {
    const auto bad = ParseTrace(
        "job_type,scale_factor,total_steps,arrival_time,outcome,outcome_at_progress\n" + row + "\n",
        TraceFormat::kCsv, "o.csv");
    ASSERT_FALSE(bad.ok()) << row;
    EXPECT_NE(bad.status().message().find("o.csv:2"), std::string::npos) << bad.status().message();
    EXPECT_NE(bad.status().message().find(column), std::string::npos) << bad.status().message();
  }
  const auto huge = ParseTrace("job_type,scale_factor,total_steps,arrival_time,cpus_per_gpu\n"
                               "A3C,1,100,0,1e300\n",
                               TraceFormat::kCsv, "demands.csv");
  EXPECT_FALSE(huge.ok());
}

// Elastic ranges, scaling curves and utilities (core/elastic.h, core/utility.h) are optional
// columns too: written when a job has them, read back to the same jobs, bad cells named.
TEST(TraceIoTest, CsvCarriesElasticRangesAndUtilitiesBothWays) {
  std::vector<TraceJob> jobs = SampleJobs();
  const Result<std::string> plain = FormatTrace(jobs, TraceFormat::kCsv);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->find("min_workers"), std::string::npos);
  EXPECT_EQ(plain->find("utility"), std::string::npos);
  jobs[0].elastic = ElasticSpec{1, 2 * jobs[0].scale_factor, {{1, 1.0}, {2, 1.75}, {8, 5.5}}};
  jobs[1].elastic = ElasticSpec{jobs[1].scale_factor, jobs[1].scale_factor + 3, {}};
  jobs[1].utility = UtilityFunction{UtilityFamily::kSigmoid, 12.5, 7200.0, 1.0 / 3600.0};
  jobs[2].utility = UtilityFunction{UtilityFamily::kLinear, 3.0, 86400.0, 1.0};
  const Result<std::string> text = FormatTrace(jobs, TraceFormat::kCsv);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  const Result<std::vector<TraceJob>> back = ParseTrace(*text, TraceFormat::kCsv, "out.csv");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, jobs);
  const std::string header =
      "job_type,scale_factor,total_steps,arrival_time,min_workers,max_workers,scaling,utility\n";
  for (const auto& [row, column] : std::vector<std::pair<std::string, std::string>>{
           {"A3C,2,9,0,3,4,,", "min_workers"},          // above the scale factor
           {"A3C,2,9,0,1,1,,", "max_workers"},          // below it
           {"A3C,2,9,0,1,,,", "max_workers"},           // one without the other
           {"A3C,2,9,0,,,1:1,", "scaling"},             // a curve without a range
           {"A3C,2,9,0,1,4,2:1;1:2,", "scaling"},       // workers not increasing
           {"A3C,2,9,0,1,4,1:0,", "scaling"},           // speedup not > 0
           {"A3C,2,9,0,,,,cubic:1:2", "utility"},       // unknown family
           {"A3C,2,9,0,,,,sigmoid:1:2", "utility"},     // a number missing
           {"A3C,2,9,0,,,,linear:1:-5", "utility"}}) {  // not > 0
    const auto bad = ParseTrace(header + row + "\n", TraceFormat::kCsv, "e.csv");
    ASSERT_FALSE(bad.ok()) << row;
    EXPECT_NE(bad.status().message().find("e.csv:2"), std::string::npos) << bad.status().message();
    EXPECT_NE(bad.status().message().find(column), std::string::npos) << bad.status().message();
  }
}

TEST(TraceIoTest, ReadsTheOriginalsPhysicalClusterTraces) {
  const std::string dir = kSharedDir + "data/traces/physical_cluster/";
  if (!std::filesystem::exists(dir)) {
    GTEST_SKIP() << "shared data not found: " << dir;
  }
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".trace") continue;
    ++files;
    auto jobs = ReadTraceFile(entry.path().string(), TraceFormat::kGavel);
    ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
    EXPECT_FALSE(jobs->empty()) << entry.path();
    // These files were written by hand (arrival "0", not "%f"), so compare parsed values.
    auto text = FormatTrace(*jobs, TraceFormat::kGavel);
    ASSERT_TRUE(text.ok());
    auto again = ParseTrace(*text, TraceFormat::kGavel, "rewritten");
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, *jobs) << entry.path();
  }
  EXPECT_GE(files, 3);
  auto artifact = ReadTraceFile(dir + "artifact_evaluation.trace", TraceFormat::kGavel);
  ASSERT_TRUE(artifact.ok());
  EXPECT_EQ(artifact->size(), 15u);
  auto makespan = ReadTraceFile(dir + "minimize_makespan.trace", TraceFormat::kGavel);
  ASSERT_TRUE(makespan.ok());
  EXPECT_EQ(makespan->size(), 100u);
  for (const TraceJob& job : *makespan) EXPECT_EQ(job.arrival_time, Seconds(0.0));
}

TEST(TraceIoTest, ReferenceRunTracesRoundTripByteForByte) {
  const std::string path = kSharedDir + "reference-runs/cont_c8-8-8_lam3600_seed0_s200_e400.trace";
  if (!std::filesystem::exists(path)) {
    GTEST_SKIP() << "reference run not found: " << path;
  }
  auto jobs = ReadTraceFile(path, TraceFormat::kGavel);
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  EXPECT_EQ(jobs->size(), 973u);  // num_jobs_generated in the run's summary.json
  EXPECT_EQ((*jobs)[1].job_type, "Transformer (batch size 16)");
  EXPECT_EQ((*jobs)[1].total_steps, 343170.0);
  EXPECT_EQ((*jobs)[1].arrival_time, Seconds(978.344292));
  EXPECT_FALSE((*jobs)[1].slo_multiplier.has_value());
  EXPECT_FALSE((*jobs)[1].duration.has_value());
  auto text = FormatTrace(*jobs, TraceFormat::kGavel);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, ReadFile(path));
}

TEST(TraceIoTest, ReadsLegacyMsrTraces) {
  const std::string dir = kSharedDir + "data/traces/msr/";
  if (!std::filesystem::exists(dir)) {
    GTEST_SKIP() << "shared data not found: " << dir;
  }
  int files = 0;
  std::size_t total = 0;
  for (const auto& seed_dir : std::filesystem::directory_iterator(dir)) {
    if (!seed_dir.is_directory()) continue;
    for (const auto& entry : std::filesystem::directory_iterator(seed_dir)) {
      if (entry.path().extension() != ".trace") continue;
      ++files;
      auto jobs = ReadTraceFile(entry.path().string(), TraceFormat::kMsrLegacy);
      ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
      total += jobs->size();
    }
  }
  EXPECT_EQ(files, 75);      // 15 virtual clusters x 5 seeds (shared/data/README.md)
  EXPECT_EQ(total, 76320u);  // every row (none has scale factor 0); `cat */*.trace | wc -l`
  auto first = ReadTraceFile(dir + "seed=0/0e4a51.trace", TraceFormat::kMsrLegacy);
  ASSERT_TRUE(first.ok());
  // head -1 seed=0/0e4a51.trace: Transformer (batch size 128) <tab> cd %s/... <tab> -step
  // <tab> 1 <tab> 95121 <tab> 0.000000 <tab> 1
  EXPECT_EQ((*first)[0].job_type, "Transformer (batch size 128)");
  EXPECT_EQ((*first)[0].num_steps_arg, "-step");
  EXPECT_EQ((*first)[0].total_steps, 95121.0);
  EXPECT_EQ((*first)[0].scale_factor, 1);
  EXPECT_TRUE((*first)[0].working_directory.empty());
}

TEST(TraceIoTest, LegacyRowsWithScaleFactorZeroAreSkipped) {
  auto jobs = ParseTrace(
      "A3C\tcd %s && python3 main.py\t--max-steps\t0\t100\t0.5\t1\n"
      "A3C\tcd %s && python3 main.py\t--max-steps\t0\t100\t1.5\t0\n"
      "LM (batch size 5)\tcd %s && python main.py\t--steps\t1\t7\t2.0\t2\n",
      TraceFormat::kMsrLegacy, "old.trace");
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[1].job_type, "LM (batch size 5)");
  EXPECT_EQ((*jobs)[1].scale_factor, 2);
  EXPECT_EQ((*jobs)[1].arrival_time, Seconds(2.0));
  EXPECT_FALSE(FormatTrace(*jobs, TraceFormat::kMsrLegacy).ok());  // read-only format
}

struct MalformedCase {
  const char* name;
  TraceFormat format;
  std::string text;
  const char* expected;  // a substring of the error message
};

TEST(TraceIoTest, MalformedInputNamesFileLineAndColumn) {
  const char* good = "A3C\tcmd\trl\t--max-steps\t0\t100\t1\t1\t-1.000000\t0.000000\n";
  const std::string g(good);
  const std::vector<MalformedCase> cases = {
      {"too few columns", TraceFormat::kGavel, "A3C\tcmd\trl\n",
       "t.trace:1: expected 10 tab-separated columns"},
      {"steps not an int", TraceFormat::kGavel, "A3C\tcmd\trl\t--max-steps\t0\t12.5\t1\t1\t-1\t0\n",
       "t.trace:1: total_steps: '12.5'"},
      {"zero scale factor", TraceFormat::kGavel, "A3C\tcmd\trl\t--max-steps\t0\t100\t0\t1\t-1\t0\n",
       "t.trace:1: scale_factor"},
      {"bad needs_data_dir", TraceFormat::kGavel,
       "A3C\tcmd\trl\t--max-steps\tyes\t100\t1\t1\t-1\t0\n", "t.trace:1: needs_data_dir"},
      {"bad priority", TraceFormat::kGavel, "A3C\tcmd\trl\t--max-steps\t0\t100\t1\tx\t-1\t0\n",
       "t.trace:1: priority_weight: 'x'"},
      {"bad SLO", TraceFormat::kGavel, "A3C\tcmd\trl\t--max-steps\t0\t100\t1\t1\tnan\t0\n",
       "t.trace:1: SLO: 'nan'"},
      {"bad arrival on line 3", TraceFormat::kGavel,
       g + "\n" + "A3C\tcmd\trl\t--max-steps\t0\t100\t1\t1\t-1\t12abc\n",
       "t.trace:3: arrival_time: '12abc'"},
      {"negative arrival", TraceFormat::kGavel, "A3C\tcmd\trl\t--max-steps\t0\t100\t1\t1\t-1\t-3\n",
       "t.trace:1: arrival_time: -3 is outside [0, 1e+09] s"},
      {"arrivals out of order", TraceFormat::kGavel,
       "A3C\tcmd\trl\t--max-steps\t0\t100\t1\t1\t-1\t50\n"
       "A3C\tcmd\trl\t--max-steps\t0\t100\t1\t1\t-1\t49.5\n",
       "t.trace:2: arrival_time: 49.5 is earlier than the previous job's arrival time 50"},
      {"msr column count", TraceFormat::kMsrLegacy, g,
       "t.trace:1: expected 7 tab-separated columns"},
      {"msr negative scale factor", TraceFormat::kMsrLegacy,
       "A3C\tcmd\t--max-steps\t0\t100\t0.0\t-1\n", "t.trace:1: scale_factor: '-1'"},
      {"csv unknown column", TraceFormat::kCsv, "job_type,gpus\n", "t.trace:1: gpus: unknown"},
      {"csv missing required", TraceFormat::kCsv, "job_type,scale_factor,arrival_time\n",
       "t.trace:1: total_steps: required column missing"},
      {"csv wrong field count", TraceFormat::kCsv,
       "job_type,scale_factor,total_steps,arrival_time\nA3C,1,100\n",
       "t.trace:2: expected 4 comma-separated columns"},
      {"csv bad number", TraceFormat::kCsv,
       "job_type,scale_factor,total_steps,arrival_time\nA3C,1,-100,0\n",
       "t.trace:2: total_steps: '-100' is not > 0"},
      {"csv unterminated quote", TraceFormat::kCsv,
       "job_type,scale_factor,total_steps,arrival_time\n\"A3C,1,100,0\n",
       "t.trace:2: unterminated quoted field"},
      {"csv empty", TraceFormat::kCsv, "", "t.trace: empty CSV trace"},
      // Bounds (docs/formats.md): a job of 1e18 steps would run without end, an arrival of
      // 1e300 was once dropped silently with exit 0.
      {"steps beyond the bound", TraceFormat::kGavel,
       "A3C\tcmd\trl\t--max-steps\t0\t1000000000000000000\t1\t1\t-1\t0\n",
       "t.trace:1: total_steps: 1e+18 is outside [0, 1e+10]"},
      {"steps beyond int64", TraceFormat::kGavel,
       "A3C\tcmd\trl\t--max-steps\t0\t99999999999999999999\t1\t1\t-1\t0\n",
       "t.trace:1: total_steps: '99999999999999999999' is not an integer"},
      {"arrival beyond the bound", TraceFormat::kGavel,
       "A3C\tcmd\trl\t--max-steps\t0\t100\t1\t1\t-1\t1e300\n",
       "t.trace:1: arrival_time: 1.0000000000000001e+300 is outside [0, 1e+09] s"},
      {"msr arrival beyond the bound", TraceFormat::kMsrLegacy,
       "A3C\tcmd\t--max-steps\t0\t100\t2e9\t1\n", "t.trace:1: arrival_time: 2000000000"},
      {"priority beyond the bound", TraceFormat::kGavel,
       "A3C\tcmd\trl\t--max-steps\t0\t100\t1\t1e7\t-1\t0\n",
       "t.trace:1: priority_weight: 10000000 is outside"},
      {"huge scale factor", TraceFormat::kGavel,
       "A3C\tcmd\trl\t--max-steps\t0\t100\t2000000\t1\t-1\t0\n",
       "t.trace:1: scale_factor: '2000000' is not a GPU count in [1, 1000000]"},
      {"csv steps beyond the bound", TraceFormat::kCsv,
       "job_type,scale_factor,total_steps,arrival_time\nA3C,1,1e18,0\n",
       "t.trace:2: total_steps: 1e+18 is outside"},
      {"csv duration beyond the bound", TraceFormat::kCsv,
       "job_type,scale_factor,total_steps,arrival_time,duration\nA3C,1,10,0,1e300\n",
       "t.trace:2: duration: 1.0000000000000001e+300 is outside"},
      {"csv slo beyond the bound", TraceFormat::kCsv,
       "job_type,scale_factor,total_steps,arrival_time,slo\nA3C,1,10,0,1e12\n",
       "t.trace:2: slo: 1000000000000 is outside"},
  };
  for (const MalformedCase& c : cases) {
    auto jobs = ParseTrace(c.text, c.format, "t.trace");
    ASSERT_FALSE(jobs.ok()) << c.name;
    EXPECT_EQ(jobs.status().code(), StatusCode::kInvalidArgument) << c.name;
    EXPECT_NE(jobs.status().message().find(c.expected), std::string::npos)
        << c.name << ": " << jobs.status().message();
  }
}

TEST(TraceIoTest, AZeroSloMultiplierConvertsToCsvAndBack) {
  // Found by trace_gavel_fuzz: the gavel format keeps an SLO of 0 or -0 (only negative values
  // mean none, as in the original), which the CSV writer wrote and its reader then refused.
  const std::string text =
      "A3C\tcmd\trl\t--max-steps\t0\t10\t1\t1\t-0.000000\t0.000000\n"
      "A3C\tcmd\trl\t--max-steps\t0\t10\t1\t1\t0\t1.000000\n";
  auto jobs = ParseTrace(text, TraceFormat::kGavel, "t.trace");
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  ASSERT_TRUE((*jobs)[0].slo_multiplier.has_value());
  auto csv = FormatTrace(*jobs, TraceFormat::kCsv);
  ASSERT_TRUE(csv.ok()) << csv.status().ToString();
  auto again = ParseTrace(*csv, TraceFormat::kCsv, "t.csv");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  ASSERT_EQ(again->size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    ASSERT_TRUE((*again)[i].slo_multiplier.has_value());
    EXPECT_EQ(*(*again)[i].slo_multiplier, 0.0);
  }
  auto negative = ParseTrace("job_type,scale_factor,total_steps,arrival_time,slo\nA,1,1,0,-1\n",
                             TraceFormat::kCsv, "t.csv");
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("t.csv:2: slo: -1 is outside [0, 1e+09]"),
            std::string::npos);
}

TEST(TraceIoTest, ValuesAtTheBoundsAreAccepted) {
  // The largest documented values must still parse (the bounds are inclusive).
  auto jobs = ParseTrace("A3C\tcmd\trl\t--max-steps\t0\t10000000000\t1000000\t1000000\t-1\t"
                         "1000000000\n",
                         TraceFormat::kGavel, "t.trace");
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].total_steps, 1e10);
  EXPECT_EQ((*jobs)[0].arrival_time.value(), 1e9);
  EXPECT_EQ((*jobs)[0].scale_factor, 1'000'000);
}

TEST(TraceIoTest, FileErrorsAndUnwritableJobs) {
  auto missing = ReadTraceFile("/nonexistent/dir/x.trace", TraceFormat::kGavel);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kIoError);
  EXPECT_NE(missing.status().message().find("/nonexistent/dir/x.trace"), std::string::npos);

  std::vector<TraceJob> jobs = SampleJobs();
  jobs[1].command = "a\tb";
  EXPECT_FALSE(FormatTrace(jobs, TraceFormat::kGavel).ok());
  EXPECT_TRUE(FormatTrace(jobs, TraceFormat::kCsv).ok());
  jobs = SampleJobs();
  jobs[2].arrival_time = Seconds(1.0);
  EXPECT_FALSE(FormatTrace(jobs, TraceFormat::kCsv).ok());
  EXPECT_EQ(WriteTraceFile("/nonexistent/dir/x.csv", SampleJobs(), TraceFormat::kCsv).code(),
            StatusCode::kIoError);
}

TEST(TraceIoTest, FormatNames) {
  for (TraceFormat f : {TraceFormat::kGavel, TraceFormat::kMsrLegacy, TraceFormat::kCsv}) {
    auto parsed = ParseTraceFormat(TraceFormatName(f));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, f);
  }
  EXPECT_FALSE(ParseTraceFormat("json").ok());
}

}  // namespace
}  // namespace gavel::workload
