#include "gavel/core/first_seen_index.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace gavel {
namespace {

std::span<const unsigned char> Bytes(const std::string& s) {
  return {reinterpret_cast<const unsigned char*>(s.data()), s.size()};
}

// Against the plain reference (an unordered_map's try_emplace with the next number): random
// keys of many lengths (the empty one too), from small alphabets so that they repeat, with
// prefixes of one another, through several rehashes.
TEST(FirstSeenIndexTest, NumbersKeysLikeAMapInFirstSeenOrder) {
  for (const std::size_t reserved : {std::size_t{0}, std::size_t{3}, std::size_t{5000}}) {
    std::mt19937_64 rng(reserved + 1);
    FirstSeenIndex index(reserved);
    std::unordered_map<std::string, std::size_t> reference;
    for (int i = 0; i < 20000; ++i) {
      std::string key(rng() % 20, '\0');
      for (char& c : key) c = static_cast<char>(rng() % 3);
      const auto [it, added] = reference.try_emplace(key, reference.size());
      const auto [number, is_new] = index.Insert(Bytes(key));
      ASSERT_EQ(number, it->second) << i;
      ASSERT_EQ(is_new, added) << i;
      ASSERT_EQ(index.size(), reference.size());
    }
    EXPECT_GT(reference.size(), 1000u);  // enough distinct keys to rehash several times
  }
}

TEST(FirstSeenIndexTest, TellsApartKeysThatDifferInOneByteOrInLength) {
  FirstSeenIndex index;
  const std::string a(24, 'x');
  std::string b = a;
  b[23] = 'y';
  EXPECT_EQ(index.Insert(Bytes(a)), std::make_pair(std::size_t{0}, true));
  EXPECT_EQ(index.Insert(Bytes(b)), std::make_pair(std::size_t{1}, true));
  EXPECT_EQ(index.Insert(Bytes(a.substr(0, 23))), std::make_pair(std::size_t{2}, true));
  EXPECT_EQ(index.Insert(Bytes(a)), std::make_pair(std::size_t{0}, false));
  EXPECT_EQ(index.Insert(Bytes("")), std::make_pair(std::size_t{3}, true));
  EXPECT_EQ(index.Insert(Bytes("")), std::make_pair(std::size_t{3}, false));
}

}  // namespace
}  // namespace gavel
