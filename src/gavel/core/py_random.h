// PyRandom: a bit-exact port of CPython 3.11's `random.Random` (MT19937), so that a seed
// gives the same jobs, arrival times, shuffles and pairings as the original Python Gavel.
// Covers what the original uses: seeding with a non-negative integer (init_by_array over its
// 32-bit little-endian words), random(), uniform(), getrandbits(k <= 64), _randbelow(),
// randrange(n), randint(), choice(), shuffle() and sample(). Value type; not synchronised.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "gavel/core/check.h"

namespace gavel {

class PyRandom {
 public:
  // random.Random(seed) for a non-negative integer seed.
  explicit PyRandom(std::uint64_t seed);

  // random.random(): a double in [0, 1) with 53 random bits.
  double Random();
  // random.uniform(a, b) = a + (b - a) * random().
  double Uniform(double a, double b) { return a + (b - a) * Random(); }
  // random.getrandbits(k), 1 <= k <= 64.
  std::uint64_t GetRandBits(int k);
  // random._randbelow(n) for n >= 1: rejection sampling on bit_length(n) bits.
  std::uint64_t RandBelow(std::uint64_t n);
  // random.randrange(n) = _randbelow(n).
  std::uint64_t RandRange(std::uint64_t n) { return RandBelow(n); }
  // random.randint(a, b) = a + _randbelow(b - a + 1).
  std::int64_t RandInt(std::int64_t a, std::int64_t b);
  // Index of random.choice(seq) for a sequence of `size` elements (size >= 1).
  std::size_t ChoiceIndex(std::size_t size) { return static_cast<std::size_t>(RandBelow(size)); }
  // random.shuffle(x), in place.
  template <class T>
  void Shuffle(std::vector<T>& x) {
    for (std::size_t i = x.size(); i-- > 1;) {
      const auto j = static_cast<std::size_t>(RandBelow(i + 1));
      std::swap(x[i], x[j]);
    }
  }
  // Indices chosen by random.sample(population, k) for a population of `n` (k <= n).
  std::vector<std::size_t> SampleIndices(std::size_t n, std::size_t k);

  // The next raw 32-bit output of the generator (genrand_uint32).
  std::uint32_t NextUint32();

 private:
  static constexpr int kN = 624;
  void InitGenrand(std::uint32_t s);
  void InitByArray(const std::vector<std::uint32_t>& key);

  std::array<std::uint32_t, kN> mt_{};
  int index_ = kN + 1;
};

}  // namespace gavel
