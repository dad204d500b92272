#include "gavel/estimator/throughput_estimator.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

namespace gavel::estimator {
namespace {

constexpr double kCosineTieTolerance = 1e-12;

std::uint64_t SplitMix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

double RowDot(const Matrix& m, std::size_t r, const Matrix& o, std::size_t s) {
  double sum = 0.0;
  for (std::size_t c = 0; c < m.cols(); ++c) sum += m(r, c) * o(s, c);
  return sum;
}

}  // namespace

std::vector<std::size_t> PythonSmallSortOrder(const std::vector<double>& keys) {
  const std::size_t n = keys.size();
  GAVEL_CHECK(n < 64);
  std::vector<std::size_t> idx(n);
  std::iota(idx.begin(), idx.end(), std::size_t{0});
  if (n < 2) return idx;
  const auto lt = [&](std::size_t a, std::size_t b) { return keys[a] < keys[b]; };
  // count_run: the longest ascending (non-descending) or strictly descending prefix.
  std::size_t run = 2;
  if (lt(idx[1], idx[0])) {
    for (std::size_t i = 2; i < n && lt(idx[i], idx[i - 1]); ++i) ++run;
    std::reverse(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(run));
  } else {
    for (std::size_t i = 2; i < n && !lt(idx[i], idx[i - 1]); ++i) ++run;
  }
  // binarysort of the rest into the run.
  for (std::size_t start = run; start < n; ++start) {
    const std::size_t pivot = idx[start];
    std::size_t l = 0, r = start;
    do {
      const std::size_t p = l + ((r - l) >> 1);
      if (lt(pivot, idx[p])) {
        r = p;
      } else {
        l = p + 1;
      }
    } while (l < r);
    for (std::size_t q = start; q > l; --q) idx[q] = idx[q - 1];
    idx[l] = pivot;
  }
  return idx;
}

ThroughputEstimator::ThroughputEstimator(std::shared_ptr<const ThroughputTable> table,
                                         EstimatorOptions options)
    : table_(std::move(table)),
      options_(std::move(options)),
      rng_(options_.seed + 4),
      numpy_(static_cast<std::uint32_t>(options_.seed)) {}

Result<std::unique_ptr<ThroughputEstimator>> ThroughputEstimator::Create(
    std::shared_ptr<const ThroughputTable> table, EstimatorOptions options) {
  if (table == nullptr) return Status::InvalidArgument("throughput estimator: no table");
  if (!(options.profiling_percentage >= 0.0 && options.profiling_percentage <= 1.0)) {
    return Status::InvalidArgument("profiling percentage must be in [0, 1], got " +
                                   std::to_string(options.profiling_percentage));
  }
  if (options.models.empty()) return Status::InvalidArgument("throughput estimator: no models");
  if (options.num_reference_models < 1 ||
      options.num_reference_models > static_cast<int>(options.models.size())) {
    return Status::InvalidArgument("number of reference models must be in [1, " +
                                   std::to_string(options.models.size()) + "], got " +
                                   std::to_string(options.num_reference_models));
  }
  std::unique_ptr<ThroughputEstimator> e(
      new ThroughputEstimator(std::move(table), std::move(options)));
  GAVEL_RETURN_IF_ERROR(e->BuildFamilies());
  return e;
}

Status ThroughputEstimator::BuildFamilies() {
  const ThroughputTable& t = *table_;
  column_of_type_.assign(t.gpu_types().size(), -1);
  for (std::size_t g = 0; g < t.gpu_types().size(); ++g) {
    if (t.gpu_types()[g].find("unconsolidated") != std::string::npos) continue;
    column_of_type_[g] = static_cast<int>(columns_.size());
    columns_.push_back(static_cast<int>(g));
  }
  if (columns_.empty()) return Status::InvalidArgument("throughput estimator: no GPU type");
  profiled_.assign(columns_.size(), options_.compat_gavel || options_.profiled_gpu_types.empty());
  if (!options_.compat_gavel) {
    for (const std::string& name : options_.profiled_gpu_types) {
      const std::optional<int> g = t.GpuTypeIndex(name);
      if (!g || column_of_type_[static_cast<std::size_t>(*g)] < 0) {
        return Status::InvalidArgument("throughput estimator: GPU type \"" + name +
                                       "\" is not in the throughput table");
      }
      profiled_[static_cast<std::size_t>(column_of_type_[static_cast<std::size_t>(*g)])] = true;
    }
  }

  // Scale factors: 1, then (default mode) every other one the table has, ascending.
  std::set<int> scales = {1};
  if (!options_.compat_gavel) {
    for (const JobTypeKey& key : t.job_types()) scales.insert(key.scale_factor);
  }
  const std::size_t blocks = columns_.size();
  for (const int sf : scales) {
    Family f;
    f.scale_factor = sf;
    for (const std::string& model : options_.models) {
      const std::optional<int> key = t.KeyIndex(JobTypeKey{model, sf});
      if (!key) {
        if (sf == 1) {
          return Status::InvalidArgument("throughput estimator: model \"" + model +
                                         "\" has no single-GPU entry in the throughput table");
        }
        continue;
      }
      f.models.push_back(model);
      f.keys.push_back(*key);
    }
    const std::size_t n = f.models.size();
    if (n == 0) continue;
    f.normalized = Matrix(n, blocks * n);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t b = 0; b < blocks; ++b) {
        const double alone = t.Isolated(columns_[b], f.keys[i]).value_or(0.0);
        for (std::size_t k = 0; k < n; ++k) {
          const auto co = t.Colocated(columns_[b], f.keys[i], f.keys[k]);
          double v = alone > 0.0 && co ? (*co)[0] / alone : 0.0;
          // The original keeps N in float32.
          if (options_.compat_gavel) v = static_cast<double>(static_cast<float>(v));
          f.normalized(i, b * n + k) = v;
        }
      }
    }
    const std::size_t k = std::min(n, static_cast<std::size_t>(options_.num_reference_models));
    for (const std::size_t r : rng_.SampleIndices(n, k)) f.refs.push_back(static_cast<int>(r));
    std::sort(f.refs.begin(), f.refs.end());
    family_of_scale_[sf] = static_cast<int>(families_.size());
    families_.push_back(std::move(f));
  }
  return Status::Ok();
}

