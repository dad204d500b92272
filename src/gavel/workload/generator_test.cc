// The generator against independent truth: the reference runs of the original Python Gavel
// (shared/reference-runs: its trace files and per-job TSVs) and CPython running the original's
// generate_job (testdata/generate_job_truth.py, commands quoted beside the expectations).
#include "gavel/workload/generator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gavel/workload/job_table.h"
#include "gavel/workload/trace_io.h"

namespace gavel::workload {
namespace {

const std::string kSourceDir = GAVEL_SOURCE_DIR;
const std::string kReferenceRuns = kSourceDir + "/../shared/reference-runs/";

ThroughputTable LoadTable() {
  auto table = ThroughputTable::LoadFile(kSourceDir + "/data/simulation_throughputs.json");
  EXPECT_TRUE(table.ok()) << table.status().ToString();
  return std::move(table).value();
}

std::vector<std::string> ReadLines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> SplitTabs(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream ss(line);
  for (std::string f; std::getline(ss, f, '\t');) fields.push_back(f);
  return fields;
}

bool NearlyEqual(double a, double b, double rel = 1e-9) {
  return std::fabs(a - b) <= rel * std::max({std::fabs(a), std::fabs(b), 1e-300});
}

GeneratorOptions ReferenceRunOptions(double lam) {
  GeneratorOptions options;  // the reference runs: seed 0, single-GPU, no priorities, no SLOs
  options.seed = 0;
  options.mean_interarrival = Seconds(lam);
  return options;
}

// ---------------------------------------------------------------------------------------------
// The job table against the throughput file: every template has a single-GPU
// entry, and exactly the distributed ones have 2/4/8-GPU entries.

TEST(JobTableTest, MatchesSpecAndThroughputFile) {
  const auto table = JobTable();
  ASSERT_EQ(table.size(), 26u);
  EXPECT_EQ(table[0].model, "ResNet-18 (batch size 16)");
  EXPECT_EQ(table[8].model, "ResNet-50 (batch size 128)");
  EXPECT_EQ(table[8].command, "python3 main.py -j 8 -a resnet50 -b 128 %s/imagenet/");
  EXPECT_EQ(table[13].num_steps_arg, "-step");
  EXPECT_EQ(table[14].model, "LM (batch size 5)");
  EXPECT_EQ(table[23].model, "Recommendation (batch size 8192)");
  EXPECT_EQ(table[24].model, "A3C");
  EXPECT_FALSE(table[24].needs_data_dir);
  EXPECT_EQ(table[25].model, "CycleGAN");
  EXPECT_EQ(table[25].working_directory, "cyclegan");
  const ThroughputTable throughputs = LoadTable();
  int distributed = 0;
  for (const JobTemplate& t : table) {
    EXPECT_TRUE(throughputs.HasJobType({t.model, 1})) << t.model;
    for (int sf : {2, 4, 8}) {
      EXPECT_EQ(throughputs.HasJobType({t.model, sf}), t.distributed) << t.model << " " << sf;
    }
    distributed += t.distributed ? 1 : 0;
    EXPECT_EQ(t.needs_data_dir, t.command.find("%s") != std::string::npos) << t.model;
  }
  EXPECT_EQ(distributed, 19);
}

// ---------------------------------------------------------------------------------------------
// Reference runs of the original (seed 0, cluster 8:8:8, single-GPU jobs).

// Every job of the original's trace: the line our writer produces for our generated job must
// equal the original's line byte for byte (job type, command, truncated steps, arrival %f).
void ExpectTraceMatches(const std::string& trace_name, double lam,
                        std::optional<std::size_t> max_jobs) {
  const std::string path = kReferenceRuns + trace_name;
  if (!std::filesystem::exists(path)) {
    GTEST_SKIP() << "reference run not found: " << path;
  }
  const std::vector<std::string> lines = ReadLines(path);
  ASSERT_FALSE(lines.empty());
  GeneratorOptions options = ReferenceRunOptions(lam);
  options.max_jobs = max_jobs;
  auto stream = GeneratedJobStream::Create(options, LoadTable());
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  for (std::size_t i = 0; i < lines.size(); ++i) {
    ASSERT_TRUE((*stream)->PeekArrival().has_value()) << "job " << i;
    const TraceJob job = (*stream)->Pop();
    auto text = FormatTrace({job}, TraceFormat::kGavel);
    ASSERT_TRUE(text.ok());
    ASSERT_EQ(*text, lines[i] + "\n") << trace_name << " job " << i;
  }
  if (max_jobs.has_value()) {
    EXPECT_FALSE((*stream)->PeekArrival().has_value());
  }
}

TEST(GeneratorReferenceTest, ContinuousLam3600TraceEveryJob) {
  ExpectTraceMatches("cont_c8-8-8_lam3600_seed0_s200_e400.trace", 3600.0, std::nullopt);
}

TEST(GeneratorReferenceTest, ContinuousLam7200TraceEveryJob) {
  ExpectTraceMatches("cont_c8-8-8_lam7200_seed0_s200_e400.trace", 7200.0, std::nullopt);
}

TEST(GeneratorReferenceTest, StaticTraceHundredJobsAtTimeZero) {
  ExpectTraceMatches("static_c8-8-8_lam0_seed0_s0_e100.trace", 0.0, 100);
}

// Full precision from the per-job TSVs (Python repr, i.e. shortest round-trip digits):
// arrival time, job type, scale factor, total steps, duration, priority weight.
TEST(GeneratorReferenceTest, FullPrecisionMatchesEveryTsv) {
  if (!std::filesystem::exists(kReferenceRuns)) {
    GTEST_SKIP() << "no " << kReferenceRuns;
  }
  const ThroughputTable throughputs = LoadTable();
  int files = 0;
  std::size_t exact = 0;
  std::size_t compared = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kReferenceRuns)) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".tsv") continue;
    // Every reference run is seed 0 with single-GPU jobs; the name carries lam ("_lam3600_").
    const auto at = name.find("_lam");
    if (at == std::string::npos || name.find("_seed0_") == std::string::npos) continue;
    const double lam = std::strtod(name.c_str() + at + 4, nullptr);
    ++files;
    const std::vector<std::string> lines = ReadLines(entry.path().string());
    ASSERT_GT(lines.size(), 1u);
    ASSERT_EQ(lines[0].rfind("job_id\tarrival_time_s\tjob_type\tscale_factor\ttotal_steps\t"
                             "duration_s\tpriority_weight",
                             0),
              0u)
        << name;
    auto stream = GeneratedJobStream::Create(ReferenceRunOptions(lam), throughputs);
    ASSERT_TRUE(stream.ok());
    for (std::size_t i = 1; i < lines.size(); ++i) {
      const std::vector<std::string> f = SplitTabs(lines[i]);
      ASSERT_GE(f.size(), 7u) << name << ":" << i + 1;
      ASSERT_EQ(std::stoul(f[0]), i - 1) << name << ": job ids are in arrival order";
      const TraceJob job = (*stream)->Pop();
      const double arrival = std::strtod(f[1].c_str(), nullptr);
      const double steps = std::strtod(f[4].c_str(), nullptr);
      const double duration = std::strtod(f[5].c_str(), nullptr);
      const std::string where = name + ":" + std::to_string(i + 1);
      EXPECT_EQ(job.job_type, f[2]) << where;
      EXPECT_EQ(job.scale_factor, std::stoi(f[3])) << where;
      EXPECT_TRUE(NearlyEqual(job.arrival_time.value(), arrival)) << where;
      EXPECT_TRUE(NearlyEqual(job.total_steps, steps)) << where;
      ASSERT_TRUE(job.duration.has_value());
      EXPECT_TRUE(NearlyEqual(job.duration->value(), duration)) << where;
      EXPECT_EQ(job.priority_weight, std::strtod(f[6].c_str(), nullptr)) << where;
      EXPECT_FALSE(job.slo_multiplier.has_value());
      ++compared;
      if (job.arrival_time.value() == arrival && job.total_steps == steps &&
          job.duration->value() == duration) {
        ++exact;
      }
    }
  }
  EXPECT_GE(files, 12);  // 10 continuous runs and 2 static ones at the time of writing
  // The port is bit-exact: CPython's pow/log are the C library's, as ours are.
  EXPECT_EQ(exact, compared);
}

