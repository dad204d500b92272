#include "gavel/core/py_random.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <unordered_set>

namespace gavel {

PyRandom::PyRandom(std::uint64_t seed) {
  // CPython seeds with the absolute value's 32-bit words, least significant first; 0 → [0].
  std::vector<std::uint32_t> key;
  do {
    key.push_back(static_cast<std::uint32_t>(seed & 0xffffffffu));
    seed >>= 32;
  } while (seed != 0);
  InitByArray(key);
}

void PyRandom::InitGenrand(std::uint32_t s) {
  mt_[0] = s;
  for (int i = 1; i < kN; ++i) {
    const std::uint32_t prev = mt_[static_cast<std::size_t>(i - 1)];
    mt_[static_cast<std::size_t>(i)] =
        1812433253u * (prev ^ (prev >> 30)) + static_cast<std::uint32_t>(i);
  }
  index_ = kN;
}

void PyRandom::InitByArray(const std::vector<std::uint32_t>& key) {
  InitGenrand(19650218u);
  std::size_t i = 1;
  std::size_t j = 0;
  const std::size_t length = key.size();
  for (std::size_t k = std::max<std::size_t>(kN, length); k > 0; --k) {
    const std::uint32_t prev = mt_[i - 1];
    mt_[i] = (mt_[i] ^ ((prev ^ (prev >> 30)) * 1664525u)) + key[j] + static_cast<std::uint32_t>(j);
    ++i;
    ++j;
    if (i >= kN) {
      mt_[0] = mt_[kN - 1];
      i = 1;
    }
    if (j >= length) j = 0;
  }
  for (std::size_t k = kN - 1; k > 0; --k) {
    const std::uint32_t prev = mt_[i - 1];
    mt_[i] = (mt_[i] ^ ((prev ^ (prev >> 30)) * 1566083941u)) - static_cast<std::uint32_t>(i);
    ++i;
    if (i >= kN) {
      mt_[0] = mt_[kN - 1];
      i = 1;
    }
  }
  mt_[0] = 0x80000000u;
  index_ = kN;
}

std::uint32_t PyRandom::NextUint32() {
  constexpr std::uint32_t kUpperMask = 0x80000000u;
  constexpr std::uint32_t kLowerMask = 0x7fffffffu;
  constexpr std::uint32_t kMatrixA = 0x9908b0dfu;
  constexpr int kM = 397;
  if (index_ >= kN) {
    for (int k = 0; k < kN; ++k) {
      const std::uint32_t y = (mt_[static_cast<std::size_t>(k)] & kUpperMask) |
                              (mt_[static_cast<std::size_t>((k + 1) % kN)] & kLowerMask);
      mt_[static_cast<std::size_t>(k)] = mt_[static_cast<std::size_t>((k + kM) % kN)] ^ (y >> 1) ^
                                         ((y & 1u) != 0 ? kMatrixA : 0u);
    }
    index_ = 0;
  }
  std::uint32_t y = mt_[static_cast<std::size_t>(index_++)];
  y ^= (y >> 11);
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= (y >> 18);
  return y;
}

double PyRandom::Random() {
  const std::uint32_t a = NextUint32() >> 5;
  const std::uint32_t b = NextUint32() >> 6;
  return (static_cast<double>(a) * 67108864.0 + static_cast<double>(b)) *
         (1.0 / 9007199254740992.0);
}

std::uint64_t PyRandom::GetRandBits(int k) {
  GAVEL_CHECK(k >= 1 && k <= 64);
  if (k <= 32) return NextUint32() >> (32 - k);
  // CPython fills 32-bit words from the least significant; the last one keeps its top bits.
  const std::uint64_t low = NextUint32();
  const std::uint64_t high = NextUint32() >> (64 - k);
  return low | (high << 32);
}

std::uint64_t PyRandom::RandBelow(std::uint64_t n) {
  GAVEL_CHECK(n >= 1);
  const int k = std::bit_width(n);
  std::uint64_t r = GetRandBits(k);
  while (r >= n) r = GetRandBits(k);
  return r;
}

std::int64_t PyRandom::RandInt(std::int64_t a, std::int64_t b) {
  GAVEL_CHECK(a <= b);
  return a + static_cast<std::int64_t>(RandBelow(static_cast<std::uint64_t>(b - a) + 1));
}

std::vector<std::size_t> PyRandom::SampleIndices(std::size_t n, std::size_t k) {
  GAVEL_CHECK(k <= n);
  std::vector<std::size_t> result(k);
  std::size_t setsize = 21;  // CPython: the size of a small set, in the pool/set trade-off
  if (k > 5) {
    setsize += static_cast<std::size_t>(
        std::pow(4.0, std::ceil(std::log(static_cast<double>(k) * 3.0) / std::log(4.0))));
  }
  if (n <= setsize) {
    std::vector<std::size_t> pool(n);
    for (std::size_t i = 0; i < n; ++i) pool[i] = i;
    for (std::size_t i = 0; i < k; ++i) {
      const auto j = static_cast<std::size_t>(RandBelow(n - i));
      result[i] = pool[j];
      pool[j] = pool[n - i - 1];
    }
  } else {
    std::unordered_set<std::size_t> selected;
    for (std::size_t i = 0; i < k; ++i) {
      auto j = static_cast<std::size_t>(RandBelow(n));
      while (selected.contains(j)) j = static_cast<std::size_t>(RandBelow(n));
      selected.insert(j);
      result[i] = j;
    }
  }
  return result;
}

}  // namespace gavel
