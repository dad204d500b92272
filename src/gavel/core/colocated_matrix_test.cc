#include "gavel/core/colocated_matrix.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "gavel/core/shipped_table.h"

namespace gavel {
namespace {

// Every entry of the matrix against the table's own lookup (the oracle): the same value, bit
// for bit, {0, 0} where the table has none, for every ordered pair of the keys
// added so far (a key with itself included) and every type.
void ExpectMatchesTable(const ColocatedMatrix& matrix, const ThroughputTable& table,
                        const std::vector<int>& added) {
  ASSERT_EQ(matrix.num_keys(), static_cast<int>(added.size()));
  for (int key_a : added) {
    for (int key_b : added) {
      const int a = matrix.PositionOf(key_a);
      const int b = matrix.PositionOf(key_b);
      ASSERT_GE(a, 0);
      ASSERT_GE(b, 0);
      const auto row = matrix.Row(a, b);
      ASSERT_EQ(row.size(), matrix.table_types().size());
      bool usable = false;
      for (std::size_t t = 0; t < row.size(); ++t) {
        const auto truth = table.Colocated(matrix.table_types()[t], key_a, key_b);
        const std::array<double, 2> expected = truth.value_or(std::array<double, 2>{0.0, 0.0});
        ASSERT_EQ(row[t][0], expected[0]) << key_a << " " << key_b << " " << t;
        ASSERT_EQ(row[t][1], expected[1]) << key_a << " " << key_b << " " << t;
        usable = usable || expected[0] > 0.0 || expected[1] > 0.0;
      }
      ASSERT_EQ(matrix.Usable(a, b), usable) << key_a << " " << key_b;
    }
  }
}

// The shipped table's 83 keys added in a random order, checked while the matrix grows past
// its capacities (8, 16, 32, 64 positions) and at the end; the types in a scrambled order
// with the *_unconsolidated ones, where some keys have no entries at all.
TEST(ColocatedMatrixTest, EqualsTheTablesLookupForEveryPairAndTypeWhileKeysArrive) {
  const auto table = ShippedThroughputTable();
  std::vector<int> types(table->gpu_types().size());
  std::iota(types.begin(), types.end(), 0);
  std::reverse(types.begin(), types.end());
  ColocatedMatrix matrix(*table, types);
  std::vector<int> keys(table->job_types().size());
  std::iota(keys.begin(), keys.end(), 0);
  std::shuffle(keys.begin(), keys.end(), std::mt19937(12));
  std::vector<int> added;
  for (int key : keys) {
    EXPECT_EQ(matrix.PositionOf(key), -1);
    const int position = matrix.Add(key);
    EXPECT_EQ(position, static_cast<int>(added.size()));
    EXPECT_EQ(matrix.Add(key), position);  // a key is added once
    added.push_back(key);
    const std::size_t n = added.size();
    if (n <= 2 || n == 8 || n == 9 || n == 17 || n == 33 || n == 65 || n == keys.size()) {
      SCOPED_TRACE(n);
      ExpectMatchesTable(matrix, *table, added);
    }
  }
  // Every kind of pair occurs: ones the table knows (same scale factor) and ones it lacks
  // (different), usable ones and known ones that cannot share a GPU anywhere.
  int known = 0;
  int unknown = 0;
  int usable = 0;
  int known_unusable = 0;
  for (int a = 0; a < matrix.num_keys(); ++a) {
    for (int b = 0; b < matrix.num_keys(); ++b) {
      // Positions are in order of addition.
      const int key_a = added[static_cast<std::size_t>(a)];
      const int key_b = added[static_cast<std::size_t>(b)];
      const bool in_table = table->Colocated(types[0], key_a, key_b).has_value();
      (in_table ? known : unknown)++;
      if (matrix.Usable(a, b)) ++usable;
      if (in_table && !matrix.Usable(a, b)) ++known_unusable;
    }
  }
  EXPECT_GT(known, 0);
  EXPECT_GT(unknown, 0);
  EXPECT_GT(usable, 0);
  EXPECT_GT(known_unusable, 0);
}

// A pair listed under one partner only reads the same from either side; a pair the file lacks
// on one type reads {0, 0} there but its value on the other; a key with no pair entries and
// a GPU type without the keys read {0, 0}, and such pairs are not usable.
TEST(ColocatedMatrixTest, MirrorsOneSidedEntriesAndZeroesMissingOnes) {
  const auto table = ThroughputTable::Parse(R"j({
      "v100": {"('A3C', 1)": {"null": 7.0, "('CycleGAN', 1)": [4.5, 3.0]},
               "('CycleGAN', 1)": {"null": 4.0},
               "('Pong', 1)": {"null": 2.0}},
      "k80": {"('A3C', 1)": {"null": 1.0},
              "('CycleGAN', 1)": {"null": 0.5, "('A3C', 1)": [0.25, 0.75]}}})j",
                                            "sparse.json");
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  const int k80 = *table->GpuTypeIndex("k80");
  const int v100 = *table->GpuTypeIndex("v100");
  const int a3c = *table->KeyIndex(JobTypeKey{"A3C", 1});
  const int cyclegan = *table->KeyIndex(JobTypeKey{"CycleGAN", 1});
  const int pong = *table->KeyIndex(JobTypeKey{"Pong", 1});
  ColocatedMatrix matrix(*table, {v100, k80});
  const int p_cyclegan = matrix.Add(cyclegan);
  const int p_pong = matrix.Add(pong);
  const int p_a3c = matrix.Add(a3c);
  EXPECT_EQ(matrix.Row(p_a3c, p_cyclegan)[0], (std::array<double, 2>{4.5, 3.0}));
  EXPECT_EQ(matrix.Row(p_cyclegan, p_a3c)[0], (std::array<double, 2>{3.0, 4.5}));
  EXPECT_EQ(matrix.Row(p_a3c, p_cyclegan)[1], (std::array<double, 2>{0.75, 0.25}));
  EXPECT_EQ(matrix.Row(p_cyclegan, p_a3c)[1], (std::array<double, 2>{0.25, 0.75}));
  EXPECT_TRUE(matrix.Usable(p_a3c, p_cyclegan));
  EXPECT_EQ(matrix.Row(p_a3c, p_pong)[0], (std::array<double, 2>{0.0, 0.0}));
  EXPECT_EQ(matrix.Row(p_pong, p_pong)[1], (std::array<double, 2>{0.0, 0.0}));  // no Pong on k80
  EXPECT_FALSE(matrix.Usable(p_a3c, p_pong));
  EXPECT_FALSE(matrix.Usable(p_pong, p_pong));
  EXPECT_EQ(matrix.Row(p_pong, p_a3c)[0], (std::array<double, 2>{0.0, 0.0}));
  ExpectMatchesTable(matrix, *table, {cyclegan, pong, a3c});
}

}  // namespace
}  // namespace gavel