// ---------------------------------------------------------------------------------------------
// Options the reference runs do not exercise, against CPython running the original's code.

TEST(GeneratorTest, MultiGpuPriorityAndSloMatchCPython) {
  // python3 src/gavel/workload/testdata/generate_job_truth.py 1 1800 8
  struct Expected {
    const char* model;
    int scale_factor;
    double duration, steps, priority, slo, arrival;
  };
  const Expected expected[] = {
      {"Recommendation (batch size 512)", 1, 6809.010442186965, 158770.0198661339, 1.0, 1.2, 0},
      {"LM (batch size 10)", 1, 43790.393791046685, 3575557.246778353, 1.0, 1.2,
       484.65078566259984},
      {"LM (batch size 40)", 1, 177180.02470571458, 8015158.609244624, 1.0, 2.0, 680.6429460223465},
      {"LM (batch size 20)", 1, 16999.738380829447, 1100604.7291269894, 1.0, 1.2,
       1588.3424709706983},
      {"LM (batch size 80)", 1, 3290.4186647749484, 92921.27520236732, 5.0, 2.0,
       1891.4369767515802},
      {"Transformer (batch size 128)", 2, 111579.11679952344, 1123516.7269292017, 1.0, 2.0,
       2015.3318536860959},
      {"LM (batch size 5)", 4, 30165.769404831783, 3822477.1338025313, 1.0, 1.2, 2939.59735944729},
      {"LM (batch size 10)", 1, 2147.7374873397875, 175366.27721775405, 1.0, 2.0,
       7440.475627915789},
  };
  GeneratorOptions options;
  options.seed = 1;
  options.mean_interarrival = Seconds(1800.0);
  options.generate_multi_gpu_jobs = true;
  options.generate_multi_priority_jobs = true;
  options.assign_slos = true;
  auto jobs = GenerateJobs(options, LoadTable(), 8);
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  ASSERT_EQ(jobs->size(), 8u);
  for (std::size_t i = 0; i < 8; ++i) {
    const TraceJob& job = (*jobs)[i];
    EXPECT_EQ(job.job_type, expected[i].model) << i;
    EXPECT_EQ(job.scale_factor, expected[i].scale_factor) << i;
    EXPECT_EQ(job.duration->value(), expected[i].duration) << i;
    EXPECT_EQ(job.total_steps, expected[i].steps) << i;
    EXPECT_EQ(job.priority_weight, expected[i].priority) << i;
    EXPECT_EQ(job.slo_multiplier, expected[i].slo) << i;
    EXPECT_EQ(job.arrival_time.value(), expected[i].arrival) << i;
  }
}

