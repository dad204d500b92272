#include "gavel/estimator/reference_rows.h"

#include <algorithm>
#include <cmath>

#include "gavel/estimator/numpy_random.h"

namespace gavel::estimator {

Result<std::unique_ptr<const ReferenceRows>> ReferenceRows::Create(
    std::shared_ptr<const ThroughputTable> table, int scale_factor,
    std::vector<JobTypeKey> references) {
  if (table == nullptr) return Status::InvalidArgument("reference rows: no table");
  std::unique_ptr<ReferenceRows> r(new ReferenceRows());
  const ThroughputTable& t = *table;
  r->scale_factor_ = scale_factor;
  std::vector<int> blocks;  // table GPU type index per column block
  r->column_block_.assign(t.gpu_types().size(), -1);
  for (std::size_t g = 0; g < t.gpu_types().size(); ++g) {
    if (t.gpu_types()[g].find("unconsolidated") != std::string::npos) continue;
    r->column_block_[g] = static_cast<int>(blocks.size());
    blocks.push_back(static_cast<int>(g));
  }
  if (blocks.empty()) return Status::InvalidArgument("reference rows: the table has no GPU type");
  if (references.empty()) {
    for (const JobTypeKey& key : t.job_types()) {
      if (key.scale_factor == scale_factor) references.push_back(key);
    }
  }
  for (const JobTypeKey& key : references) {
    const std::optional<int> index = t.KeyIndex(key);
    if (!index || key.scale_factor != scale_factor) {
      return Status::InvalidArgument("reference rows: " + key.ToString() +
                                     " is not a job type of the throughput table with " +
                                     std::to_string(scale_factor) + " GPU(s)");
    }
    r->keys_.push_back(*index);
  }
  if (r->keys_.empty()) {
    return Status::InvalidArgument("reference rows: the throughput table has no job type with " +
                                   std::to_string(scale_factor) + " GPU(s)");
  }
  std::sort(r->keys_.begin(), r->keys_.end());
  r->keys_.erase(std::unique(r->keys_.begin(), r->keys_.end()), r->keys_.end());
  r->reference_of_key_.assign(t.job_types().size(), -1);
  const std::size_t n = r->keys_.size();
  for (std::size_t i = 0; i < n; ++i) {
    r->reference_of_key_[static_cast<std::size_t>(r->keys_[i])] = static_cast<int>(i);
  }
  r->rows_ = Matrix(n, blocks.size() * n);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t b = 0; b < blocks.size(); ++b) {
      const double alone = t.Isolated(blocks[b], r->keys_[i]).value_or(0.0);
      for (std::size_t k = 0; k < n; ++k) {
        const auto together = t.Colocated(blocks[b], r->keys_[i], r->keys_[k]);
        r->rows_(i, b * n + k) = alone > 0.0 && together ? (*together)[0] / alone : 0.0;
      }
    }
  }
  r->table_ = std::move(table);
  return std::unique_ptr<const ReferenceRows>(std::move(r));
}

std::optional<std::size_t> ReferenceRows::Column(int gpu_type, int partner_key) const {
  if (gpu_type < 0 || static_cast<std::size_t>(gpu_type) >= column_block_.size() ||
      partner_key < 0 || static_cast<std::size_t>(partner_key) >= reference_of_key_.size()) {
    return std::nullopt;
  }
  const int block = column_block_[static_cast<std::size_t>(gpu_type)];
  const int reference = reference_of_key_[static_cast<std::size_t>(partner_key)];
  if (block < 0 || reference < 0) return std::nullopt;
  return static_cast<std::size_t>(block) * keys_.size() + static_cast<std::size_t>(reference);
}

std::optional<double> ReferenceRows::Reference(int key, std::size_t column) const {
  if (key < 0 || static_cast<std::size_t>(key) >= reference_of_key_.size() ||
      column >= rows_.cols()) {
    return std::nullopt;
  }
  const int reference = reference_of_key_[static_cast<std::size_t>(key)];
  if (reference < 0) return std::nullopt;
  return rows_(static_cast<std::size_t>(reference), column);
}

Result<CompletedRow> ReferenceRows::Complete(std::span<const RowObservation> observed,
                                             const PmfOptions& options,
                                             std::uint64_t seed) const {
  const std::size_t n = keys_.size();
  const std::size_t cols = rows_.cols();
  // [reference rows; the job's row], the job's row observed where measured.
  Matrix a(n + 1, cols), mask(n + 1, cols);
  for (std::size_t x = 0; x < n; ++x) {
    for (std::size_t c = 0; c < cols; ++c) {
      a(x, c) = rows_(x, c);
      mask(x, c) = 1.0;
    }
  }
  CompletedRow row;
  for (const RowObservation& o : observed) {
    const std::optional<std::size_t> c = Column(o.gpu_type, o.partner_key);
    if (!c || !std::isfinite(o.normalized) || o.normalized < 0.0) {
      return Status::InvalidArgument("reference rows: observation on GPU type " +
                                     std::to_string(o.gpu_type) + " next to key " +
                                     std::to_string(o.partner_key) +
                                     " is not a column or not a non-negative number");
    }
    if (mask(n, *c) == 0.0) ++row.observed;
    a(n, *c) = o.normalized;
    mask(n, *c) = 1.0;
  }
  if (row.observed == 0) {
    return Status::InvalidArgument("reference rows: no observation to complete a row from");
  }
  if (row.observed < cols) {
    row.completed = true;
    NumpyRandomState normal(static_cast<std::uint32_t>(seed ^ (seed >> 32)));
    GAVEL_ASSIGN_OR_RETURN(
        const PmfResult done,
        CompletePmf(a, mask, options, [&normal]() { return normal.StandardNormal(); }));
    for (std::size_t c = 0; c < cols; ++c) {
      if (mask(n, c) == 0.0) a(n, c) = std::clamp(done.completed(n, c), 0.0, 1.0);
    }
  }
  row.values.resize(cols);
  for (std::size_t c = 0; c < cols; ++c) row.values[c] = a(n, c);

  // The closest reference row: cosine distance (0 between two zero rows, 1 between a zero
  // and a non-zero one), near-ties by Euclidean distance, then reference order.
  constexpr double kTieTolerance = 1e-12;
  const auto dot = [&](std::size_t x, std::size_t y) {
    double sum = 0.0;
    for (std::size_t c = 0; c < cols; ++c) sum += a(x, c) * a(y, c);
    return sum;
  };
  const double own_norm = std::sqrt(dot(n, n));
  std::size_t best = 0;
  double best_cos = 0.0, best_euclid = 0.0;
  for (std::size_t x = 0; x < n; ++x) {
    const double norm = std::sqrt(dot(x, x));
    const double cos = norm == 0.0 || own_norm == 0.0 ? (norm == own_norm ? 0.0 : 1.0)
                                                      : 1.0 - dot(x, n) / (norm * own_norm);
    const double euclid = dot(x, x) - 2.0 * dot(x, n) + dot(n, n);
    if (x == 0 || cos < best_cos - kTieTolerance ||
        (std::abs(cos - best_cos) <= kTieTolerance && euclid < best_euclid)) {
      best = x;
      best_cos = cos;
      best_euclid = euclid;
    }
  }
  row.match = keys_[best];
  return row;
}

}  // namespace gavel::estimator