double ThroughputEstimator::Normalized(const Family& f, int type, int column, int other) const {
  const std::size_t n = f.models.size();
  return f.normalized(static_cast<std::size_t>(type),
                      static_cast<std::size_t>(column) * n + static_cast<std::size_t>(other));
}

Result<Match> ThroughputEstimator::AddJob(JobId job, const JobTypeKey& type) {
  if (jobs_.contains(job)) {
    return Status::InvalidArgument("throughput estimator: job " + job.ToString() +
                                   " was added already");
  }
  if (options_.compat_gavel && type.scale_factor != 1) {
    return Status::FailedPrecondition(
        "job " + job.ToString() + " of type " + type.ToString() +
        ": under --compat gavel the throughput estimator handles single-GPU jobs only, as the "
        "original's does (it fails on the first multi-GPU job); run without --compat gavel "
        "to estimate multi-GPU jobs");
  }
  const auto fam = family_of_scale_.find(type.scale_factor);
  int true_type = -1;
  if (fam != family_of_scale_.end()) {
    const Family& f = families_[static_cast<std::size_t>(fam->second)];
    const auto it = std::find(f.models.begin(), f.models.end(), type.model);
    if (it != f.models.end()) true_type = static_cast<int>(it - f.models.begin());
  }
  if (true_type < 0) {
    return Status::NotFound("throughput estimator: job type " + type.ToString() +
                            " is not among the estimator's job types");
  }
  const Family& f = families_[static_cast<std::size_t>(fam->second)];
  Match match;
  const int reference = options_.compat_gavel ? MatchCompat(f, true_type, match)
                                              : MatchDefault(f, true_type, job, match);
  match.reference = JobTypeKey{f.models[static_cast<std::size_t>(reference)], f.scale_factor};
  match.true_type = reference == true_type;
  jobs_[job] = JobInfo{fam->second, true_type, reference};
  return match;
}

