#include "gavel/core/colocated_matrix.h"

#include <algorithm>
#include <utility>

#include "gavel/core/check.h"

namespace gavel {

ColocatedMatrix::ColocatedMatrix(const ThroughputTable& table, std::vector<int> table_types)
    : table_(&table),
      table_types_(std::move(table_types)),
      position_of_key_(table.job_types().size(), -1) {}

int ColocatedMatrix::Add(int table_key) {
  GAVEL_CHECK(table_key >= 0 && static_cast<std::size_t>(table_key) < position_of_key_.size());
  int& position = position_of_key_[static_cast<std::size_t>(table_key)];
  if (position >= 0) return position;
  position = num_keys();
  keys_.push_back(table_key);
  if (keys_.size() > capacity_) Grow(std::max<std::size_t>(8, 2 * capacity_));
  for (int other = 0; other <= position; ++other) {
    Fill(position, other);
    if (other != position) Fill(other, position);
  }
  return position;
}

void ColocatedMatrix::Grow(std::size_t capacity) {
  const std::size_t n = table_types_.size();
  std::vector<std::array<double, 2>> values(capacity * capacity * n, {0.0, 0.0});
  std::vector<char> usable(capacity * capacity, 0);
  for (std::size_t a = 0; a < capacity_; ++a) {
    std::copy_n(usable_.begin() + static_cast<std::ptrdiff_t>(a * capacity_), capacity_,
                usable.begin() + static_cast<std::ptrdiff_t>(a * capacity));
    const std::size_t from = a * capacity_ * n;
    const std::size_t to = a * capacity * n;
    std::copy_n(values_.begin() + static_cast<std::ptrdiff_t>(from), capacity_ * n,
                values.begin() + static_cast<std::ptrdiff_t>(to));
  }
  values_ = std::move(values);
  usable_ = std::move(usable);
  capacity_ = capacity;
}

void ColocatedMatrix::Fill(int a, int b) {
  const std::size_t offset = Offset(a, b);
  bool usable = false;
  for (std::size_t t = 0; t < table_types_.size(); ++t) {
    const auto co = table_->Colocated(table_types_[t], keys_[static_cast<std::size_t>(a)],
                                      keys_[static_cast<std::size_t>(b)]);
    values_[offset + t] = co.value_or(std::array<double, 2>{0.0, 0.0});
    usable = usable || values_[offset + t][0] > 0.0 || values_[offset + t][1] > 0.0;
  }
  usable_[static_cast<std::size_t>(a) * capacity_ + static_cast<std::size_t>(b)] = usable ? 1 : 0;
}

}  // namespace gavel
