// CompleteProfiledGpuType against a type whose truth is known: the shipped table's v100, hidden
// from the table and "profiled" from its own values (all single-GPU rates, some pairs).
#include "gavel/estimator/profiled_gpu_type.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "gavel/core/snapshot.h"

namespace gavel::estimator {
namespace {

using ::testing::HasSubstr;

nlohmann::json ShippedJson() {
  std::ifstream in(DefaultThroughputsFile());
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

// The shipped table without v100 (and its unconsolidated variant), and the true v100 table.
struct Hidden {
  std::shared_ptr<const ThroughputTable> rest;
  ThroughputTable truth;
};

Hidden HideV100() {
  nlohmann::json all = ShippedJson();
  nlohmann::json v100 = {{"v100", all["v100"]}};
  all.erase("v100");
  all.erase("v100_unconsolidated");
  auto rest = ThroughputTable::Parse(all.dump(), "rest");
  auto truth = ThroughputTable::Parse(v100.dump(), "v100");
  EXPECT_TRUE(rest.ok() && truth.ok());
  return {std::make_shared<const ThroughputTable>(std::move(rest).value()),
          std::move(truth).value()};
}

std::vector<JobTypeKey> SingleGpuKeys(const ThroughputTable& t) {
  std::vector<JobTypeKey> keys;
  for (const JobTypeKey& k : t.job_types()) {
    if (k.scale_factor == 1) keys.push_back(k);
  }
  return keys;
}

// Mean |estimate - truth| of the normalised co-located rates (rate next to partner / alone)
// over the single-GPU pairs not in `measured`.
double UnmeasuredPairError(const ThroughputTable& out, const ThroughputTable& truth,
                           const std::set<std::pair<std::string, std::string>>& measured) {
  double sum = 0.0;
  int count = 0;
  for (const JobTypeKey& a : SingleGpuKeys(truth)) {
    for (const JobTypeKey& b : SingleGpuKeys(truth)) {
      if (measured.contains({a.model, b.model}) || measured.contains({b.model, a.model})) continue;
      const double alone_true = *truth.Isolated("v100", a);
      const double alone_out = *out.Isolated("v100", a);
      const auto t = truth.Colocated("v100", a, b);
      const auto o = out.Colocated("v100", a, b);
      EXPECT_TRUE(o.has_value()) << a.ToString() << " " << b.ToString();
      if (!t || !o || alone_true <= 0.0) continue;
      sum += std::abs((*o)[0] / alone_out - (*t)[0] / alone_true);
      ++count;
    }
  }
  return sum / count;
}

// The observed third of the pairs is drawn with `selection_seed` (7 chose the ridge in
// ProfiledPmfOptions; the others check it).
class HiddenV100Test : public ::testing::TestWithParam<unsigned> {};

TEST_P(HiddenV100Test, IsRebuiltFromItsMeasurementsBetterThanFromTheOtherTypes) {
  const Hidden h = HideV100();
  ProfileMeasurements m;
  for (const JobTypeKey& k : SingleGpuKeys(h.truth)) m.isolated[k.model] = *h.truth.Isolated("v100", k);
  // A third of the pairs measured, chosen with a fixed seed.
  std::mt19937 rng(GetParam());
  std::set<std::pair<std::string, std::string>> measured;
  const auto keys = SingleGpuKeys(h.truth);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    for (std::size_t j = i; j < keys.size(); ++j) {
      if (rng() % 3 != 0) continue;
      const auto t = *h.truth.Colocated("v100", keys[i], keys[j]);
      m.pairs.push_back({keys[i].model, keys[j].model, t});
      measured.insert({keys[i].model, keys[j].model});
    }
  }
  const auto result = CompleteProfiledGpuType(h.rest, m, {.gpu_type = "v100", .seed = 1});
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_TRUE(result->derived_isolated.empty());
  EXPECT_EQ(result->pairs_measured, static_cast<int>(measured.size()));
  EXPECT_EQ(result->pairs_completed, 26 * 27 / 2 - result->pairs_measured);
  const auto out = ThroughputTable::Parse(result->table_json, "profiled");
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  // Every shipped key of the type is written, measured values exactly.
  EXPECT_EQ(out->job_types(), h.truth.job_types());
  for (const JobTypeKey& k : keys) EXPECT_EQ(out->Isolated("v100", k), h.truth.Isolated("v100", k));
  for (const auto& p : m.pairs) {
    EXPECT_EQ(out->Colocated("v100", JobTypeKey{p.a, 1}, JobTypeKey{p.b, 1}), p.rates);
  }
  // Unmeasured pairs: closer to the truth than what the other types alone say: their mean
  // normalised rate for the pair, or the nearest type's (p100).
  const double error = UnmeasuredPairError(*out, h.truth, measured);
  double prior = 0.0, nearest = 0.0;
  int count = 0;
  for (const JobTypeKey& a : keys) {
    for (const JobTypeKey& b : keys) {
      if (measured.contains({a.model, b.model}) || measured.contains({b.model, a.model})) continue;
      double mean = 0.0;
      int types = 0;
      for (const std::string type : {"k80", "p100"}) {
        const double alone = *h.rest->Isolated(type, a);
        if (alone > 0.0) mean += (*h.rest->Colocated(type, a, b))[0] / alone, ++types;
      }
      const double alone_true = *h.truth.Isolated("v100", a);
      if (types == 0 || alone_true <= 0.0) continue;
      const double truth = (*h.truth.Colocated("v100", a, b))[0] / alone_true;
      prior += std::abs(mean / types - truth);
      const double p100 = *h.rest->Isolated("p100", a);
      nearest += std::abs((p100 > 0.0 ? (*h.rest->Colocated("p100", a, b))[0] / p100 : 0.0) - truth);
      ++count;
    }
  }
  prior /= count;
  nearest /= count;
  std::printf("unmeasured pairs: completion error %.4f, mean of the types %.4f, p100 %.4f\n",
              error, prior, nearest);
  EXPECT_EQ(result->nearest_type, "p100");
  EXPECT_LT(error, 0.85 * prior);
  EXPECT_LT(error, 0.85 * nearest);
}

INSTANTIATE_TEST_SUITE_P(Selections, HiddenV100Test, ::testing::Values(7u, 11u, 13u, 17u));

TEST(ProfiledGpuTypeTest, MultiGpuRowsFollowTheNearestTypesScaling) {
  const Hidden h = HideV100();
  // Two measured models at twice p100's rates: p100 is the nearest type, level 2.
  ProfileMeasurements m;
  for (const std::string model : {"ResNet-18 (batch size 64)", "ResNet-50 (batch size 64)"}) {
    m.isolated[model] = 2.0 * *h.rest->Isolated("p100", JobTypeKey{model, 1});
  }
  const auto result = CompleteProfiledGpuType(h.rest, m, {.gpu_type = "h100"});
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->nearest_type, "p100");
  EXPECT_NEAR(result->speed_level, 2.0, 1e-12);
  EXPECT_EQ(result->derived_isolated.size(), 24u);
  EXPECT_EQ(result->pairs_measured, 0);
  const auto out = ThroughputTable::Parse(result->table_json, "profiled");
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  for (const JobTypeKey& k : h.rest->job_types()) {
    const double p100 = *h.rest->Isolated("p100", k);
    // Every rate alone, whatever the scale factor, is p100's times the level.
    EXPECT_NEAR(*out->Isolated("h100", k), 2.0 * p100, 1e-9 * p100) << k.ToString();
  }
  // Pairs keep p100's normalised rates (no pair measured, nothing to complete from).
  const JobTypeKey a{"Transformer (batch size 32)", 4}, b{"ResNet-50 (batch size 32)", 4};
  const auto p = *h.rest->Colocated("p100", a, b);
  const auto o = *out->Colocated("h100", a, b);
  EXPECT_NEAR(o[0], 2.0 * p[0], 1e-9);
  EXPECT_NEAR(o[1], 2.0 * p[1], 1e-9);
}

TEST(ProfiledGpuTypeTest, TwoJobsOfOneTypeAreWrittenAsOneSymmetricEntry) {
  const Hidden h = HideV100();
  ProfileMeasurements m;
  m.isolated["A3C"] = 10.0;
  m.pairs.push_back({"A3C", "A3C", {4.0, 6.0}});  // the two processes' rates differ a little
  const auto result = CompleteProfiledGpuType(h.rest, m, {.gpu_type = "h100"});
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  const auto out = ThroughputTable::Parse(result->table_json, "profiled");
  ASSERT_TRUE(out.ok()) << out.status().ToString();  // the mirror check holds
  const JobTypeKey a3c{"A3C", 1};
  EXPECT_EQ(out->Colocated("h100", a3c, a3c), (std::array<double, 2>{5.0, 5.0}));
}

TEST(ProfiledGpuTypeTest, BadInputIsNamed) {
  const Hidden h = HideV100();
  ProfileMeasurements m;
  m.isolated["ResNet-18 (batch size 64)"] = 10.0;
  EXPECT_THAT(CompleteProfiledGpuType(h.rest, m, {.gpu_type = "k80"}).status().message(),
              HasSubstr("already a GPU type"));
  m.isolated["GPT (batch size 1)"] = 1.0;
  EXPECT_THAT(CompleteProfiledGpuType(h.rest, m, {.gpu_type = "h100"}).status().message(),
              HasSubstr("\"GPT (batch size 1)\" is not a single-GPU job type"));
  m.isolated.erase("GPT (batch size 1)");
  m.isolated["ResNet-18 (batch size 64)"] = -1.0;
  EXPECT_THAT(CompleteProfiledGpuType(h.rest, m, {.gpu_type = "h100"}).status().message(),
              HasSubstr("finite and >= 0"));
  m.isolated["ResNet-18 (batch size 64)"] = 0.0;
  EXPECT_THAT(CompleteProfiledGpuType(h.rest, m, {.gpu_type = "h100"}).status().message(),
              HasSubstr("no job type ran"));
}

}  // namespace
}  // namespace gavel::estimator