TEST(GeneratorTest, FixedDurationDrawsNoDurationMatchesCPython) {
  // python3 src/gavel/workload/testdata/generate_job_truth.py 7 0 4 5000
  GeneratorOptions options;
  options.seed = 7;
  options.generate_multi_gpu_jobs = true;
  options.generate_multi_priority_jobs = true;
  options.assign_slos = true;
  options.fixed_duration = Seconds(5000.0);
  auto jobs = GenerateJobs(options, LoadTable(), 4);
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), 4u);
  const char* models[] = {"Transformer (batch size 64)", "Recommendation (batch size 2048)",
                          "Recommendation (batch size 512)", "Recommendation (batch size 512)"};
  const double steps[] = {43088.794959665094, 37348.160304168625, 116588.17475328987,
                          116588.17475328987};
  const double priorities[] = {1.0, 5.0, 5.0, 1.0};
  const double slos[] = {1.2, 10.0, 10.0, 10.0};
  for (std::size_t i = 0; i < 4; ++i) {
    const TraceJob& job = (*jobs)[i];
    EXPECT_EQ(job.job_type, models[i]) << i;
    EXPECT_EQ(job.scale_factor, 1) << i;
    EXPECT_EQ(job.duration->value(), 5000.0) << i;
    EXPECT_EQ(job.total_steps, steps[i]) << i;
    EXPECT_EQ(job.priority_weight, priorities[i]) << i;
    EXPECT_EQ(job.slo_multiplier, slos[i]) << i;
    EXPECT_EQ(job.arrival_time.value(), 0.0) << i;  // lam 0: everything at time 0
  }
}

