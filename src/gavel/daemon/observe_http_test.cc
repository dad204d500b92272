// Tests of the observation port's parts without a daemon: the histograms against a brute-force
// count, the exposition's shape and escaping, the round durations, the routing.
#include "gavel/daemon/observe_http.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <sstream>

namespace gavel::daemon {
namespace {

TEST(ObservationsTest, HistogramBucketsCountWhatABruteForceCounts) {
  HistogramData histogram;
  histogram.bounds = {0.1, 1, 10};
  histogram.counts.assign(3, 0);
  std::mt19937 random(7);
  std::uniform_real_distribution<double> value(0.0, 20.0);
  std::vector<double> seen;
  for (int i = 0; i < 500; ++i) {
    seen.push_back(value(random) * value(random) / 20.0);
    histogram.Observe(seen.back());
  }
  double sum = 0;
  for (std::size_t b = 0; b < histogram.bounds.size(); ++b) {
    std::uint64_t expected = 0;
    for (double v : seen) expected += v <= histogram.bounds[b] ? 1 : 0;
    EXPECT_EQ(histogram.counts[b], expected) << "le=" << histogram.bounds[b];
  }
  for (double v : seen) sum += v;
  EXPECT_EQ(histogram.count, seen.size());
  EXPECT_NEAR(histogram.sum, sum, 1e-9);
}

TEST(ObservationsTest, RoundDurationsAreTheGapsBetweenRoundStarts) {
  Observations observations;
  observations.RoundStarted(10'000);
  observations.RoundStarted(12'000);
  observations.RoundStarted(17'500);
  const HistogramData rounds = observations.round_durations();
  EXPECT_EQ(rounds.count, 2u);
  EXPECT_DOUBLE_EQ(rounds.sum, 2.0 + 5.5);
  for (int i = 0; i < 150; ++i) observations.Event(EventRow{i, "submit", 1, 0, ""});
  const std::vector<EventRow> events = observations.events();
  ASSERT_EQ(events.size(), Observations::kMaxEvents);
  EXPECT_EQ(events.front().ts_ms, 50);  // the oldest kept
  EXPECT_EQ(events.back().ts_ms, 149);
}

// name{labels} -> value, and each family's TYPE, from exposition text.
struct Parsed {
  std::map<std::string, double> samples;
  std::map<std::string, std::string> types;
};
Parsed Parse(const std::string& text) {
  Parsed parsed;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream words(line.substr(7));
      std::string name, type;
      words >> name >> type;
      parsed.types[name] = type;
    } else if (!line.empty() && line[0] != '#') {
      const std::size_t space = line.rfind(' ');
      parsed.samples[line.substr(0, space)] = std::stod(line.substr(space + 1));
    }
  }
  return parsed;
}

TEST(ObserveHttpTest, ExpositionCountsGpusAndEscapesLabels) {
  CoreSnapshot snapshot;
  snapshot.status.set_running_jobs(1);
  snapshot.status.set_queued_jobs(2);
  const std::string odd = "a\"b\\c";  // a GPU type name that needs escaping
  for (auto [alive, busy, type] : {std::tuple{true, true, std::string("v100")},
                                   std::tuple{true, false, std::string("v100")},
                                   std::tuple{false, false, std::string("v100")},
                                   std::tuple{true, true, odd}}) {
    wire::WorkerInfo* worker = snapshot.workers.add_workers();
    worker->set_alive(alive);
    worker->set_busy(busy);
    worker->set_gpu_type(type);
  }
  wire::JobInfo& job = snapshot.jobs.emplace_back();
  job.set_id(7);
  job.set_state(wire::RUNNING);
  job.set_attempts(3);
  job.set_failures(1);
  wire::JobTypeStats* stats = job.add_per_type();
  stats->set_gpu_type("v100");
  stats->set_allocation(0.25);
  wire::JobInfo& done = snapshot.jobs.emplace_back();
  done.set_id(8);
  done.set_state(wire::DONE);
  done.set_attempts(2);
  done.add_per_type()->set_gpu_type("v100");
  Observations observations;
  observations.SolveFinished(0.02);
  const Parsed m = Parse(RenderPrometheus(snapshot, observations));
  EXPECT_EQ(m.samples.at("gavel_jobs{state=\"running\"}"), 1);
  EXPECT_EQ(m.samples.at("gavel_jobs{state=\"queued\"}"), 2);
  EXPECT_EQ(m.samples.at("gavel_gpus{gpu_type=\"v100\",state=\"busy\"}"), 1);
  EXPECT_EQ(m.samples.at("gavel_gpus{gpu_type=\"v100\",state=\"idle\"}"), 1);
  EXPECT_EQ(m.samples.at("gavel_gpus{gpu_type=\"v100\",state=\"dead\"}"), 1);
  EXPECT_EQ(m.samples.at("gavel_gpus{gpu_type=\"a\\\"b\\\\c\",state=\"busy\"}"), 1);
  EXPECT_EQ(m.samples.at("gavel_job_allocation_ratio{job_id=\"7\",gpu_type=\"v100\"}"), 0.25);
  EXPECT_EQ(m.samples.count("gavel_job_allocation_ratio{job_id=\"8\",gpu_type=\"v100\"}"), 0u)
      << "finished jobs have no per-job series";
  EXPECT_EQ(m.samples.at("gavel_job_launches_total"), 5);
  EXPECT_EQ(m.samples.at("gavel_job_crashes_total"), 1);
  EXPECT_EQ(m.samples.at("gavel_solve_duration_seconds_count"), 1);
  EXPECT_EQ(m.samples.at("gavel_solve_duration_seconds_bucket{le=\"0.01\"}"), 0);
  EXPECT_EQ(m.samples.at("gavel_solve_duration_seconds_bucket{le=\"0.050000000000000003\"}"), 1);
  // Prometheus' conventions: counters end in _total, histograms are typed so.
  for (const auto& [name, type] : m.types) {
    EXPECT_EQ(type == "counter", name.ends_with("_total")) << name;
  }
  EXPECT_EQ(m.types.at("gavel_round_duration_seconds"), "histogram");
}

TEST(ObserveHttpTest, RoutesAndRefusals) {
  const Observations observations;
  // Neither path reaches the core (no loop needed).
  const rpc::HttpHandler handler = MakeObserveHandler(nullptr, &observations);
  EXPECT_EQ(handler(rpc::HttpRequest{"POST", "/metrics", {}, ""}).status, 405);
  EXPECT_EQ(handler(rpc::HttpRequest{"GET", "/nope", {}, ""}).status, 404);
}

TEST(ObserveHttpTest, TheDashboardPageCarriesTheStateSafely) {
  const std::string page = DashboardPage("{\"x\": \"</script><b>\"}");
  EXPECT_EQ(page.find("@STATE@"), std::string::npos);
  EXPECT_NE(page.find("<\\/script><b>"), std::string::npos);
  EXPECT_EQ(page.find("\"</script><b>"), std::string::npos);
}

}  // namespace
}  // namespace gavel::daemon
