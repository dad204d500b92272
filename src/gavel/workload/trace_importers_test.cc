// The public-trace importers against small files written in each trace's published schema
// (testdata/philly_cluster_job_log.json, helios_cluster_log.csv, pai_job_table.csv +
// pai_task_table.csv). Every expected number is worked out by hand from those files in the
// comments beside it; steps are checked against the throughput table's own entries.
#include "gavel/workload/trace_importers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "gavel/workload/job_table.h"

namespace gavel::workload {
namespace {

const std::string kSourceDir = GAVEL_SOURCE_DIR;
const std::string kTestData = kSourceDir + "/src/gavel/workload/testdata/";

const ThroughputTable& Table() {
  static const ThroughputTable table =
      ThroughputTable::LoadFile(kSourceDir + "/data/simulation_throughputs.json").value();
  return table;
}

// The job as the mapping must have made it: a template that supports its scale factor, and
// total_steps = ceil(duration × the table's isolated v100 throughput of (type, sf)).
void ExpectMapped(const TraceJob& job, int scale_factor, double duration, double arrival,
                  OutcomeKind kind) {
  SCOPED_TRACE(job.job_type);
  EXPECT_EQ(job.scale_factor, scale_factor);
  ASSERT_TRUE(job.duration.has_value());
  EXPECT_DOUBLE_EQ(job.duration->value(), duration);
  EXPECT_DOUBLE_EQ(job.arrival_time.value(), arrival);
  ASSERT_TRUE(job.outcome.has_value());
  EXPECT_EQ(job.outcome->kind, kind);
  EXPECT_EQ(job.outcome->at_progress, 1.0);
  bool known = false;
  for (const JobTemplate& t : JobTable()) {
    if (t.model != job.job_type) continue;
    known = true;
    EXPECT_TRUE(scale_factor == 1 || t.distributed);
    EXPECT_EQ(job.command, t.command);
  }
  EXPECT_TRUE(known);
  const double tput = Table().Isolated("v100", job.key()).value();
  EXPECT_EQ(job.total_steps, std::ceil(duration * tput));
}

TEST(TraceImportersTest, DateTimeMatchesTheCalendar) {
  // python3: calendar.timegm(time.strptime('2017-10-07 01:11:39', '%Y-%m-%d %H:%M:%S'))
  EXPECT_EQ(ParseTraceDateTime("2017-10-07 01:11:39").value(), 1507338699.0);
  EXPECT_EQ(ParseTraceDateTime("2016-02-29 23:59:59").value(), 1456790399.0);
  EXPECT_EQ(ParseTraceDateTime("1970-01-01 00:00:00").value(), 0.0);
  for (const char* bad : {"2017-02-29 00:00:00", "2017-13-01 00:00:00", "2017-10-07 24:00:00",
                          "2017-10-07T01:11:39", "2017-10-07 1:11:39", "None", ""}) {
    EXPECT_FALSE(ParseTraceDateTime(bad).ok()) << bad;
  }
}

TEST(TraceImportersTest, PhillyClusterJobLog) {
  const auto imported = ImportPublicTraceFile(kTestData + "philly_cluster_job_log.json",
                                              PublicTraceFormat::kPhilly, {}, Table());
  ASSERT_TRUE(imported.ok()) << imported.status().message();
  const ImportReport& r = imported->report;
  EXPECT_EQ(r.records, 6u);
  EXPECT_EQ(r.imported, 3u);
  EXPECT_EQ(r.skipped_no_run, 2u);  // job 3: no attempt; job 4: end_time "None" (running)
  EXPECT_EQ(r.skipped_no_gpu, 1u);  // job 6: gpus []
  EXPECT_EQ(r.skipped_bad, 0u);
  const auto& jobs = imported->jobs;
  ASSERT_EQ(jobs.size(), 3u);
  // Sorted by submission; origin = job 2's 01:00:00.
  // Job 2: 3 GPUs (2 on m1 + 1 on m2) -> sf 4; 1800 s × 3 / 4 = 1350 s; Failed -> user error.
  ExpectMapped(jobs[0], 4, 1350.0, 0.0, OutcomeKind::kUserError);
  // Job 1: 8 GPUs; attempts 74 s + 7200 s; submitted 01:11:39 = 699 s after the origin.
  ExpectMapped(jobs[1], 8, 7274.0, 699.0, OutcomeKind::kCompleted);
  // Job 5: 1 GPU, 3600 s, submitted the next day at 00:00:00 = 23 h after the origin.
  ExpectMapped(jobs[2], 1, 3600.0, 82800.0, OutcomeKind::kCompleted);
}

TEST(TraceImportersTest, HeliosClusterLog) {
  const auto imported = ImportPublicTraceFile(kTestData + "helios_cluster_log.csv",
                                              PublicTraceFormat::kHelios, {}, Table());
  ASSERT_TRUE(imported.ok()) << imported.status().message();
  const ImportReport& r = imported->report;
  EXPECT_EQ(r.records, 6u);
  EXPECT_EQ(r.imported, 4u);
  EXPECT_EQ(r.skipped_no_gpu, 1u);  // 1425514: gpu_num 0
  EXPECT_EQ(r.skipped_no_run, 1u);  // 1425516: cancelled before it started
  const auto& jobs = imported->jobs;
  ASSERT_EQ(jobs.size(), 4u);
  // Origin: 1425511's 18:41:01. Durations are the duration column (= end - start here).
  ExpectMapped(jobs[0], 1, 36848.0, 0.0, OutcomeKind::kCompleted);
  ExpectMapped(jobs[1], 4, 249.0, 26.0, OutcomeKind::kUserError);
  ExpectMapped(jobs[2], 1, 675233.0, 27.0, OutcomeKind::kKilled);
  // 16 GPUs -> sf 8, 3600 s × 16 / 8 = 7200 s; submitted 18:50:00 = 539 s after the origin.
  ExpectMapped(jobs[3], 8, 7200.0, 539.0, OutcomeKind::kInfrastructureFailure);
}

TEST(TraceImportersTest, PaiJobAndTaskTables) {
  const auto imported =
      ImportPublicTraceFile(kTestData + "pai_job_table.csv", PublicTraceFormat::kPai, {}, Table());
  ASSERT_TRUE(imported.ok()) << imported.status().message();
  const ImportReport& r = imported->report;
  EXPECT_EQ(r.records, 5u);
  EXPECT_EQ(r.imported, 3u);
  EXPECT_EQ(r.skipped_no_run, 1u);  // j3: Running
  EXPECT_EQ(r.skipped_no_gpu, 1u);  // j4: plan_gpu empty
  const auto& jobs = imported->jobs;
  ASSERT_EQ(jobs.size(), 3u);
  // Origin: j2's submission at 500 s. j2: 2 × 50 % = 1 GPU, tasks 600..800 = 200 s, Failed.
  ExpectMapped(jobs[0], 1, 200.0, 0.0, OutcomeKind::kUserError);
  // j1: 1 GPU, 1100..4900 = 3800 s, submitted at 1000.
  ExpectMapped(jobs[1], 1, 3800.0, 500.0, OutcomeKind::kCompleted);
  // j5: 0 + 3 × 100 % + 1 × 50 % = 3.5 GPUs -> 4 -> sf 4; tasks 4100..8500 = 4400 s.
  ExpectMapped(jobs[2], 4, 4400.0, 3500.0, OutcomeKind::kCompleted);
}

// Found by the fuzz targets (fuzz/corpus/trace_helios, trace_philly regression files): a header
// naming a column twice read past a row's fields; jobs whose dates lie centuries apart gave
// traces that could not be written back. Both are errors naming what is wrong.
TEST(TraceImportersTest, DuplicateColumnsAndOutOfBoundsTimesAreErrors) {
  const std::string twice =
      "job_id,gpu_num,state,state,submit_time,start_time,end_time\n"
      "1,1,COMPLETED,COMPLETED,2020-01-01 00:00:00,2020-01-01 00:00:00,2020-01-01 01:00:00\n";
  const auto dup = ImportPublicTrace(twice, PublicTraceFormat::kHelios, {}, Table(), "h.csv");
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("h.csv:1: state: appears twice"), std::string::npos)
      << dup.status().message();
  const std::string far =
      "job_id,gpu_num,state,submit_time,start_time,end_time\n"
      "1,1,COMPLETED,1970-01-01 00:00:00,1970-01-01 00:00:00,1970-01-01 01:00:00\n"
      "2,1,COMPLETED,2990-01-01 00:00:00,2990-01-01 00:00:00,2990-01-01 01:00:00\n";
  const auto bounded = ImportPublicTrace(far, PublicTraceFormat::kHelios, {}, Table(), "f.csv");
  ASSERT_FALSE(bounded.ok());
  EXPECT_NE(bounded.status().message().find("job '2': arrival since the first submission"),
            std::string::npos)
      << bounded.status().message();
}

TEST(TraceImportersTest, JobTypeFollowsTheJobIdAndSeed) {
  // A job keeps its type when other rows disappear: import the Helios file and a copy
  // without its first two data rows.
  const std::string header =
      "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,"
      "duration,queue\n";
  std::string rows;
  for (int i = 0; i < 200; ++i) {
    rows += std::to_string(1000 + i) + ",u,vc," + std::to_string(i % 3 == 0 ? 2 : 1) +
            ",1,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,2020-06-09 19:41:01,3600,0\n";
  }
  const auto all = ImportPublicTrace(header + rows, PublicTraceFormat::kHelios, {}, Table(), "a");
  const auto fewer =
      ImportPublicTrace(header + rows.substr(rows.find('\n', rows.find('\n') + 1) + 1),
                        PublicTraceFormat::kHelios, {}, Table(), "b");
  ASSERT_TRUE(all.ok() && fewer.ok());
  ASSERT_EQ(fewer->jobs.size() + 2, all->jobs.size());
  for (std::size_t i = 0; i < fewer->jobs.size(); ++i) {
    EXPECT_EQ(fewer->jobs[i].job_type, all->jobs[i + 2].job_type) << i;
  }
  // Another seed moves types; the 200 jobs spread over many templates.
  ImportOptions other;
  other.seed = 1;
  const auto reseeded =
      ImportPublicTrace(header + rows, PublicTraceFormat::kHelios, other, Table(), "a");
  ASSERT_TRUE(reseeded.ok());
  std::size_t moved = 0;
  std::set<std::string> types;
  for (std::size_t i = 0; i < all->jobs.size(); ++i) {
    moved += all->jobs[i].job_type != reseeded->jobs[i].job_type ? 1 : 0;
    types.insert(all->jobs[i].job_type);
  }
  EXPECT_GT(moved, 100u);
  EXPECT_GE(types.size(), 15u);
}

TEST(TraceImportersTest, BadRowsNameFileLineAndField) {
  const std::string helios =
      "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,"
      "queue\n"
      "1,u,vc,1,1,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,2020-06-09 19:41:01,3600,0\n"
      "2,u,vc,1.5,1,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,2020-06-09 "
      "19:41:01,3600,0\n"
      "3,u,vc,1,1,1,RUNNING,2020-06-09 18:41:01,2020-06-09 18:41:01,2020-06-09 19:41:01,3600,0\n"
      "4,u,vc,1,1,1,COMPLETED,2020-06-31 18:41:01,2020-06-09 18:41:01,2020-06-09 19:41:01,3600,0\n"
      "5,u,vc,1,1,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,2020-06-09 19:41:01,nan,0\n";
  const auto strict = ImportPublicTrace(helios, PublicTraceFormat::kHelios, {}, Table(), "h.csv");
  ASSERT_FALSE(strict.ok());
  EXPECT_EQ(strict.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(strict.status().message().find("h.csv:3: gpu_num: '1.5'"), std::string::npos)
      << strict.status().message();

  ImportOptions skip;
  skip.skip_bad_rows = true;
  const auto lenient =
      ImportPublicTrace(helios, PublicTraceFormat::kHelios, skip, Table(), "h.csv");
  ASSERT_TRUE(lenient.ok()) << lenient.status().message();
  EXPECT_EQ(lenient->report.records, 5u);
  EXPECT_EQ(lenient->report.imported, 1u);
  EXPECT_EQ(lenient->report.skipped_bad, 4u);  // gpu_num, state, submit_time, duration
  EXPECT_NE(lenient->report.first_bad.find("h.csv:3: gpu_num"), std::string::npos);
  const std::string summary = lenient->report.Summary("h.csv");
  EXPECT_NE(summary.find("imported 1 of 5 jobs"), std::string::npos) << summary;
  EXPECT_NE(summary.find("skipped 4 unreadable"), std::string::npos) << summary;

  // Philly: the error names the line of the job's jobid and the field.
  const std::string philly =
      "[\n"
      " {\"status\": \"Pass\", \"jobid\": \"a\", \"attempts\": [],\n"
      "  \"submitted_time\": \"2017-10-07 01:00:00\"},\n"
      " {\"status\": \"Running\",\n"
      "  \"jobid\": \"b\", \"attempts\": [], \"submitted_time\": \"2017-10-07 01:00:00\"}\n"
      "]\n";
  const auto bad_philly =
      ImportPublicTrace(philly, PublicTraceFormat::kPhilly, {}, Table(), "p.json");
  ASSERT_FALSE(bad_philly.ok());
  EXPECT_NE(bad_philly.status().message().find("p.json:5: job 1 (b): status: 'Running'"),
            std::string::npos)
      << bad_philly.status().message();
  ImportOptions skip_philly;
  skip_philly.skip_bad_rows = true;
  const std::string two_bad =
      philly.substr(0, philly.rfind(']')) + ",{\"status\": \"Oops\", \"jobid\": \"z\"}]";
  const auto skipped =
      ImportPublicTrace(two_bad, PublicTraceFormat::kPhilly, skip_philly, Table(), "p.json");
  ASSERT_TRUE(skipped.ok()) << skipped.status().message();
  EXPECT_EQ(skipped->report.records, 3u);
  EXPECT_EQ(skipped->report.skipped_bad, 2u);
  EXPECT_EQ(skipped->report.skipped_no_run, 1u);  // job a: no attempts
  EXPECT_NE(skipped->report.first_bad.find("p.json:5: job 1 (b)"), std::string::npos)
      << skipped->report.first_bad;
  const auto attempt_bad = ImportPublicTrace(
      "[{\"status\": \"Pass\", \"jobid\": \"c\", \"submitted_time\": \"2017-10-07 01:00:00\", "
      "\"attempts\": [{\"start_time\": \"2017-10-07 02:00:00\", \"end_time\": \"2017-10-07 "
      "01:00:00\", \"detail\": []}]}]",
      PublicTraceFormat::kPhilly, {}, Table(), "q.json");
  ASSERT_FALSE(attempt_bad.ok());
  EXPECT_NE(attempt_bad.status().message().find("attempts[0].end_time: before its start_time"),
            std::string::npos)
      << attempt_bad.status().message();
  EXPECT_FALSE(ImportPublicTrace("{", PublicTraceFormat::kPhilly, {}, Table(), "x").ok());
  // A number too large for a double is JSON's out_of_range, not a parse error: still an error
  // naming the file, never an exception (found by the trace_philly fuzz target).
  const auto too_large =
      ImportPublicTrace("[ 7e7777777777777777 ]", PublicTraceFormat::kPhilly, {}, Table(), "big.json");
  ASSERT_FALSE(too_large.ok());
  EXPECT_NE(too_large.status().message().find("big.json: not valid JSON"), std::string::npos)
      << too_large.status().message();

  // PAI: the task table's errors name the task file.
  const auto bad_pai =
      ImportPublicTrace("j1,i1,u1,Terminated,1000.0,5000.0\n", PublicTraceFormat::kPai, {}, Table(),
                        "jobs.csv", "j1,w,1.0,Terminated,1,2,600,1,-50,V100\n", "tasks.csv");
  ASSERT_FALSE(bad_pai.ok());
  EXPECT_NE(bad_pai.status().message().find("tasks.csv:1: plan_gpu: '-50'"), std::string::npos)
      << bad_pai.status().message();
  EXPECT_EQ(ImportPublicTraceFile(kTestData + "does_not_exist.json", PublicTraceFormat::kPhilly, {},
                                  Table())
                .status()
                .code(),
            StatusCode::kIoError);
}

TEST(TraceImportersTest, FormatNames) {
  for (PublicTraceFormat f :
       {PublicTraceFormat::kPhilly, PublicTraceFormat::kPai, PublicTraceFormat::kHelios}) {
    EXPECT_EQ(ParsePublicTraceFormat(PublicTraceFormatName(f)).value(), f);
  }
  EXPECT_FALSE(ParsePublicTraceFormat("gavel").ok());
}

}  // namespace
}  // namespace gavel::workload