TEST(GeneratorTest, PhillyDistributionSamplesUniformRowWithJobRng) {
  const std::string path = kSourceDir + "/data/philly_job_distribution.csv";
  auto dist = PhillyJobDistribution::LoadCsv(path);
  ASSERT_TRUE(dist.ok()) << dist.status().ToString();
  ASSERT_EQ(dist->rows.size(), 33192u);  // shared/data/README.md
  EXPECT_EQ(dist->rows[0].duration.value(), 860662.0);
  // python3 -c "import csv,random
  // rows=list(csv.reader(open('data/philly_job_distribution.csv')))[1:]; r=random.Random(0+2)
  // for _ in range(4):
  //   d,g=rows[r.randrange(len(rows))]; sf=int(g)
  //   while True:
  //     i=r.choice(range(26))
  //     if sf==1 or i<19: break
  //   print(d,sf,i)"
  // -> 8991 1 2 / 11410 8 11 / 7262 1 23 / 12809 1 8
  GeneratorOptions options;
  options.generate_multi_gpu_jobs = true;
  options.philly = std::make_shared<PhillyJobDistribution>(std::move(dist).value());
  auto jobs = GenerateJobs(options, LoadTable(), 4);
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  const double durations[] = {8991, 11410, 7262, 12809};
  const int sfs[] = {1, 8, 1, 1};
  const int templates[] = {2, 11, 23, 8};
  const ThroughputTable throughputs = LoadTable();
  for (std::size_t i = 0; i < 4; ++i) {
    const TraceJob& job = (*jobs)[i];
    EXPECT_EQ(job.duration->value(), durations[i]) << i;
    EXPECT_EQ(job.scale_factor, sfs[i]) << i;
    EXPECT_EQ(job.job_type, JobTable()[static_cast<std::size_t>(templates[i])].model) << i;
    EXPECT_EQ(job.total_steps, durations[i] * *throughputs.Isolated("v100", job.key())) << i;
  }
}

TEST(GeneratorTest, PhillyCsvErrorsNameFileAndLine) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "gavel_philly_bad.csv").string();
  std::ofstream(path) << "duration_seconds,num_gpus\n100,1\n200,3x\n";
  auto dist = PhillyJobDistribution::LoadCsv(path);
  ASSERT_FALSE(dist.ok());
  EXPECT_EQ(dist.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(dist.status().message().find(path + ":3: num_gpus"), std::string::npos)
      << dist.status().message();
  std::filesystem::remove(path);
  EXPECT_EQ(PhillyJobDistribution::LoadCsv(path).status().code(), StatusCode::kIoError);
}