// The original's match_job_to_reference_job, quirks included (see the header).
int ThroughputEstimator::MatchCompat(const Family& f, int true_type, Match& match) {
  const std::size_t nr = f.refs.size();
  const std::size_t cols = columns_.size() * nr;
  Matrix a(nr + 1, cols), mask(nr + 1, cols);
  for (std::size_t x = 0; x < nr; ++x) {
    for (std::size_t b = 0; b < columns_.size(); ++b) {
      for (std::size_t y = 0; y < nr; ++y) {
        a(x, b * nr + y) = Normalized(f, f.refs[x], static_cast<int>(b), f.refs[y]);
        mask(x, b * nr + y) = 1.0;
      }
    }
  }
  bool full = true;
  for (std::size_t b = 0; b < columns_.size(); ++b) {
    for (std::size_t j = 0; j < nr; ++j) {
      const double r = rng_.Uniform(0.0, 1.0);
      if (r <= options_.profiling_percentage) {
        // QUIRK: column b·|R| + j of the job's full row (b·n + refs[j] would be right).
        const std::size_t offset = b * nr + j;
        a(nr, offset) = f.normalized(static_cast<std::size_t>(true_type), offset);
        mask(nr, offset) = 1.0;
      } else {
        full = false;
      }
    }
  }
  const auto random_reference = [&]() {
    match.fell_back = true;
    return f.refs[rng_.ChoiceIndex(nr)];
  };
  if (!full) {
    match.completed = true;
    const Result<PmfResult> done =
        CompletePmf(a, mask, options_.completion, [this]() { return numpy_.StandardNormal(); });
    if (!done.ok()) return random_reference();
    for (std::size_t c = 0; c < cols; ++c) {
      if (mask(nr, c) == 0.0) a(nr, c) = std::clamp(done->completed(nr, c), 0.0, 1.0);
    }
  }
  const double new_norm = std::sqrt(RowDot(a, nr, a, nr));
  if (new_norm == 0.0) return random_reference();
  std::vector<double> distance(nr);
  for (std::size_t x = 0; x < nr; ++x) {
    distance[x] = 1.0 - RowDot(a, x, a, nr) / (std::sqrt(RowDot(a, x, a, x)) * new_norm);
  }
  return f.refs[PythonSmallSortOrder(distance).front()];
}

int ThroughputEstimator::MatchDefault(const Family& f, int true_type, JobId job, Match& match) {
  const std::uint64_t stream = SplitMix64(options_.seed ^ SplitMix64(job.value() + 1));
  PyRandom coins(stream);
  NumpyRandomState normal(static_cast<std::uint32_t>(stream >> 32));
  const std::size_t nr = f.refs.size();
  const std::size_t cols = columns_.size() * nr;
  Matrix a(nr + 1, cols), mask(nr + 1, cols);
  std::vector<double> mean(cols, 0.0);
  for (std::size_t x = 0; x < nr; ++x) {
    for (std::size_t b = 0; b < columns_.size(); ++b) {
      for (std::size_t y = 0; y < nr; ++y) {
        const double v = Normalized(f, f.refs[x], static_cast<int>(b), f.refs[y]);
        a(x, b * nr + y) = v;
        mask(x, b * nr + y) = 1.0;
        mean[b * nr + y] += v / static_cast<double>(nr);
      }
    }
  }
  std::size_t observed = 0;
  for (std::size_t b = 0; b < columns_.size(); ++b) {
    for (std::size_t j = 0; j < nr; ++j) {
      // A coin for every entry, profiled type or not, so that streams do not depend on the
      // cluster and a larger P observes a superset.
      const double r = coins.Random();
      if (profiled_[b] && r <= options_.profiling_percentage) {
        a(nr, b * nr + j) = Normalized(f, true_type, static_cast<int>(b), f.refs[j]);
        mask(nr, b * nr + j) = 1.0;
        ++observed;
      }
    }
  }
  if (observed == 0) {
    // Nothing is known of the job: the prior (mean reference row) stands in for it.
    match.fell_back = true;
    for (std::size_t c = 0; c < cols; ++c) a(nr, c) = mean[c];
  } else if (observed < cols) {
    match.completed = true;
    const Result<PmfResult> done =
        CompletePmf(a, mask, options_.completion, [&normal]() { return normal.StandardNormal(); });
    for (std::size_t c = 0; c < cols; ++c) {
      if (mask(nr, c) != 0.0) continue;
      a(nr, c) = done.ok() ? std::clamp(done->completed(nr, c), 0.0, 1.0) : mean[c];
    }
  }
  // Cosine distance (0 between two zero rows, 1 between a zero and a non-zero row), ties
  // within rounding broken by Euclidean distance, then by reference order.
  const double new_norm = std::sqrt(RowDot(a, nr, a, nr));
  std::size_t best = 0;
  double best_cos = 0.0, best_euclid = 0.0;
  for (std::size_t x = 0; x < nr; ++x) {
    const double norm = std::sqrt(RowDot(a, x, a, x));
    double cos;
    if (norm == 0.0 || new_norm == 0.0) {
      cos = norm == new_norm ? 0.0 : 1.0;
    } else {
      cos = 1.0 - RowDot(a, x, a, nr) / (norm * new_norm);
    }
    double euclid = 0.0;
    for (std::size_t c = 0; c < cols; ++c) euclid += (a(x, c) - a(nr, c)) * (a(x, c) - a(nr, c));
    if (x == 0 || cos < best_cos - kCosineTieTolerance ||
        (std::abs(cos - best_cos) <= kCosineTieTolerance && euclid < best_euclid)) {
      best = x;
      best_cos = cos;
      best_euclid = euclid;
    }
  }
  return f.refs[best];
}

