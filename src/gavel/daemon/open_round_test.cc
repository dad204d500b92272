// OpenRound alone: its times (worked by hand from the documented rules), which reports count,
// the endings (dead agents, stragglers, cancels) and what it stages for the store.
#include "gavel/daemon/open_round.h"

#include <gtest/gtest.h>

namespace gavel::daemon {
namespace {

using Fate = OpenRound::Fate;

wire::ReportDoneRequest Report(std::uint64_t round, std::uint64_t worker, std::uint64_t job,
                               wire::TaskOutcome outcome, std::uint64_t checkpointed) {
  wire::ReportDoneRequest r;
  r.set_round_id(round);
  r.set_worker_id(worker);
  r.set_job_id(job);
  r.set_outcome(outcome);
  r.set_checkpointed_steps(checkpointed);
  r.set_exit_code(outcome == wire::CRASHED ? 3 : 0);
  r.set_message(std::string(2000, 'x'));
  return r;
}

TEST(OpenRoundTest, TimesFollowTheRoundLengthAndGrace) {
  Journal journal;
  // Start 1,000 ms, 10-s rounds, 2-s grace: mid 6,000, end 11,000, deadline 13,000.
  OpenRound round(7, 1'000, 10'000, 2'000, &journal);
  EXPECT_EQ(round.id(), 7u);
  EXPECT_EQ(round.start_ms(), 1'000);
  EXPECT_EQ(round.end_ms(), 11'000);
  EXPECT_EQ(round.deadline_ms(), 13'000);
  EXPECT_TRUE(round.mech_backed());
  EXPECT_TRUE(round.idle());
  EXPECT_EQ(round.NextWakeMs(), 6'000);  // mid-round comes first
  EXPECT_FALSE(round.TakeMidRound(5'999));
  EXPECT_TRUE(round.TakeMidRound(6'000));
  EXPECT_FALSE(round.TakeMidRound(7'000));  // once only
  EXPECT_EQ(round.NextWakeMs(), 11'000);    // an idle round wakes at its end
  round.AddJob(5, {10}, "v100");
  EXPECT_EQ(round.NextWakeMs(), 13'000);  // a busy one at its deadline
}

TEST(OpenRoundTest, OnlyTheFirstReportOfAnOpenTaskCounts) {
  Journal journal;
  OpenRound round(3, 0, 10'000, 2'000, &journal);
  round.AddJob(5, {10, 11}, "v100");
  round.AddJob(6, {12}, "k80");
  const RoundRow row = round.ToRow();
  EXPECT_EQ(row.round_id, 3u);
  EXPECT_EQ(row.end_ms, 10'000);
  ASSERT_EQ(row.tasks.size(), 3u);
  EXPECT_EQ(row.tasks[1].worker_id, 11u);
  EXPECT_EQ(row.tasks[1].rank, 1u);
  EXPECT_EQ(row.tasks[1].world_size, 2u);
  EXPECT_EQ(round.GpuTypeOf(5), "v100");
  EXPECT_EQ(round.GpuTypeOf(99), "");
  EXPECT_EQ(round.PendingJobOn(12), 6u);

  EXPECT_EQ(round.Record(Report(2, 10, 5, wire::LEASE_EXPIRED, 40)), Fate::kStale);  // round
  EXPECT_EQ(round.Record(Report(3, 10, 6, wire::LEASE_EXPIRED, 40)), Fate::kStale);  // job
  EXPECT_EQ(round.Record(Report(3, 10, 5, wire::LEASE_EXPIRED, 40)),
            Fate::kTaskEnded);  // rank 1 open
  EXPECT_EQ(round.Record(Report(3, 10, 5, wire::LEASE_EXPIRED, 50)), Fate::kStale);  // a repeat
  EXPECT_EQ(round.PendingJobOn(10), 0u);
  EXPECT_EQ(round.TaskOn(10)->checkpointed, 40u);  // the repeat changed nothing
  EXPECT_EQ(round.TaskOn(10)->message.size(), 1024u);  // bounded
  EXPECT_EQ(round.Record(Report(3, 11, 5, wire::KILLED, 40)), Fate::kMicroTaskEnded);
  EXPECT_FALSE(round.TasksOf(5)[1]->job_at_fault);  // killed by its agent: not its fault
  EXPECT_FALSE(round.AllReported());
  EXPECT_EQ(round.Record(Report(3, 12, 6, wire::CRASHED, 0)), Fate::kMicroTaskEnded);
  EXPECT_TRUE(round.TasksOf(6)[0]->job_at_fault);
  EXPECT_TRUE(round.AllReported());
  EXPECT_EQ(journal.batch.reported_workers, (std::vector<std::uint64_t>{10, 11, 12}));
}

TEST(OpenRoundTest, EndingsTouchOnlyUnreportedTasks) {
  Journal journal;
  OpenRound round(1, 0, 10'000, 2'000, &journal);
  round.AddJob(5, {10, 11}, "v100");  // 10 on agent A, 11 on agent B
  round.AddJob(6, {12}, "v100");      // on agent A
  round.AddJob(7, {13}, "v100");      // on agent B
  ASSERT_EQ(round.Record(Report(1, 13, 7, wire::COMPLETED, 9)), Fate::kMicroTaskEnded);
  // Agent A dies: its tasks end without blame; job 5's rank on B is left to the caller.
  const auto on_a = [](std::uint64_t w) { return w == 10 || w == 12; };
  EXPECT_EQ(round.EndTasksOn(on_a, "its worker died"), (std::set<std::uint64_t>{5, 6}));
  EXPECT_EQ(round.TasksOf(5)[0]->outcome, wire::KILLED);
  EXPECT_FALSE(round.TasksOf(5)[0]->job_at_fault);
  EXPECT_EQ(round.TasksOf(5)[0]->message, "its worker died");
  EXPECT_EQ(round.PendingJobOn(11), 5u);
  EXPECT_TRUE(round.EndWithoutBlame(5, ""));
  EXPECT_FALSE(round.EndWithoutBlame(5, ""));  // nothing left
  EXPECT_EQ(round.TasksOf(7)[0]->outcome, wire::COMPLETED);  // untouched
  EXPECT_TRUE(round.AllReported());
}

TEST(OpenRoundTest, StragglersAreKilledAndBlamedAsTold) {
  Journal journal;
  OpenRound round(1, 0, 10'000, 2'000, &journal);
  round.AddJob(5, {10}, "v100");
  round.AddJob(6, {11, 12}, "v100");
  ASSERT_EQ(round.Record(Report(1, 11, 6, wire::LEASE_EXPIRED, 4)), Fate::kTaskEnded);
  std::uint64_t killed = 0;
  const auto jobs = round.EndStragglers([](std::uint64_t w) { return w == 12; }, &killed);
  EXPECT_EQ(jobs, (std::set<std::uint64_t>{5, 6}));
  EXPECT_EQ(killed, 2u);  // tasks 10 and 12; 11 had reported
  EXPECT_FALSE(round.TasksOf(5)[0]->job_at_fault);
  EXPECT_TRUE(round.TasksOf(6)[1]->job_at_fault);
  EXPECT_EQ(round.TasksOf(6)[1]->exit_code, -9);
  EXPECT_EQ(round.TasksOf(6)[0]->outcome, wire::LEASE_EXPIRED);  // its report stands
  EXPECT_TRUE(round.AllReported());
}

TEST(OpenRoundTest, AMicroTaskIsWhatAllItsRanksSayTogether) {
  Journal journal;
  OpenRound round(1, 0, 10'000, 2'000, &journal);
  round.AddJob(5, {10, 11, 12}, "v100");
  auto report = [](std::uint64_t worker, wire::TaskOutcome outcome, std::uint64_t ckpt,
                   std::uint64_t trained, double training, double elapsed) {
    wire::ReportDoneRequest r = Report(1, worker, 5, outcome, ckpt);
    r.set_steps_trained(trained);
    r.set_training_seconds(training);
    r.set_elapsed_s(elapsed);
    return r;
  };
  ASSERT_EQ(round.Record(report(10, wire::LEASE_EXPIRED, 40, 50, 10.0, 11.0)), Fate::kTaskEnded);
  ASSERT_EQ(round.Record(report(11, wire::CRASHED, 30, 45, 12.0, 12.5)), Fate::kTaskEnded);
  ASSERT_EQ(round.Record(report(12, wire::LAUNCH_FAILED, 35, 0, 0.0, 1.0)), Fate::kMicroTaskEnded);
  const MicroTaskSummary m = round.Summarize(5, 20'000);
  EXPECT_EQ(m.gpu_type, "v100");
  EXPECT_EQ(m.workers, (std::vector<std::uint64_t>{10, 11, 12}));
  EXPECT_EQ(m.first->worker_id, 10u);
  EXPECT_FALSE(m.shared);
  EXPECT_EQ(m.checkpointed, std::optional<std::uint64_t>(30));  // what every rank holds
  EXPECT_EQ(m.elapsed_s, 12.5);
  EXPECT_EQ(m.training_s, 12.0);
  EXPECT_EQ(m.steps_trained, 50u);
  EXPECT_TRUE(m.expired && m.crashed && m.launch_failed);
  EXPECT_FALSE(m.completed || m.killed_at_fault);
  EXPECT_EQ(m.culprit->worker_id, 11u);  // the first rank at fault

  // A rank that ended without a report leaves the checkpoint unknown, and nobody at fault.
  round.AddJob(6, {13, 14}, "v100");
  wire::ReportDoneRequest of_six = report(13, wire::LEASE_EXPIRED, 70, 20, 5.0, 6.0);
  of_six.set_job_id(6);
  ASSERT_EQ(round.Record(of_six), Fate::kTaskEnded);
  ASSERT_TRUE(round.EndWithoutBlame(6, "its worker died"));
  const MicroTaskSummary n = round.Summarize(6, 20'000);
  EXPECT_FALSE(n.checkpointed.has_value());
  EXPECT_FALSE(n.killed_at_fault);
  EXPECT_EQ(n.culprit->worker_id, 13u);
}

// Space sharing: a sample is co-located only when the partner ran until about the end (within
// 10 %) of the job's own micro-task; a micro-task with no time reported lasts the round so far.
TEST(OpenRoundTest, APartnerThatLeftEarlyMakesNoColocatedSample) {
  Journal journal;
  OpenRound round(1, 0, 10'000, 2'000, &journal);
  round.AddJob(5, {10}, "v100");
  round.AddJob(6, {PartnerSlotOf(10)}, "v100");
  round.AddJob(7, {11}, "v100");
  round.AddJob(8, {PartnerSlotOf(11)}, "v100");
  wire::ReportDoneRequest r = Report(1, 10, 5, wire::LEASE_EXPIRED, 40);
  r.set_elapsed_s(10.0);
  ASSERT_EQ(round.Record(r), Fate::kMicroTaskEnded);
  r = Report(1, PartnerSlotOf(10), 6, wire::COMPLETED, 40);
  r.set_elapsed_s(9.5);  // finished, but within 10 % of its partner's time
  ASSERT_EQ(round.Record(r), Fate::kMicroTaskEnded);
  r = Report(1, PartnerSlotOf(11), 8, wire::CRASHED, 3);
  r.set_elapsed_s(2.0);  // crashed early
  ASSERT_EQ(round.Record(r), Fate::kMicroTaskEnded);
  r = Report(1, 11, 7, wire::LEASE_EXPIRED, 40);
  r.set_elapsed_s(10.0);
  ASSERT_EQ(round.Record(r), Fate::kMicroTaskEnded);
  const MicroTaskSummary five = round.Summarize(5, 10'000);
  EXPECT_TRUE(five.shared);
  EXPECT_EQ(five.partner, 6u);
  const MicroTaskSummary seven = round.Summarize(7, 10'000);
  EXPECT_TRUE(seven.shared);
  EXPECT_EQ(seven.partner, 0u);  // job 8 left at 2 s of 10

  round.AddJob(9, {12}, "k80");
  ASSERT_TRUE(round.EndWithoutBlame(9, "its worker died"));
  EXPECT_EQ(round.Summarize(9, 4'500).elapsed_s, 4.5);  // no report: the round's time so far
  EXPECT_FALSE(round.Summarize(9, 4'500).shared);
}

TEST(OpenRoundTest, AResumedRoundWaitsForItsAgentsAndFeedsNoMechanism) {
  RoundRow row{4, 1'000, 11'000, {}};
  row.tasks.push_back(RoundTaskRow{10, 5, 0, 2, true});
  row.tasks.push_back(RoundTaskRow{11, 5, 1, 2, false});
  row.tasks.push_back(RoundTaskRow{12, 9, 0, 1, false});  // a job the store no longer has
  const auto known = [](std::uint64_t job) { return job == 5; };
  const auto type = [](std::uint64_t worker) { return worker == 11 ? "k80" : ""; };
  Journal journal;
  // Restarted long before the end: end + grace (13,000) is later than now + timeout.
  OpenRound early = OpenRound::Resume(row, 2'000, 2'000, 5'000, known, type, &journal);
  EXPECT_EQ(early.deadline_ms(), 13'000);
  // Restarted after it: the agents get one heartbeat timeout to come back.
  OpenRound late = OpenRound::Resume(row, 20'000, 2'000, 5'000, known, type, &journal);
  EXPECT_EQ(late.deadline_ms(), 25'000);
  EXPECT_FALSE(late.mech_backed());
  EXPECT_EQ(late.num_tasks(), 2u);  // job 9's task dropped
  EXPECT_FALSE(late.HasJob(9));
  EXPECT_EQ(late.WorkersOf(5), (std::vector<std::uint64_t>{10, 11}));
  EXPECT_EQ(late.PendingJobOn(10), 0u);  // credited before the restart
  EXPECT_EQ(late.TasksOf(5)[0]->outcome, wire::LEASE_EXPIRED);
  EXPECT_FALSE(late.TasksOf(5)[0]->job_at_fault);
  EXPECT_EQ(late.TasksOf(5)[1]->gpu_type, "k80");
  EXPECT_EQ(late.PendingJobOn(11), 5u);
  // No solve ahead: "mid-round" is its end.
  EXPECT_FALSE(early.TakeMidRound(10'999));
  EXPECT_TRUE(early.TakeMidRound(11'000));
}

}  // namespace
}  // namespace gavel::daemon
