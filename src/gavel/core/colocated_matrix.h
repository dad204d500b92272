// The co-located throughputs of the job-type keys in use, as a dense key × key × GPU-type
// table. For the hot paths that read every candidate pair's throughputs on every GPU type at
// every reallocation (the policy's problem), where ThroughputTable::Colocated costs
// two hash lookups per pair and type.
//
// Entries are exactly ThroughputTable::Colocated's values (mirror entries included) for the
// GPU types given, in the caller's order (e.g. a cluster layout's); a pair the table lacks on
// a type reads {0, 0} there. Keys are added as jobs bring them (Add); only the keys added
// are stored, so the size follows the workload, not the table.
// Not thread-safe while keys are added; the table must outlive the matrix.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <vector>

#include "gavel/core/throughput_table.h"

namespace gavel {

class ColocatedMatrix {
 public:
  // `table_types`: ThroughputTable GPU type indices, one per column of the rows.
  ColocatedMatrix(const ThroughputTable& table, std::vector<int> table_types);

  // The position of table key `table_key` (an index into job_types()), adding it first if
  // it is new: its row and column read from the table, O(keys added × types).
  int Add(int table_key);
  // The position of `table_key`, or -1 when it was never added.
  int PositionOf(int table_key) const {
    const auto k = static_cast<std::size_t>(table_key);
    return k < position_of_key_.size() ? position_of_key_[k] : -1;
  }
  int num_keys() const { return static_cast<int>(keys_.size()); }
  const std::vector<int>& table_types() const { return table_types_; }

  // {steps/s of a, steps/s of b} while the keys at positions a and b share a GPU, for each
  // type in table_types() order; {0, 0} where the table has no entry.
  std::span<const std::array<double, 2>> Row(int a, int b) const {
    return {values_.data() + Offset(a, b), table_types_.size()};
  }
  // Whether either job of the pair has a positive throughput on some type of Row: a pair
  // that cannot share a GPU anywhere is left out of a policy's problem without reading Row.
  bool Usable(int a, int b) const {
    return usable_[static_cast<std::size_t>(a) * capacity_ + static_cast<std::size_t>(b)] != 0;
  }

 private:
  std::size_t Offset(int a, int b) const {
    return (static_cast<std::size_t>(a) * capacity_ + static_cast<std::size_t>(b)) *
           table_types_.size();
  }
  // Moves the entries to a table of `capacity` positions a side.
  void Grow(std::size_t capacity);
  // Reads the entry of positions a and b from the table.
  void Fill(int a, int b);

  const ThroughputTable* table_;
  std::vector<int> table_types_;
  std::vector<int> keys_;             // table key at each position
  std::vector<int> position_of_key_;  // by table key; -1 = not added
  std::size_t capacity_ = 0;          // positions a side of values_ and usable_
  std::vector<std::array<double, 2>> values_;  // (a × capacity_ + b) × types + type
  std::vector<char> usable_;                   // a × capacity_ + b
};

}  // namespace gavel