std::array<double, 2> ThroughputEstimator::Colocated(JobId a, JobId b, int gpu_type) const {
  const auto measured = measured_.find({a.value(), b.value(), gpu_type});
  if (measured != measured_.end()) return measured->second;
  const JobInfo& ja = jobs_.at(a);
  const JobInfo& jb = jobs_.at(b);
  const int column = column_of_type_.at(static_cast<std::size_t>(gpu_type));
  if (ja.family != jb.family || column < 0) return {0.0, 0.0};
  const Family& f = families_[static_cast<std::size_t>(ja.family)];
  const double alone_a =
      table_->Isolated(gpu_type, f.keys[static_cast<std::size_t>(ja.true_type)]).value_or(0.0);
  const double alone_b =
      table_->Isolated(gpu_type, f.keys[static_cast<std::size_t>(jb.true_type)]).value_or(0.0);
  return {Normalized(f, ja.reference, column, jb.reference) * alone_a,
          Normalized(f, jb.reference, column, ja.reference) * alone_b};
}

std::array<double, 2> ThroughputEstimator::NormalizedError(JobId a, JobId b, int gpu_type) const {
  const double nan = std::nan("");
  const JobInfo& ja = jobs_.at(a);
  const JobInfo& jb = jobs_.at(b);
  const int column = column_of_type_.at(static_cast<std::size_t>(gpu_type));
  if (ja.family != jb.family || column < 0) return {nan, nan};
  const Family& f = families_[static_cast<std::size_t>(ja.family)];
  const int key_a = f.keys[static_cast<std::size_t>(ja.true_type)];
  const int key_b = f.keys[static_cast<std::size_t>(jb.true_type)];
  const double alone_a = table_->Isolated(gpu_type, key_a).value_or(0.0);
  const double alone_b = table_->Isolated(gpu_type, key_b).value_or(0.0);
  const std::array<double, 2> co =
      table_->Colocated(gpu_type, key_a, key_b).value_or(std::array<double, 2>{0.0, 0.0});
  std::array<double, 2> error{nan, nan};
  if (alone_a > 0.0) {
    error[0] = std::abs(Normalized(f, ja.reference, column, jb.reference) - co[0] / alone_a);
  }
  if (alone_b > 0.0) {
    error[1] = std::abs(Normalized(f, jb.reference, column, ja.reference) - co[1] / alone_b);
  }
  return error;
}

void ThroughputEstimator::RecordMeasurement(JobId a, JobId b, int gpu_type,
                                            std::array<double, 2> steps_per_s) {
  measured_[{a.value(), b.value(), gpu_type}] = steps_per_s;
}

bool ThroughputEstimator::Measured(JobId a, JobId b, int gpu_type) const {
  return measured_.contains({a.value(), b.value(), gpu_type});
}

std::vector<JobTypeKey> ThroughputEstimator::ReferenceTypes(int scale_factor) const {
  std::vector<JobTypeKey> types;
  const auto fam = family_of_scale_.find(scale_factor);
  if (fam == family_of_scale_.end()) return types;
  const Family& f = families_[static_cast<std::size_t>(fam->second)];
  for (const int r : f.refs) {
    types.push_back(JobTypeKey{f.models[static_cast<std::size_t>(r)], scale_factor});
  }
  return types;
}

}  // namespace gavel::estimator
