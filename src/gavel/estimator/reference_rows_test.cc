// ReferenceRows against independent truth: the shipped table. A table type's own row, fully
// observed, is the table's row and matches itself; a type hidden from the references, observed
// next to a few of them, is completed close to its true (table) row, and closer the more it
// was observed.
#include "gavel/estimator/reference_rows.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>

#include "gavel/core/shipped_table.h"

namespace gavel::estimator {
namespace {

std::vector<int> SingleGpuKeys(const ThroughputTable& t) {
  std::vector<int> keys;
  for (std::size_t k = 0; k < t.job_types().size(); ++k) {
    if (t.job_types()[k].scale_factor == 1) keys.push_back(static_cast<int>(k));
  }
  return keys;
}

std::vector<int> GpuTypes(const ThroughputTable& t) {
  std::vector<int> types;
  for (std::size_t g = 0; g < t.gpu_types().size(); ++g) {
    if (t.gpu_types()[g].find("unconsolidated") == std::string::npos) {
      types.push_back(static_cast<int>(g));
    }
  }
  return types;
}

// The table's normalised co-located throughput of `key` next to `partner` on `gpu_type`.
double TrueNormalized(const ThroughputTable& t, int gpu_type, int key, int partner) {
  const double alone = t.Isolated(gpu_type, key).value_or(0.0);
  const auto together = t.Colocated(gpu_type, key, partner);
  return alone > 0.0 && together ? (*together)[0] / alone : 0.0;
}

TEST(ReferenceRowsTest, AFullyObservedTableRowIsItselfAndMatchesItsOwnType) {
  const auto table = ShippedThroughputTable();
  auto rows = ReferenceRows::Create(table, 1);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  const std::vector<int> keys = SingleGpuKeys(*table);
  ASSERT_EQ((*rows)->num_references(), keys.size());
  for (const int key : {keys.front(), keys[keys.size() / 2], keys.back()}) {
    std::vector<RowObservation> observed;
    for (const int g : GpuTypes(*table)) {
      for (const int partner : keys) {
        observed.push_back({g, partner, TrueNormalized(*table, g, key, partner)});
      }
    }
    auto row = (*rows)->Complete(observed, PmfOptions{}, 1);
    ASSERT_TRUE(row.ok()) << row.status().ToString();
    EXPECT_FALSE(row->completed);
    EXPECT_EQ(row->match, key) << table->job_types()[static_cast<std::size_t>(key)].ToString();
    for (const RowObservation& o : observed) {
      EXPECT_EQ(row->values[*(*rows)->Column(o.gpu_type, o.partner_key)], o.normalized);
      EXPECT_EQ(*(*rows)->Reference(key, *(*rows)->Column(o.gpu_type, o.partner_key)),
                o.normalized);
    }
  }
}

TEST(ReferenceRowsTest, BadInputIsRefused) {
  const auto table = ShippedThroughputTable();
  EXPECT_FALSE(ReferenceRows::Create(table, 3).ok());  // no 3-GPU job type
  EXPECT_FALSE(ReferenceRows::Create(table, 1, {JobTypeKey{"No such model", 1}}).ok());
  auto rows = ReferenceRows::Create(table, 1);
  ASSERT_TRUE(rows.ok());
  EXPECT_FALSE((*rows)->Complete({}, PmfOptions{}, 1).ok()) << "nothing to complete from";
  const std::vector<RowObservation> outside = {{0, 10'000, 0.5}};
  EXPECT_FALSE((*rows)->Complete(outside, PmfOptions{}, 1).ok());
}

// Every single-GPU type of the shipped table in turn is hidden from the references and
// observed next to m of them (spread over the list) on every GPU type. Its stand-in, the
// reference it is matched to, predicts the entries it was not observed at better than the mean
// reference row (what is known without measurements) once m >= 3, and better with 16 partners
// than with one; the matched type is of the hidden one's model family (ResNet-18, LM, ...)
// for most types by then. The numbers are in docs/estimator.md.
TEST(ReferenceRowsTest, AHiddenTypeOfTheShippedTableIsMatchedCloseToItsTrueRow) {
  const auto table = ShippedThroughputTable();
  const std::vector<int> keys = SingleGpuKeys(*table);
  const std::vector<int> gpus = GpuTypes(*table);
  const PmfOptions pmf = OnlinePmfOptions();
  std::vector<double> matched_error, mean_row_error;
  std::vector<std::size_t> same_family;
  for (const std::size_t m : {1u, 3u, 8u, 16u}) {
    double completed_sum = 0.0, matched_sum = 0.0, mean_row_sum = 0.0;
    std::size_t entries = 0, family = 0;
    for (const int hidden : keys) {
      std::vector<JobTypeKey> references;
      std::vector<int> partners;
      for (const int k : keys) {
        if (k == hidden) continue;
        references.push_back(table->job_types()[static_cast<std::size_t>(k)]);
        partners.push_back(k);
      }
      auto rows = ReferenceRows::Create(table, 1, references);
      ASSERT_TRUE(rows.ok());
      std::vector<RowObservation> observed;
      std::vector<bool> seen(partners.size(), false);
      for (std::size_t i = 0; i < m; ++i) {
        const std::size_t p = (i * partners.size()) / m;
        seen[p] = true;
        for (const int g : gpus) {
          observed.push_back({g, partners[p], TrueNormalized(*table, g, hidden, partners[p])});
        }
      }
      auto row = (*rows)->Complete(observed, pmf, static_cast<std::uint64_t>(hidden));
      ASSERT_TRUE(row.ok()) << row.status().ToString();
      EXPECT_TRUE(row->completed);
      for (const int g : gpus) {
        for (std::size_t p = 0; p < partners.size(); ++p) {
          if (seen[p]) continue;
          const std::size_t c = *(*rows)->Column(g, partners[p]);
          const double truth = TrueNormalized(*table, g, hidden, partners[p]);
          completed_sum += std::abs(row->values[c] - truth);
          matched_sum += std::abs(*(*rows)->Reference(row->match, c) - truth);
          double mean_row = 0.0;
          for (const int k : partners) mean_row += *(*rows)->Reference(k, c);
          mean_row_sum += std::abs(mean_row / static_cast<double>(partners.size()) - truth);
          ++entries;
        }
      }
      const std::string& model = table->job_types()[static_cast<std::size_t>(hidden)].model;
      const std::string& matched = table->job_types()[static_cast<std::size_t>(row->match)].model;
      family += model.substr(0, model.find(' ')) == matched.substr(0, matched.find(' '));
    }
    const double n = static_cast<double>(entries);
    matched_error.push_back(matched_sum / n);
    mean_row_error.push_back(mean_row_sum / n);
    same_family.push_back(family);
    std::printf("partners %2zu: mean abs error of the matched row %.4f, of the completed row "
                "%.4f, of the mean row %.4f; same model family %zu/%zu\n",
                m, matched_sum / n, completed_sum / n, mean_row_sum / n, family, keys.size());
  }
  for (std::size_t i = 1; i < matched_error.size(); ++i) {
    EXPECT_LT(matched_error[i], mean_row_error[i]) << i;
  }
  EXPECT_LT(matched_error.back(), matched_error.front());
  EXPECT_GT(same_family.back(), keys.size() / 2);
}

// A table whose normalised co-located throughputs are exactly of rank 2: N[i][(g, k)] =
// u_i · v_(g,k) with positive factors, 3 GPU types, 14 job types (alone: 10 + i steps/s).
std::shared_ptr<const ThroughputTable> LowRankTable(std::vector<std::vector<double>>& truth) {
  constexpr int kTypes = 14;
  const std::vector<std::string> gpus = {"k80", "p100", "v100"};
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> factor(0.25, 0.7);
  std::vector<std::array<double, 2>> u(kTypes);
  std::vector<std::array<double, 2>> v(gpus.size() * kTypes);
  for (auto& f : u) f = {factor(rng), factor(rng)};
  for (auto& f : v) f = {factor(rng), factor(rng)};
  truth.assign(kTypes, std::vector<double>(gpus.size() * kTypes));
  for (int i = 0; i < kTypes; ++i) {
    for (std::size_t c = 0; c < v.size(); ++c) {
      truth[static_cast<std::size_t>(i)][c] = u[static_cast<std::size_t>(i)][0] * v[c][0] +
                                              u[static_cast<std::size_t>(i)][1] * v[c][1];
    }
  }
  const auto model = [](int i) { return "('Model " + std::to_string(100 + i) + "', 1)"; };
  std::string json = "{";
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    json += (g ? ",\"" : "\"") + gpus[g] + "\": {";
    for (int i = 0; i < kTypes; ++i) {
      const double alone_i = 10.0 + i;
      json += (i ? ",\"" : "\"") + model(i) + "\": {\"null\": " + std::to_string(alone_i);
      for (int k = 0; k < kTypes; ++k) {
        const double alone_k = 10.0 + k;
        const double mine = truth[static_cast<std::size_t>(i)][g * kTypes + static_cast<std::size_t>(k)];
        const double theirs = truth[static_cast<std::size_t>(k)][g * kTypes + static_cast<std::size_t>(i)];
        char pair[128];
        std::snprintf(pair, sizeof pair, "[%.17g, %.17g]", mine * alone_i, theirs * alone_k);
        json += ", \"" + model(k) + "\": " + pair;
      }
      json += "}";
    }
    json += "}";
  }
  json += "}";
  auto table = ThroughputTable::Parse(json, "low-rank table");
  GAVEL_CHECK_MSG(table.ok(), table.status().ToString().c_str());
  return std::make_shared<const ThroughputTable>(std::move(table).value());
}

// Independent truth: a type hidden from a table of exact rank 2, observed next to m partners
// on every GPU type, is completed to its true row (within 0.02 at every unobserved entry once
// m >= 2, i.e. 6 observations for 2 unknown factors) and matched to the reference whose true
// row is closest to its own.
TEST(ReferenceRowsTest, AHiddenRowOfALowRankTableIsRecovered) {
  std::vector<std::vector<double>> truth;
  const auto table = LowRankTable(truth);
  const std::size_t types = truth.size();
  const std::vector<int> gpus = GpuTypes(*table);
  const PmfOptions pmf = OnlinePmfOptions();
  for (const std::size_t hidden : {std::size_t{0}, std::size_t{5}, types - 1}) {
    std::vector<JobTypeKey> references;
    std::vector<int> partners;
    for (std::size_t k = 0; k < types; ++k) {
      if (k == hidden) continue;
      references.push_back(table->job_types()[k]);
      partners.push_back(static_cast<int>(k));
    }
    auto rows = ReferenceRows::Create(table, 1, references);
    ASSERT_TRUE(rows.ok()) << rows.status().ToString();
    for (const std::size_t m : {2u, 4u}) {
      std::vector<RowObservation> observed;
      std::vector<bool> seen(types, false);
      for (std::size_t i = 0; i < m; ++i) {
        const int p = partners[(i * partners.size()) / m];
        seen[static_cast<std::size_t>(p)] = true;
        for (const int g : gpus) {
          observed.push_back({g, p, TrueNormalized(*table, g, static_cast<int>(hidden), p)});
        }
      }
      auto row = (*rows)->Complete(observed, pmf, hidden);
      ASSERT_TRUE(row.ok()) << row.status().ToString();
      double worst = 0.0;
      for (const int g : gpus) {
        for (const int p : partners) {
          if (seen[static_cast<std::size_t>(p)]) continue;
          const double t = TrueNormalized(*table, g, static_cast<int>(hidden), p);
          worst = std::max(worst, std::abs(row->values[*(*rows)->Column(g, p)] - t));
        }
      }
      EXPECT_LT(worst, 0.02) << "hidden " << hidden << ", m " << m;
      // The match is the reference whose true row is closest in cosine to the hidden one's.
      const auto cosine = [&](std::size_t x) {
        double dot = 0.0, nx = 0.0, nh = 0.0;
        for (std::size_t c = 0; c < truth[x].size(); ++c) {
          dot += truth[x][c] * truth[hidden][c];
          nx += truth[x][c] * truth[x][c];
          nh += truth[hidden][c] * truth[hidden][c];
        }
        return 1.0 - dot / std::sqrt(nx * nh);
      };
      std::size_t closest = static_cast<std::size_t>(partners[0]);
      for (const int p : partners) {
        if (cosine(static_cast<std::size_t>(p)) < cosine(closest)) closest = static_cast<std::size_t>(p);
      }
      EXPECT_EQ(row->match, static_cast<int>(closest)) << "hidden " << hidden << ", m " << m;
    }
  }
}

}  // namespace
}  // namespace gavel::estimator
