// FirstSeenIndex: numbers byte-string keys 0, 1, 2, ... in the order they are first seen.
// Insert(key) answers the key's number and whether it was new. It is what a grouping pass
// needs (a std::unordered_map<std::string, std::size_t> with try_emplace does the same), with
// the keys stored back to back in one buffer and an open-addressing table (linear probing,
// power-of-two capacity) over them: no allocation per key, no division per lookup. The
// per-job decomposition groups every job of every allocation this way, hundreds of
// thousands of times in a long simulation.
//
// Value type; not synchronised.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <utility>
#include <vector>

namespace gavel {

class FirstSeenIndex {
 public:
  // Room for `keys` keys without rehashing.
  explicit FirstSeenIndex(std::size_t keys = 0) {
    std::size_t capacity = 16;
    while (capacity < 2 * keys) capacity *= 2;
    table_.assign(capacity, kEmpty);
  }

  std::size_t size() const { return offsets_.size(); }

  // The key's number (its position among the distinct keys seen) and whether it is new.
  std::pair<std::size_t, bool> Insert(std::span<const unsigned char> key) {
    const std::uint64_t hash = Hash(key);
    const std::size_t mask = table_.size() - 1;
    for (std::size_t probe = hash & mask;; probe = (probe + 1) & mask) {
      const std::uint32_t at = table_[probe];
      if (at == kEmpty) break;
      if (hashes_[at] == hash && Equal(at, key)) return {at, false};
    }
    const auto number = static_cast<std::uint32_t>(offsets_.size());
    offsets_.push_back(bytes_.size());
    hashes_.push_back(hash);
    bytes_.insert(bytes_.end(), key.begin(), key.end());
    if (2 * offsets_.size() > table_.size()) {
      Rehash(2 * table_.size());
    } else {
      Place(number);
    }
    return {number, true};
  }

 private:
  static constexpr std::uint32_t kEmpty = 0xffffffffu;

  // FNV-1a over 8-byte words (then the tail), finished with a 64-bit mix.
  static std::uint64_t Hash(std::span<const unsigned char> key) {
    std::uint64_t h = 0xcbf29ce484222325ULL ^ key.size();
    std::size_t i = 0;
    for (; i + 8 <= key.size(); i += 8) {
      std::uint64_t word;
      std::memcpy(&word, key.data() + i, 8);
      h = (h ^ word) * 0x100000001b3ULL;
      h ^= h >> 29;
    }
    for (; i < key.size(); ++i) h = (h ^ key[i]) * 0x100000001b3ULL;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h;
  }
  bool Equal(std::uint32_t number, std::span<const unsigned char> key) const {
    const std::size_t begin = offsets_[number];
    const std::size_t end = number + 1 < offsets_.size() ? offsets_[number + 1] : bytes_.size();
    return end - begin == key.size() &&
           (key.empty() || std::memcmp(bytes_.data() + begin, key.data(), key.size()) == 0);
  }
  void Place(std::uint32_t number) {
    const std::size_t mask = table_.size() - 1;
    std::size_t probe = hashes_[number] & mask;
    while (table_[probe] != kEmpty) probe = (probe + 1) & mask;
    table_[probe] = number;
  }
  void Rehash(std::size_t capacity) {
    table_.assign(capacity, kEmpty);
    for (std::uint32_t n = 0; n < offsets_.size(); ++n) Place(n);
  }

  std::vector<std::uint32_t> table_;    // number of the key in each cell, or kEmpty
  std::vector<std::uint64_t> hashes_;   // by number
  std::vector<std::size_t> offsets_;    // by number: where its bytes start in bytes_
  std::vector<unsigned char> bytes_;    // the keys, back to back
};

}  // namespace gavel
