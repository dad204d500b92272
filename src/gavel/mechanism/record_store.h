// RecordStore<T>: a sequence that only grows, indexed from 0 like a vector, whose elements can
// be forgotten once nobody reads them again. Elements live in fixed-size chunks; a chunk's
// memory is freed when all its elements are forgotten, so a long run that forgets the records
// of departed jobs holds memory for the jobs still there (and the chunks they share with
// departed ones), not for every job it ever admitted.
//
// Reading a forgotten element is a caller's bug: at() checks it, operator[] does not (it is
// on the round's hot paths). Value type; not synchronised.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "gavel/core/check.h"

namespace gavel::mechanism {

template <class T>
class RecordStore {
 public:
  static constexpr std::size_t kChunkBits = 12;
  static constexpr std::size_t kChunk = std::size_t{1} << kChunkBits;

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  void push_back(T value) {
    if (size_ % kChunk == 0) {
      chunks_.emplace_back();
      chunks_.back().reserve(kChunk);
      live_.push_back(0);
    }
    chunks_.back().push_back(std::move(value));
    ++live_.back();
    forgotten_.push_back(false);
    ++size_;
  }
  T& operator[](std::size_t i) { return chunks_[i >> kChunkBits][i & (kChunk - 1)]; }
  const T& operator[](std::size_t i) const { return chunks_[i >> kChunkBits][i & (kChunk - 1)]; }
  const T& at(std::size_t i) const {
    GAVEL_CHECK_MSG(i < size_ && !forgotten_[i], "a record read after it was forgotten");
    return (*this)[i];
  }
  bool forgotten(std::size_t i) const { return forgotten_[i]; }
  // Forgets element i (again: nothing happens); frees its chunk once the chunk is all
  // forgotten and full (the last chunk still grows).
  void Forget(std::size_t i) {
    GAVEL_CHECK(i < size_);
    if (forgotten_[i]) return;
    forgotten_[i] = true;
    const std::size_t c = i >> kChunkBits;
    if (--live_[c] == 0 && chunks_[c].size() == kChunk) std::vector<T>().swap(chunks_[c]);
  }

 private:
  std::vector<std::vector<T>> chunks_;
  std::vector<std::uint32_t> live_;  // per chunk: elements not forgotten
  std::vector<bool> forgotten_;
  std::size_t size_ = 0;
};

}  // namespace gavel::mechanism