// Steady state (the original's --simulate-steady-state): per GPU type in sorted order, jobs at
// time 0 until their scale factors cover the type's GPUs; they consume job draws but no
// inter-arrival draws, so afterwards the stream continues exactly as a plain one shifted.
TEST(GeneratorTest, SteadyStateFillsEachTypeThenContinues) {
  GeneratorOptions plain_options;
  plain_options.seed = 3;
  plain_options.mean_interarrival = Seconds(900.0);
  plain_options.generate_multi_gpu_jobs = true;
  GeneratorOptions steady_options = plain_options;
  steady_options.steady_state_cluster = {{"v100", 5}, {"k80", 3}, {"p100", 0}};
  const ThroughputTable throughputs = LoadTable();
  auto plain = GenerateJobs(plain_options, throughputs, 60);
  auto steady = GenerateJobs(steady_options, throughputs, 60);
  ASSERT_TRUE(plain.ok() && steady.ok());
  // Replay the rule on the plain stream's sizes (same job draws): k80 first, then v100.
  std::size_t s = 0;
  for (int gpus : {3, 5}) {
    int remaining = gpus;
    while (remaining > 0) remaining -= (*plain)[s++].scale_factor;
  }
  ASSERT_GT(s, 2u);
  ASSERT_LT(s, 20u);
  for (std::size_t i = 0; i < 60; ++i) {
    const TraceJob& job = (*steady)[i];
    EXPECT_EQ(job.job_type, (*plain)[i].job_type) << i;
    EXPECT_EQ(job.total_steps, (*plain)[i].total_steps) << i;
    if (i < s) {
      EXPECT_EQ(job.arrival_time.value(), 0.0) << i;
    } else {
      EXPECT_EQ(job.arrival_time, (*plain)[i - s].arrival_time) << i;
    }
  }
}

TEST(GeneratorTest, MaxJobsEndsStreamAndLazyPeekDrawsNothing) {
  GeneratorOptions options;
  options.mean_interarrival = Seconds(3600.0);
  options.max_jobs = 3;
  auto stream = GeneratedJobStream::Create(options, LoadTable());
  ASSERT_TRUE(stream.ok());
  for (int i = 0; i < 3; ++i) {
    const auto peek = (*stream)->PeekArrival();
    ASSERT_TRUE(peek.has_value());
    EXPECT_EQ((*stream)->PeekArrival(), peek);
    EXPECT_EQ((*stream)->Pop().arrival_time, *peek);
  }
  EXPECT_FALSE((*stream)->PeekArrival().has_value());
  EXPECT_EQ((*stream)->num_generated(), 3u);
  EXPECT_DEATH((*stream)->Pop(), "exhausted");
}

TEST(GeneratorTest, RejectsTablesAndOptionsItCannotServe) {
  GeneratorOptions options;
  options.reference_gpu_type = "a100";
  auto missing = GeneratedJobStream::Create(options, LoadTable());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("a100"), std::string::npos);

  // k80 cannot run ResNet-50 bs128 with 2+ GPUs (throughput 0): fine for single-GPU jobs,
  // an error once multi-GPU jobs may be drawn.
  options.reference_gpu_type = "k80";
  EXPECT_TRUE(GeneratedJobStream::Create(options, LoadTable()).ok());
  options.generate_multi_gpu_jobs = true;
  auto zero = GeneratedJobStream::Create(options, LoadTable());
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("ResNet-50 (batch size 128)"), std::string::npos)
      << zero.status().message();

  GeneratorOptions negative;
  negative.mean_interarrival = Seconds(-1.0);
  EXPECT_FALSE(GeneratedJobStream::Create(negative, LoadTable()).ok());
}

