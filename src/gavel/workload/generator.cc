#include "gavel/workload/generator.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include "gavel/core/check.h"
#include "gavel/workload/job_table.h"
#include "gavel/workload/philly_workload.h"

namespace gavel::workload {
namespace {

// utils._generate_scale_factor: 1 below 0.7; 2 on [0.7, 0.8]; 4 on (0.8, 0.95]; 8 above.
int ScaleFactorFromDraw(double r) {
  if (0.7 <= r && r <= 0.8) return 2;
  if (0.8 <= r && r <= 0.95) return 4;
  if (0.95 <= r) return 8;
  return 1;
}

// utils._generate_duration: seconds on one V100 unit, log-uniform in two bands.
double DrawDuration(PyRandom& rng) {
  if (rng.Random() >= 0.8) return 60.0 * std::pow(10.0, rng.Uniform(3.0, 4.0));
  return 60.0 * std::pow(10.0, rng.Uniform(1.5, 3.0));
}

// The SLO multiplier bands of utils.generate_job.
double SloFromDraw(double r) {
  if (0.0 <= r && r < 0.33) return 1.2;
  if (0.33 <= r && r < 0.67) return 2.0;
  return 10.0;
}

bool HasFixedDuration(const GeneratorOptions& options) {
  // The original tests `if fixed_job_duration:`, so 0 means "not fixed".
  return options.fixed_duration.has_value() && options.fixed_duration->value() != 0.0;
}

std::string TrimLine(const std::string& s) {
  const auto begin = s.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  const auto end = s.find_last_not_of(" \t\r");
  return s.substr(begin, end - begin + 1);
}

}  // namespace

Result<PhillyJobDistribution> PhillyJobDistribution::LoadCsv(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::IoError(path + ": cannot open the Philly job distribution");
  PhillyJobDistribution dist;
  std::string line;
  int line_number = 0;
  bool saw_header = false;
  while (std::getline(in, line)) {
    ++line_number;
    const std::string where = path + ":" + std::to_string(line_number) + ": ";
    line = TrimLine(line);
    if (line.empty()) continue;
    if (!saw_header) {
      if (line != "duration_seconds,num_gpus") {
        return Status::InvalidArgument(where + "expected the header 'duration_seconds,num_gpus'");
      }
      saw_header = true;
      continue;
    }
    const auto comma = line.find(',');
    if (comma == std::string::npos || line.find(',', comma + 1) != std::string::npos) {
      return Status::InvalidArgument(where + "expected 2 comma-separated columns");
    }
    const std::string duration_text = TrimLine(line.substr(0, comma));
    const std::string gpus_text = TrimLine(line.substr(comma + 1));
    double duration = 0.0;
    int num_gpus = 0;
    {
      std::istringstream d(duration_text);
      d.imbue(std::locale::classic());
      if (!(d >> duration) || !d.eof() || !std::isfinite(duration) || duration <= 0.0) {
        return Status::InvalidArgument(where + "duration_seconds: '" + duration_text +
                                       "' is not a finite positive number");
      }
      std::istringstream g(gpus_text);
      if (!(g >> num_gpus) || !g.eof() || num_gpus < 1 || num_gpus > 8) {
        return Status::InvalidArgument(where + "num_gpus: '" + gpus_text +
                                       "' is not an integer in 1..8");
      }
    }
    dist.rows.push_back({Seconds(duration), num_gpus});
  }
  if (!saw_header) return Status::InvalidArgument(path + ": empty file, expected a header");
  if (dist.rows.empty()) return Status::InvalidArgument(path + ": no rows after the header");
  return dist;
}

JobGenerator::JobGenerator(const GeneratorOptions& options,
                           std::map<JobTypeKey, double> reference_tput)
    : options_(options),
      reference_throughput_(std::move(reference_tput)),
      job_rng_(options.seed + 2),
      slo_rng_(options.seed + 6) {}

Result<JobGenerator> JobGenerator::Create(const GeneratorOptions& options,
                                          const ThroughputTable& throughputs) {
  const std::string& ref = options.reference_gpu_type;
  if (!throughputs.HasGpuType(ref)) {
    return Status::InvalidArgument("workload generator: reference GPU type '" + ref +
                                   "' is not in the throughput table");
  }
  if (options.fixed_duration.has_value() && !(options.fixed_duration->value() >= 0.0)) {
    return Status::InvalidArgument("workload generator: the fixed duration must be positive");
  }
  if (!(options.mean_interarrival.value() >= 0.0) ||
      !std::isfinite(options.mean_interarrival.value())) {
    return Status::InvalidArgument(
        "workload generator: the mean inter-arrival time must be finite and >= 0");
  }
  std::set<int> multi_gpu_sizes;
  if (options.generate_multi_gpu_jobs) {
    if (options.philly != nullptr) {
      for (const auto& row : options.philly->rows) {
        if (row.num_gpus > 1) multi_gpu_sizes.insert(row.num_gpus);
      }
    } else {
      multi_gpu_sizes = {2, 4, 8};
    }
  }
  if (options.philly != nullptr && options.philly->rows.empty()) {
    return Status::InvalidArgument("workload generator: the Philly job distribution is empty");
  }
  std::map<JobTypeKey, double> reference_tput;
  auto require = [&](const JobTypeKey& key) -> Status {
    const std::optional<double> tput = throughputs.Isolated(ref, key);
    if (!tput.has_value() || !(*tput > 0.0)) {
      return Status::InvalidArgument("workload generator: job type " + key.ToString() +
                                     " has no positive throughput on the reference GPU type '" +
                                     ref + "'");
    }
    reference_tput.emplace(key, *tput);
    return Status::Ok();
  };
  for (const JobTemplate& t : JobTable()) {
    GAVEL_RETURN_IF_ERROR(require(JobTypeKey{t.model, 1}));
    if (!t.distributed) continue;
    for (int sf : multi_gpu_sizes) GAVEL_RETURN_IF_ERROR(require(JobTypeKey{t.model, sf}));
  }
  return JobGenerator(options, std::move(reference_tput));
}

TraceJob JobGenerator::Next() {
  // Steps 1-2: the job's size and duration.
  int scale_factor = 1;
  double duration = 0.0;
  if (options_.philly != nullptr) {
    const auto& rows = options_.philly->rows;
    const auto& row = rows[job_rng_.ChoiceIndex(rows.size())];
    scale_factor = row.num_gpus;
    duration = row.duration.value();
  } else {
    scale_factor = ScaleFactorFromDraw(job_rng_.Uniform(0.0, 1.0));
    if (!HasFixedDuration(options_)) duration = DrawDuration(job_rng_);
  }
  if (HasFixedDuration(options_)) duration = options_.fixed_duration->value();
  if (!options_.generate_multi_gpu_jobs) scale_factor = 1;

  // Step 3: the job type; multi-GPU jobs only get distributed templates.
  const std::span<const JobTemplate> table = JobTable();
  const JobTemplate* job_template = nullptr;
  do {
    job_template = &table[job_rng_.ChoiceIndex(table.size())];
  } while (scale_factor != 1 && !job_template->distributed);

  TraceJob job;
  job.job_type = job_template->model;
  job.command = job_template->command;
  job.working_directory = job_template->working_directory;
  job.num_steps_arg = job_template->num_steps_arg;
  job.needs_data_dir = job_template->needs_data_dir;
  job.scale_factor = scale_factor;
  const auto tput = reference_throughput_.find(job.key());
  GAVEL_CHECK_MSG(tput != reference_throughput_.end(), "job type validated in Create()");
  job.total_steps = duration * tput->second;
  job.duration = Seconds(duration);

  // Step 4: priority, then the SLO from its own stream.
  if (options_.generate_multi_priority_jobs) {
    const double r = job_rng_.Uniform(0.0, 1.0);
    if (0.0 <= r && r <= 0.2) job.priority_weight = 5.0;
  }
  if (options_.assign_slos) job.slo_multiplier = SloFromDraw(slo_rng_.Uniform(0.0, 1.0));
  return job;
}

GeneratedJobStream::GeneratedJobStream(const GeneratorOptions& options, JobGenerator generator)
    : options_(options), generator_(std::move(generator)), interarrival_rng_(options.seed + 3) {
  // std::map iterates GPU types in sorted order, as the original's sorted(cluster_spec).
  for (const auto& [gpu_type, count] : options.steady_state_cluster) {
    if (count > 0) steady_state_remaining_.emplace_back(gpu_type, count);
  }
}

Result<std::unique_ptr<GeneratedJobStream>> GeneratedJobStream::Create(
    const GeneratorOptions& options, const ThroughputTable& throughputs) {
  if (!(options.hpo_fraction >= 0.0 && options.hpo_fraction <= 1.0)) {
    return Status::InvalidArgument("hyper-parameter search fraction " +
                                   std::to_string(options.hpo_fraction) + " is not in [0, 1]");
  }
  if (options.hpo_trials < 2 || options.hpo_trials > 64) {
    return Status::InvalidArgument("trials per hyper-parameter search " +
                                   std::to_string(options.hpo_trials) + " is not in [2, 64]");
  }
  GAVEL_ASSIGN_OR_RETURN(JobGenerator generator, JobGenerator::Create(options, throughputs));
  if (options.philly_workload == nullptr) {
    return std::unique_ptr<GeneratedJobStream>(
        new GeneratedJobStream(options, std::move(generator)));
  }
  PhillyWorkloadOptions philly = *options.philly_workload;
  philly.seed = options.seed;
  philly.mean_interarrival = options.mean_interarrival;
  philly.max_jobs = options.max_jobs;
  philly.reference_gpu_type = options.reference_gpu_type;
  GAVEL_ASSIGN_OR_RETURN(std::unique_ptr<PhillyJobStream> philly_stream,
                         PhillyJobStream::Create(philly, throughputs));
  GeneratorOptions without_steady_state = options;
  without_steady_state.steady_state_cluster.clear();
  auto stream = std::unique_ptr<GeneratedJobStream>(
      new GeneratedJobStream(without_steady_state, std::move(generator)));
  stream->philly_ = std::move(philly_stream);
  return stream;
}

std::optional<Seconds> GeneratedJobStream::PeekArrival() const {
  if (!trials_.empty()) return trials_.front().arrival_time;
  if (philly_ != nullptr) return philly_->PeekArrival();
  if (steady_state_index_ < steady_state_remaining_.size()) return Seconds(0.0);
  if (options_.max_jobs.has_value() && num_generated_ >= *options_.max_jobs) return std::nullopt;
  return next_arrival_;
}

namespace {

// A uniform number in [0, 1) from (seed, n) alone (splitmix64), for choices that must not
// consume the original's random streams.
double HashUniform(std::uint64_t seed, std::uint64_t n) {
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ULL + n + 0x632BE59BD9B4E019ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

}  // namespace

TraceJob GeneratedJobStream::Pop() {
  if (!trials_.empty()) {
    TraceJob trial = std::move(trials_.front());
    trials_.pop_front();
    return trial;
  }
  TraceJob job = PopPlain();
  // The elastic and utility options decorate the job after every original draw.
  const std::uint64_t n = num_generated_ - 1;
  if (options_.elastic_fraction > 0.0 &&
      HashUniform(options_.seed, n) < options_.elastic_fraction) {
    job.elastic = ElasticSpec{1, std::max(job.scale_factor, std::min(2 * job.scale_factor, 8)), {}};
  }
  if (options_.utility && job.duration) {
    job.utility = DefaultUtility(*options_.utility, job.duration->value(), job.scale_factor);
  }
  // A hyper-parameter search: its own hash salt, so which jobs are searches does not follow
  // which are elastic.
  constexpr std::uint64_t kHpoSalt = 0x4850'4F00'0000'0001ULL;
  if (options_.hpo_fraction > 0.0 &&
      HashUniform(options_.seed ^ kHpoSalt, n) < options_.hpo_fraction) {
    job.app = static_cast<int>(n % 1'000'000'000);  // trace apps are in [0, 1e9]
    for (int k = 1; k < options_.hpo_trials; ++k) {
      TraceJob trial = job;
      const double fraction =
          0.1 + 0.4 * HashUniform(options_.seed ^ kHpoSalt, n * 64 + static_cast<std::uint64_t>(k));
      trial.total_steps = job.total_steps * fraction;
      if (job.duration) {
        trial.duration = Seconds(job.duration->value() * fraction);
        if (options_.utility) {
          trial.utility = DefaultUtility(*options_.utility, trial.duration->value(), job.scale_factor);
        }
      }
      trials_.push_back(std::move(trial));
    }
  }
  return job;
}

TraceJob GeneratedJobStream::PopPlain() {
  GAVEL_CHECK_MSG(PeekArrival().has_value(), "Pop() on an exhausted GeneratedJobStream");
  if (philly_ != nullptr) {
    ++num_generated_;
    return philly_->Pop();
  }
  TraceJob job = generator_.Next();
  ++num_generated_;
  if (steady_state_index_ < steady_state_remaining_.size()) {
    // Steady-state pre-generation: fill each GPU type at time 0; no inter-arrival draw.
    job.arrival_time = Seconds(0.0);
    int& remaining = steady_state_remaining_[steady_state_index_].second;
    remaining -= job.scale_factor;
    if (remaining <= 0) ++steady_state_index_;
    return job;
  }
  job.arrival_time = next_arrival_;
  // Scheduler._sample_arrival_time_delta(1.0 / lam), kept in the same floating-point form.
  double delta = 0.0;
  const double lam = options_.mean_interarrival.value();
  if (lam != 0.0) {
    const double rate = 1.0 / lam;
    delta = -std::log(1.0 - interarrival_rng_.Random()) / rate;
  }
  next_arrival_ = Seconds(delta + next_arrival_.value());
  return job;
}

Result<std::vector<TraceJob>> GenerateJobs(const GeneratorOptions& options,
                                           const ThroughputTable& throughputs, std::size_t count) {
  GAVEL_ASSIGN_OR_RETURN(std::unique_ptr<GeneratedJobStream> stream,
                         GeneratedJobStream::Create(options, throughputs));
  std::vector<TraceJob> jobs;
  jobs.reserve(count);
  while (jobs.size() < count && stream->PeekArrival().has_value()) jobs.push_back(stream->Pop());
  return jobs;
}

}  // namespace gavel::workload
