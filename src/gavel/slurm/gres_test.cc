// ParseGpuGres against GRES strings written the ways slurmctld prints them, built here from a
// known layout (random types, counts, socket annotations and non-GPU GRES in between): the
// parse must give back the layout, types merged and lower-cased.
#include "gavel/slurm/gres.h"

#include <map>
#include <random>

#include <gtest/gtest.h>

namespace gavel::slurm {
namespace {

TEST(ParseGpuGres, ReadsTheFormsSlurmPrints) {
  EXPECT_EQ(*ParseGpuGres("gpu:k80:2"), (std::vector<GpuGres>{{"k80", 2}}));
  EXPECT_EQ(*ParseGpuGres("gpu:k80:1,gpu:v100:1"),
            (std::vector<GpuGres>{{"k80", 1}, {"v100", 1}}));
  EXPECT_EQ(*ParseGpuGres("gpu:A100:8(S:0-1),mps:400"), (std::vector<GpuGres>{{"a100", 8}}));
  EXPECT_EQ(*ParseGpuGres("gpu:v100:2(S:0,1),gpu:v100:2(S:2)"),
            (std::vector<GpuGres>{{"v100", 4}}));
  EXPECT_TRUE(ParseGpuGres("(null)")->empty());
  EXPECT_TRUE(ParseGpuGres("")->empty());
  EXPECT_TRUE(ParseGpuGres("mps:100,nic:2")->empty());
}

TEST(ParseGpuGres, RefusesUntypedOrMalformedGpusNamingTheEntry) {
  for (const char* bad : {"gpu:4", "gpu::4", "gpu:k80:x", "gpu:k80:-1", "gpu:k80:2:3",
                          "gpu:k80:99999999999"}) {
    Result<std::vector<GpuGres>> parsed = ParseGpuGres(std::string("mps:1,") + bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_NE(parsed.status().message().find(bad), std::string::npos)
        << parsed.status().message();
  }
}

TEST(ParseGpuGres, GivesBackRandomLayouts) {
  std::mt19937 random(7);
  const std::vector<std::string> types = {"k80", "P100", "v100", "a100"};
  for (int trial = 0; trial < 500; ++trial) {
    std::map<std::string, int> want;       // lower-cased type -> total
    std::vector<std::string> first_seen;   // order of first appearance
    std::string gres;
    const int entries = static_cast<int>(random() % 5);
    for (int e = 0; e < entries; ++e) {
      if (!gres.empty()) gres += ",";
      if (random() % 4 == 0) {
        gres += "mps:" + std::to_string(random() % 500);
        continue;
      }
      const std::string& type = types[random() % types.size()];
      const int count = 1 + static_cast<int>(random() % 8);
      gres += "gpu:" + type + ":" + std::to_string(count);
      if (random() % 2 == 0) gres += "(S:0-" + std::to_string(random() % 4) + ")";
      if (random() % 3 == 0) gres += "(S:0,1)";
      std::string lower = type;
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (want[lower] == 0) first_seen.push_back(lower);
      want[lower] += count;
    }
    Result<std::vector<GpuGres>> parsed = ParseGpuGres(gres);
    ASSERT_TRUE(parsed.ok()) << gres << ": " << parsed.status().message();
    ASSERT_EQ(parsed->size(), first_seen.size()) << gres;
    for (std::size_t i = 0; i < first_seen.size(); ++i) {
      EXPECT_EQ((*parsed)[i].type, first_seen[i]) << gres;
      EXPECT_EQ((*parsed)[i].count, want[first_seen[i]]) << gres;
    }
  }
}

}  // namespace
}  // namespace gavel::slurm