TEST(GeneratorTest, HyperparameterSearchesAreAppsOfTrialsThatStopEarly) {
  GeneratorOptions plain;
  plain.seed = 5;
  plain.mean_interarrival = Seconds(3600.0);
  plain.generate_multi_gpu_jobs = true;
  plain.max_jobs = 400;
  GeneratorOptions hpo = plain;
  hpo.hpo_fraction = 0.3;
  hpo.hpo_trials = 5;
  auto without = GenerateJobs(plain, LoadTable(), 10000);
  auto with = GenerateJobs(hpo, LoadTable(), 10000);
  ASSERT_TRUE(without.ok() && with.ok());
  ASSERT_EQ(without->size(), 400u);

  // Walk the stream: every drawn job appears unchanged (the searches take no draw from the
  // original's streams); a search's leader is followed by its 4 other trials.
  std::size_t k = 0;
  std::size_t searches = 0;
  for (const TraceJob& drawn : *without) {
    ASSERT_LT(k, with->size());
    const TraceJob& leader = (*with)[k++];
    EXPECT_EQ(leader.job_type, drawn.job_type);
    EXPECT_EQ(leader.scale_factor, drawn.scale_factor);
    EXPECT_EQ(leader.total_steps, drawn.total_steps);
    EXPECT_EQ(leader.arrival_time, drawn.arrival_time);
    if (!leader.app) continue;
    ++searches;
    for (int t = 1; t < hpo.hpo_trials; ++t) {
      ASSERT_LT(k, with->size());
      const TraceJob& trial = (*with)[k++];
      EXPECT_EQ(trial.app, leader.app);
      EXPECT_EQ(trial.job_type, leader.job_type);
      EXPECT_EQ(trial.scale_factor, leader.scale_factor);
      EXPECT_EQ(trial.arrival_time, leader.arrival_time);  // the search starts together
      // A weaker trial stops early: between 10 % and 50 % of the best trial's steps.
      EXPECT_GE(trial.total_steps, 0.1 * leader.total_steps);
      EXPECT_LT(trial.total_steps, 0.5 * leader.total_steps);
    }
  }
  EXPECT_EQ(k, with->size());
  // About the asked-for fraction (binomial, n = 400, p = 0.3: sd ≈ 9).
  EXPECT_GT(searches, 80u);
  EXPECT_LT(searches, 160u);
  EXPECT_EQ(with->size(), 400u + 4u * searches);

  // Reproducible from the seed; another seed gives other searches.
  auto again = GenerateJobs(hpo, LoadTable(), 10000);
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->size(), with->size());
  for (std::size_t i = 0; i < with->size(); ++i) {
    EXPECT_EQ((*again)[i].app, (*with)[i].app);
    EXPECT_EQ((*again)[i].total_steps, (*with)[i].total_steps);
  }
  hpo.seed = 6;
  auto other = GenerateJobs(hpo, LoadTable(), 10000);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->size(), with->size());

  GeneratorOptions bad = plain;
  bad.hpo_fraction = 1.5;
  EXPECT_FALSE(GeneratedJobStream::Create(bad, LoadTable()).ok());
  bad.hpo_fraction = 0.5;
  bad.hpo_trials = 1;
  EXPECT_FALSE(GeneratedJobStream::Create(bad, LoadTable()).ok());
}

TEST(TraceJobStreamTest, YieldsInOrder) {
  std::vector<TraceJob> jobs(3);
  jobs[0].job_type = "A3C";
  jobs[1].job_type = "CycleGAN";
  jobs[1].arrival_time = Seconds(5.0);
  jobs[2].job_type = "A3C";
  jobs[2].arrival_time = Seconds(5.0);
  TraceJobStream stream(jobs);
  EXPECT_EQ(stream.remaining(), 3u);
  EXPECT_EQ(stream.PeekArrival(), Seconds(0.0));
  EXPECT_EQ(stream.Pop(), jobs[0]);
  EXPECT_EQ(stream.PeekArrival(), Seconds(5.0));
  EXPECT_EQ(stream.Pop(), jobs[1]);
  EXPECT_EQ(stream.Pop(), jobs[2]);
  EXPECT_FALSE(stream.PeekArrival().has_value());

  jobs[2].arrival_time = Seconds(1.0);
  const Status out_of_order = ValidateArrivalOrder(jobs);
  EXPECT_EQ(out_of_order.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(out_of_order.message().find("job 2"), std::string::npos);
  EXPECT_DEATH(TraceJobStream{jobs}, "job 2");
}

}  // namespace
}  // namespace gavel::workload
