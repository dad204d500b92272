#include "gavel/estimator/profiled_gpu_type.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include <nlohmann/json.hpp>

#include "gavel/core/matrix.h"
#include "gavel/estimator/matrix_completion.h"
#include "gavel/estimator/reference_rows.h"

namespace gavel::estimator {
namespace {

bool Unconsolidated(const std::string& gpu_type) {
  return gpu_type.find("unconsolidated") != std::string::npos;
}

struct Nearest {
  int gpu_type = -1;
  double level = 1.0;
};

// The table type whose rates differ from the measured ones by the most uniform factor.
Nearest FindNearest(const ThroughputTable& t, const std::map<int, double>& isolated) {
  Nearest best;
  double best_variance = std::numeric_limits<double>::infinity();
  for (std::size_t g = 0; g < t.gpu_types().size(); ++g) {
    if (Unconsolidated(t.gpu_types()[g])) continue;
    std::vector<double> logs;
    for (const auto& [key, rate] : isolated) {
      const double there = t.Isolated(static_cast<int>(g), key).value_or(0.0);
      if (rate > 0.0 && there > 0.0) logs.push_back(std::log(rate / there));
    }
    if (logs.empty()) continue;
    double mean = 0.0;
    for (const double l : logs) mean += l / static_cast<double>(logs.size());
    double variance = 0.0;
    for (const double l : logs) variance += (l - mean) * (l - mean) / static_cast<double>(logs.size());
    const bool better = variance < best_variance - 1e-12 ||
                        (variance <= best_variance + 1e-12 && std::abs(mean) < std::abs(std::log(best.level)));
    if (best.gpu_type < 0 || better) {
      best = Nearest{static_cast<int>(g), std::exp(mean)};
      best_variance = variance;
    }
  }
  return best;
}

}  // namespace

Result<ProfiledGpuType> CompleteProfiledGpuType(std::shared_ptr<const ThroughputTable> table,
                                                const ProfileMeasurements& measured,
                                                const ProfiledGpuTypeOptions& options) {
  const ThroughputTable& t = *table;
  const std::string& name = options.gpu_type;
  if (name.empty()) return Status::InvalidArgument("profile: empty GPU type name");
  if (t.HasGpuType(name)) {
    return Status::InvalidArgument("profile: \"" + name +
                                   "\" is already a GPU type of the throughput table; give the "
                                   "measured type its own name");
  }
  const auto single_gpu_key = [&](const std::string& job_type) -> Result<int> {
    const std::optional<int> k = t.KeyIndex(JobTypeKey{job_type, 1});
    if (!k) {
      return Status::InvalidArgument("profile: \"" + job_type +
                                     "\" is not a single-GPU job type of the throughput table");
    }
    return *k;
  };
  const auto check_rate = [](double rate, const std::string& what) -> Status {
    if (!std::isfinite(rate) || rate < 0.0) {
      return Status::InvalidArgument("profile: " + what + ": rate must be finite and >= 0");
    }
    return Status::Ok();
  };

  // Phase 1: the measured single-GPU rates, by table key.
  std::map<int, double> isolated;
  for (const auto& [job_type, rate] : measured.isolated) {
    GAVEL_ASSIGN_OR_RETURN(const int k, single_gpu_key(job_type));
    GAVEL_RETURN_IF_ERROR(check_rate(rate, job_type));
    isolated[k] = rate;
  }
  const Nearest nearest = FindNearest(t, isolated);
  if (nearest.gpu_type < 0) {
    return Status::InvalidArgument("profile: no job type ran (no positive rate alone) on a type "
                                   "the table also has it on");
  }

  // Phase 2: every rate alone; the unmeasured single-GPU ones at the nearest type's shape.
  ProfiledGpuType out;
  out.nearest_type = t.gpu_types()[static_cast<std::size_t>(nearest.gpu_type)];
  out.speed_level = nearest.level;
  const std::size_t num_keys = t.job_types().size();
  std::vector<std::optional<double>> alone(num_keys);
  const auto near_alone = [&](int key) { return t.Isolated(nearest.gpu_type, key); };
  for (std::size_t k = 0; k < num_keys; ++k) {
    const JobTypeKey& key = t.job_types()[k];
    if (key.scale_factor != 1) continue;
    if (const auto it = isolated.find(static_cast<int>(k)); it != isolated.end()) {
      alone[k] = it->second;
    } else if (const auto there = near_alone(static_cast<int>(k))) {
      alone[k] = *there * nearest.level;
      out.derived_isolated.push_back(key.model);
    }
  }
  for (std::size_t k = 0; k < num_keys; ++k) {
    const JobTypeKey& key = t.job_types()[k];
    if (key.scale_factor == 1) continue;
    const auto one = t.KeyIndex(JobTypeKey{key.model, 1});
    const auto there = near_alone(static_cast<int>(k));
    if (!one || !there || !alone[static_cast<std::size_t>(*one)]) continue;
    const double there_one = near_alone(*one).value_or(0.0);
    alone[k] = there_one > 0.0 ? *alone[static_cast<std::size_t>(*one)] * *there / there_one : 0.0;
  }

  // Phase 3: single-GPU pairs, normalised: measured, else completed.
  GAVEL_ASSIGN_OR_RETURN(std::unique_ptr<const ReferenceRows> refs, ReferenceRows::Create(table, 1));
  std::vector<int> keys;  // reference index -> table key
  std::vector<int> ref_of(num_keys, -1);
  for (std::size_t k = 0; k < num_keys; ++k) {
    if (t.job_types()[k].scale_factor == 1) {
      ref_of[k] = static_cast<int>(keys.size());
      keys.push_back(static_cast<int>(k));
    }
  }
  const std::size_t n = keys.size();
  std::vector<int> blocks;
  for (std::size_t g = 0; g < t.gpu_types().size(); ++g) {
    if (!Unconsolidated(t.gpu_types()[g])) blocks.push_back(static_cast<int>(g));
  }
  const std::size_t new_block = blocks.size();
  Matrix a(n, (blocks.size() + 1) * n), mask(n, (blocks.size() + 1) * n);
  for (std::size_t i = 0; i < n; ++i) {
    for (const int g : blocks) {
      for (std::size_t j = 0; j < n; ++j) {
        const std::size_t c = *refs->Column(g, keys[j]);
        a(i, c) = *refs->Reference(keys[i], c);
        mask(i, c) = 1.0;
      }
    }
  }
  std::map<std::pair<int, int>, std::array<double, 2>> measured_pairs;  // by (ref a, ref b)
  const auto normalised = [&](std::size_t ref, double rate) {
    const double base = alone[static_cast<std::size_t>(keys[ref])].value_or(0.0);
    return base > 0.0 ? std::clamp(rate / base, 0.0, 1.0) : 0.0;
  };
  for (const ProfileMeasurements::Pair& p : measured.pairs) {
    GAVEL_ASSIGN_OR_RETURN(const int ka, single_gpu_key(p.a));
    GAVEL_ASSIGN_OR_RETURN(const int kb, single_gpu_key(p.b));
    GAVEL_RETURN_IF_ERROR(check_rate(p.rates[0], p.a + " next to " + p.b));
    GAVEL_RETURN_IF_ERROR(check_rate(p.rates[1], p.b + " next to " + p.a));
    const auto ra = static_cast<std::size_t>(ref_of[static_cast<std::size_t>(ka)]);
    const auto rb = static_cast<std::size_t>(ref_of[static_cast<std::size_t>(kb)]);
    std::array<double, 2> rates = p.rates;
    // Two jobs of one type: the table has one entry for both, its own mirror image.
    if (ka == kb) rates[0] = rates[1] = (rates[0] + rates[1]) / 2.0;
    measured_pairs[{static_cast<int>(ra), static_cast<int>(rb)}] = rates;
    measured_pairs[{static_cast<int>(rb), static_cast<int>(ra)}] = {rates[1], rates[0]};
    a(ra, new_block * n + rb) = normalised(ra, rates[0]);
    a(rb, new_block * n + ra) = normalised(rb, rates[1]);
    mask(ra, new_block * n + rb) = mask(rb, new_block * n + ra) = 1.0;
  }
  Matrix completed = a;
  if (measured_pairs.empty()) {
    const auto near_block = static_cast<std::size_t>(
        std::find(blocks.begin(), blocks.end(), nearest.gpu_type) - blocks.begin());
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) completed(i, new_block * n + j) = a(i, near_block * n + j);
    }
  } else {
    std::mt19937_64 engine(options.seed);
    std::normal_distribution<double> normal;
    GAVEL_ASSIGN_OR_RETURN(PmfResult pmf,
                           CompletePmf(a, mask, options.completion, [&] { return normal(engine); }));
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        const std::size_t c = new_block * n + j;
        if (mask(i, c) == 0.0) completed(i, c) = std::clamp(pmf.completed(i, c), 0.0, 1.0);
      }
    }
  }

  // Phase 4: the rows in the table's format, both mirror entries from the same numbers.
  nlohmann::json rows = nlohmann::json::object();
  for (std::size_t k = 0; k < num_keys; ++k) {
    if (!alone[k]) continue;
    nlohmann::json& row = rows[t.job_types()[k].ToString()];
    row["null"] = *alone[k];
    for (std::size_t m = 0; m < num_keys; ++m) {
      if (!alone[m] || t.job_types()[m].scale_factor != t.job_types()[k].scale_factor) continue;
      std::array<double, 2> rates{};
      if (t.job_types()[k].scale_factor == 1) {
        const int ri = ref_of[k];
        const int rj = ref_of[m];
        if (const auto it = measured_pairs.find({ri, rj}); it != measured_pairs.end()) {
          rates = it->second;
        } else {
          rates = {*alone[k] * completed(static_cast<std::size_t>(ri), new_block * n + static_cast<std::size_t>(rj)),
                   *alone[m] * completed(static_cast<std::size_t>(rj), new_block * n + static_cast<std::size_t>(ri))};
        }
      } else {
        const auto together = t.Colocated(nearest.gpu_type, static_cast<int>(k), static_cast<int>(m));
        if (!together) continue;
        const double near_k = near_alone(static_cast<int>(k)).value_or(0.0);
        const double near_m = near_alone(static_cast<int>(m)).value_or(0.0);
        rates = {near_k > 0.0 ? *alone[k] * (*together)[0] / near_k : 0.0,
                 near_m > 0.0 ? *alone[m] * (*together)[1] / near_m : 0.0};
      }
      row[t.job_types()[m].ToString()] = rates;
    }
  }
  out.pairs_measured = 0;
  for (const auto& [pair, rates] : measured_pairs) out.pairs_measured += pair.first <= pair.second;
  out.pairs_completed = static_cast<int>(n * (n + 1) / 2) - out.pairs_measured;
  out.table_json = nlohmann::json{{name, std::move(rows)}}.dump(1);
  return out;
}

}  // namespace gavel::estimator
