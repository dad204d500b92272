// Policy benchmarks: the wall-clock time of one Policy::Allocate for every policy in the
// registry, on the input of the original's policy-runtime microbenchmark
// (scripts/microbenchmarks/sweep_policy_runtimes.py in the original's repository): n
// single-GPU jobs with types drawn uniformly from the 26 models of the job table, a cluster of
// n/4 V100s, n/4 P100s and n/4 K80s, throughputs from data/simulation_throughputs.json.
//
// Only Allocate is timed (manual timing): the input is built once per (n, input shape) and
// each iteration gets a fresh policy object, so stateful policies (FTF, FIFO, Gandiva,
// AlloX) always start cold, as in the original, which builds its policy once per trial.
//
// Varied jobs (`<policy>:varied/<n>`, every space-sharing policy and AlloX): the same jobs part
// way through their run, as a scheduler sees them after some rounds: each has done a random
// fraction of its work (so its remaining steps, time since arrival and weight differ from its
// model's other jobs), and SLOs are not proportional to the remaining work. No two jobs are
// alike, so the policies cannot solve over classes of alike jobs (docs/policies.md).
//
// Sizes: 32, 64, ..., 2048 for every policy; 10,000 and 100,000 for the policies without
// space sharing, only with --gavel_large (a few extra minutes in all). A point
// whose solve time, extrapolated from the smaller points of the same policy, would exceed the
// budget (or whose memory would exceed the limit) is skipped with a message saying so, and a
// policy that returns an error is skipped with its message: neither stops the run.
//
// Flags of our own (removed before Google Benchmark reads the rest):
//   --gavel_large               also run 10,000 and 100,000 jobs (or GAVEL_BENCH_LARGE=1)
//   --gavel_max_jobs=N          register no size above N (run.sh --quick uses 512)
//   --gavel_budget_s=S          skip points estimated to take longer than S s per solve (300)
//   --gavel_packed_budget_s=S   the same for space-sharing policies (60)
//   --gavel_mem_limit_mib=M     skip points estimated to need more than M MiB (4096)
//   --gavel_repeat_limit_s=S    one solve slower than S s is not repeated (20)
//   --gavel_varied_age_scale=A  varied jobs' time since arrival times A (1; e.g. 0.001: as if
//                               they had hardly waited)
//   --gavel_varied_unit_weights varied jobs all of weight 1 (with a small age scale: no job's
//                               finish-time ratio stands out, the ratio search's hard case)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gavel/core/check.h"
#include "gavel/core/py_random.h"
#include "gavel/core/shipped_table.h"
#include "gavel/core/snapshot.h"
#include "gavel/core/throughput_table.h"
#include "gavel/policy/policy.h"
#include "gavel/policy/policy_input.h"
#include "gavel/policy/registry.h"

namespace gavel::bench {
namespace {

// random.Random(trial + 2) for trial 0, as the original's microbenchmark seeds its jobs.
constexpr std::uint64_t kSeed = 2;
// The original draws SLOs from a separate generator seeded seed + 6.
constexpr std::uint64_t kSloSeed = kSeed + 6;
// Entities come from their own generator, so the jobs are the same for every policy.
constexpr std::uint64_t kEntitySeed = kSeed + 10;
// The varied jobs' progress, ages, weights and deadlines, from their own generator.
constexpr std::uint64_t kVariedSeed = kSeed + 20;
constexpr int kNumEntities = 5;

// $ per GPU-hour (the original's cloud prices for these types).
constexpr double kCostK80 = 0.45;
constexpr double kCostP100 = 1.46;
constexpr double kCostV100 = 2.48;

constexpr int kSmallSizes[] = {32, 64, 128, 256, 512, 1024, 2048};
constexpr int kLargeSizes[] = {10000, 100000};
constexpr int kLargestSmallSize = 2048;

// The original's JobTable (scheduler/job_table.py), in its order: random.choice indexes into it.
constexpr std::string_view kJobTable[] = {
    "ResNet-18 (batch size 16)",
    "ResNet-18 (batch size 32)",
    "ResNet-18 (batch size 64)",
    "ResNet-18 (batch size 128)",
    "ResNet-18 (batch size 256)",
    "ResNet-50 (batch size 16)",
    "ResNet-50 (batch size 32)",
    "ResNet-50 (batch size 64)",
    "ResNet-50 (batch size 128)",
    "Transformer (batch size 16)",
    "Transformer (batch size 32)",
    "Transformer (batch size 64)",
    "Transformer (batch size 128)",
    "Transformer (batch size 256)",
    "LM (batch size 5)",
    "LM (batch size 10)",
    "LM (batch size 20)",
    "LM (batch size 40)",
    "LM (batch size 80)",
    "Recommendation (batch size 512)",
    "Recommendation (batch size 1024)",
    "Recommendation (batch size 2048)",
    "Recommendation (batch size 4096)",
    "Recommendation (batch size 8192)",
    "A3C",
    "CycleGAN",
};

struct Settings {
  bool large = false;
  int max_jobs = 100000;
  double budget_s = 300.0;
  double packed_budget_s = 60.0;
  double mem_limit_mib = 4096.0;
  double repeat_limit_s = 20.0;
  double varied_age_scale = 1.0;
  bool varied_unit_weights = false;
};

Settings& GetSettings() {
  static Settings settings;
  return settings;
}

// What a policy needs beyond jobs and throughputs; inputs are shared between policies with
// the same shape.
struct InputShape {
  int num_jobs = 0;
  bool pairs = false;
  bool costs = false;
  bool slos = false;
  bool entities = false;
  bool varied = false;  // jobs part way through their run (see the top of the file)
  friend bool operator==(const InputShape&, const InputShape&) = default;
};

// One benchmark family: a policy on the reference's jobs or on varied ones.
struct Case {
  const policy::PolicyInfo* info = nullptr;
  bool varied = false;
  std::string name;  // the policy's, with ":varied" for varied jobs
};

InputShape ShapeFor(const policy::PolicyInfo& info, bool varied, int num_jobs) {
  InputShape shape;
  shape.num_jobs = num_jobs;
  shape.varied = varied;
  shape.pairs = info.capabilities.packing;
  shape.costs = info.capabilities.needs_instance_costs;
  shape.slos = info.name.ends_with("_SLOs");
  shape.entities = info.name.find("water_filling") != std::string_view::npos;
  return shape;
}

// The original's jobs: the same random calls as its generate_job (scheduler/utils.py) without
// multi-GPU or multi-priority jobs, so the sequence matches random.Random(2) draw for draw.
ClusterSnapshot MakeSnapshot(const InputShape& shape) {
  ClusterSnapshot snapshot;
  const int per_type = shape.num_jobs / 4;
  snapshot.gpu_types = {{"k80", per_type, 1}, {"p100", per_type, 1}, {"v100", per_type, 1}};
  if (shape.costs) {
    snapshot.instance_costs = {{"k80", kCostK80}, {"p100", kCostP100}, {"v100", kCostV100}};
  }
  PyRandom rng(kSeed);
  PyRandom slo_rng(kSloSeed);
  PyRandom entity_rng(kEntitySeed);
  PyRandom varied_rng(kVariedSeed);
  std::vector<std::string> entities;
  if (shape.entities) {
    for (int e = 0; e < kNumEntities; ++e) {
      entities.push_back("entity" + std::to_string(e));
      snapshot.entity_weights[entities.back()] = static_cast<double>(entity_rng.RandInt(1, 3));
    }
  }
  const std::optional<int> v100 = ShippedThroughputTable()->GpuTypeIndex("v100");
  GAVEL_CHECK(v100.has_value());
  snapshot.jobs.reserve(static_cast<std::size_t>(shape.num_jobs));
  for (int i = 0; i < shape.num_jobs; ++i) {
    JobSpec job;
    job.id = JobId(static_cast<JobId::rep_type>(i));
    rng.Uniform(0.0, 1.0);  // the scale-factor draw; the job stays single-GPU
    const double duration = rng.Random() >= 0.8 ? 60.0 * std::pow(10.0, rng.Uniform(3.0, 4.0))
                                                : 60.0 * std::pow(10.0, rng.Uniform(1.5, 3.0));
    job.job_type = std::string(kJobTable[rng.ChoiceIndex(std::size(kJobTable))]);
    const std::optional<int> key = ShippedThroughputTable()->KeyIndex(JobTypeKey{job.job_type, 1});
    GAVEL_CHECK_MSG(key.has_value(), job.job_type.c_str());
    job.steps_remaining = duration * ShippedThroughputTable()->Isolated(*v100, *key).value_or(0.0);
    // Varied: done a fraction of its work, having spent 1-4 times the V100 time on it (it
    // waited, or ran on slower GPUs); weight 1, 2 or 4; its deadline a factor of the remaining
    // V100 time times 1-2 (looser than the reference's: those SLOs can all be met).
    double left = 1.0;
    double jitter = 1.0;
    if (shape.varied) {
      const double done = varied_rng.Uniform(0.0, 0.9);
      left = 1.0 - done;
      job.steps_remaining = *job.steps_remaining * left;
      job.time_since_start = Seconds(done * duration * varied_rng.Uniform(1.0, 4.0) *
                                     GetSettings().varied_age_scale);
      const double w = varied_rng.Random();
      job.priority_weight =
          GetSettings().varied_unit_weights ? 1.0 : (w < 0.6 ? 1.0 : (w < 0.9 ? 2.0 : 4.0));
      jitter = std::pow(2.0, varied_rng.Uniform(0.0, 1.0));
    }
    if (shape.slos) {
      const double r = slo_rng.Uniform(0.0, 1.0);
      const double factor = r < 0.33 ? 1.2 : (r < 0.67 ? 2.0 : 10.0);
      job.slo_time_left = Seconds(factor * duration * left * jitter);
    }
    if (shape.entities) job.entity = entities[entity_rng.ChoiceIndex(entities.size())];
    snapshot.jobs.push_back(std::move(job));
  }
  return snapshot;
}

// The last input built: consecutive repetitions of one point reuse it, and holding only one
// keeps the n² pairs of a large packed input from piling up.
Result<std::shared_ptr<const policy::PolicyInput>> InputFor(const Case& c, int num_jobs) {
  const policy::PolicyInfo& info = *c.info;
  static std::optional<InputShape> cached_shape;
  static std::shared_ptr<const policy::PolicyInput> cached_input;
  const InputShape shape = ShapeFor(info, c.varied, num_jobs);
  if (cached_shape == shape) return cached_input;
  cached_input.reset();  // free the old input before building the next
  cached_shape.reset();
  const policy::InputRequirements requirements =
      policy::RequirementsOf(info.capabilities, /*compat_gavel=*/false);
  GAVEL_ASSIGN_OR_RETURN(policy::PolicyInput input,
                         policy::BuildPolicyInput(MakeSnapshot(shape), ShippedThroughputTable().get(), requirements));
  cached_input = std::make_shared<const policy::PolicyInput>(std::move(input));
  cached_shape = shape;
  return cached_input;
}

// Peak resident memory of the process, measured around one Allocate: Linux lets a process
// reset its high-water mark by writing 5 to /proc/self/clear_refs.
void ResetPeakRss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
}

double ReadStatusKib(std::string_view field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with(field)) return std::strtod(line.c_str() + field.size(), nullptr);
  }
  return 0.0;
}

// CPU seconds of the whole process (all threads): on a shared machine this tells how much of
// the wall-clock time the solve actually computed.
double ProcessCpuSeconds() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

// What the earlier points of a policy took, for extrapolating to the next size.
struct Point {
  int num_jobs = 0;
  // The first call's first solve: decides whether the point is repeated, once for all its
  // repetitions (Google Benchmark aborts on a mix of good and skipped repetitions).
  double first_seconds = 0.0;
  double seconds = 0.0;              // one solve: the median of the calls' per-iteration means
  double extra_mib = 0.0;            // peak RSS during the first Allocate minus RSS before it
  std::vector<double> call_seconds;  // each call's per-iteration mean
};
std::map<std::string, std::map<int, Point>, std::less<>>& History() {
  static std::map<std::string, std::map<int, Point>, std::less<>> history;
  return history;
}

// Extrapolates `value(n)` from the two largest measured sizes below n with the local power
// law between them, its exponent clamped to [min_exponent, 4] (small points are noisy and can
// even decrease); with one point, uses `default_exponent`.
std::optional<double> Extrapolate(const std::map<int, Point>& points, int num_jobs,
                                  double (*value)(const Point&), double min_exponent,
                                  double default_exponent, int* from_jobs) {
  const Point* last = nullptr;
  const Point* before = nullptr;
  for (const auto& [n, point] : points) {
    if (n >= num_jobs) break;
    before = last;
    last = &point;
  }
  if (last == nullptr || value(*last) <= 0.0) return std::nullopt;
  double exponent = default_exponent;
  if (before != nullptr && value(*before) > 0.0) {
    exponent = std::log(value(*last) / value(*before)) /
               std::log(static_cast<double>(last->num_jobs) / before->num_jobs);
    exponent = std::clamp(exponent, min_exponent, 4.0);
  }
  *from_jobs = last->num_jobs;
  return value(*last) * std::pow(static_cast<double>(num_jobs) / last->num_jobs, exponent);
}

std::string Fixed(double value, int digits) {
  std::ostringstream text;
  text.setf(std::ios::fixed);
  text.precision(digits);
  text << value;
  return text.str();
}

// Why this point should not run, or nothing.
std::optional<std::string> SkipReason(const Case& c, int num_jobs) {
  const policy::PolicyInfo& info = *c.info;
  const Settings& settings = GetSettings();
  const auto it = History().find(c.name);
  if (it == History().end()) return std::nullopt;
  if (const auto self = it->second.find(num_jobs); self != it->second.end()) {
    if (self->second.first_seconds > settings.repeat_limit_s) {
      return "repetition skipped: one solve took " + Fixed(self->second.first_seconds, 1) +
             " s (> " + Fixed(settings.repeat_limit_s, 0) + " s)";
    }
    return std::nullopt;
  }
  const double budget = info.capabilities.packing ? settings.packed_budget_s : settings.budget_s;
  int from = 0;
  // Space sharing makes the problem grow with the n² pairs; time and memory grow at least as
  // fast as the problem.
  const double size_exponent = info.capabilities.packing ? 2.0 : 1.0;
  const auto seconds = Extrapolate(
      it->second, num_jobs, [](const Point& p) { return p.seconds; }, size_exponent,
      2.0 * size_exponent, &from);
  if (seconds && *seconds > budget) {
    return "not run: would take about " + Fixed(*seconds, 0) + " s per solve (> " +
           Fixed(budget, 0) + " s budget), extrapolated from the " + std::to_string(from) +
           "-job point";
  }
  const auto mib = Extrapolate(
      it->second, num_jobs, [](const Point& p) { return p.extra_mib; }, size_exponent,
      size_exponent, &from);
  if (mib && *mib > settings.mem_limit_mib) {
    return "not run: would need about " + Fixed(*mib, 0) + " MiB (> " +
           Fixed(settings.mem_limit_mib, 0) + " MiB limit), extrapolated from the " +
           std::to_string(from) + "-job point";
  }
  return std::nullopt;
}

void BM_Allocate(benchmark::State& state, const Case* c) {
  const policy::PolicyInfo* info = c->info;
  const int num_jobs = static_cast<int>(state.range(0));
  if (const auto reason = SkipReason(*c, num_jobs)) {
    state.SkipWithError(reason->c_str());
    return;
  }
  const auto input = InputFor(*c, num_jobs);
  if (!input.ok()) {
    state.SkipWithError(("input: " + input.status().ToString()).c_str());
    return;
  }
  policy::PolicyOptions options;
  options.seed = kSeed;
  bool first = true;
  Point point;
  point.num_jobs = num_jobs;
  double total_seconds = 0.0;
  double total_cpu_seconds = 0.0;
  std::string label;
  for (auto _ : state) {
    auto policy = policy::MakePolicy(info->name, options);
    if (!policy.ok()) {
      state.SkipWithError(policy.status().ToString().c_str());
      break;
    }
    double rss_before_kib = 0.0;
    if (first) {
      ResetPeakRss();
      rss_before_kib = ReadStatusKib("VmRSS:");
    }
    const double cpu_start = ProcessCpuSeconds();
    const auto start = std::chrono::steady_clock::now();
    auto output = (*policy)->Allocate(**input);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    total_cpu_seconds += ProcessCpuSeconds() - cpu_start;
    if (!output.ok()) {
      state.SkipWithError(output.status().ToString().c_str());
      break;
    }
    state.SetIterationTime(seconds);
    total_seconds += seconds;
    if (first) {
      point.first_seconds = seconds;
      point.extra_mib = std::max(0.0, ReadStatusKib("VmHWM:") - rss_before_kib) / 1024.0;
      state.counters["peak_rss_MiB"] = ReadStatusKib("VmHWM:") / 1024.0;
      label = policy::AllocationStatusName(output->status);
      // A fallback is a different, usually cheaper, computation: say why next to the time.
      if (!output->note.empty() && output->status == policy::AllocationStatus::kFallback) {
        label += ": " + output->note;
      }
      // So is a fast path that gave up for the general one (policy/fast_path.h).
      if (output->note.find("fast path failed") != std::string::npos) label += " (fast path failed)";
      first = false;
    }
    benchmark::DoNotOptimize(output->allocation.data().data());
  }
  if (state.error_occurred()) return;
  state.counters["jobs"] = num_jobs;
  state.counters["pairs"] = static_cast<double>((*input)->pairs.size());
  state.counters["cpu_s"] =
      benchmark::Counter(total_cpu_seconds, benchmark::Counter::kAvgIterations);
  state.SetLabel(label);
  // The median, not the fastest call: an optimistic estimate would let a point far above the
  // budget run.
  Point& recorded = History()[c->name].try_emplace(num_jobs, point).first->second;
  recorded.call_seconds.push_back(total_seconds / static_cast<double>(state.iterations()));
  std::vector<double> sorted = recorded.call_seconds;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t mid = sorted.size() / 2;
  recorded.seconds = sorted.size() % 2 == 1 ? sorted[mid] : 0.5 * (sorted[mid - 1] + sorted[mid]);
}

// The benchmark families; Google Benchmark keeps pointers to them.
std::vector<std::unique_ptr<Case>>& Cases() {
  static std::vector<std::unique_ptr<Case>> cases;
  return cases;
}

void RegisterAll() {
  const Settings& settings = GetSettings();
  for (const policy::PolicyInfo& info : policy::AllPolicies()) {
    const std::string name(info.name);
    Case* const base = Cases().emplace_back(new Case{&info, false, name}).get();
    // Varied jobs for the policies whose fast paths depend on jobs being alike: space sharing
    // (classes of jobs) and AlloX (its slot classes).
    std::vector<Case*> families = {base};
    if (info.capabilities.packing || name == "allox") {
      families.push_back(Cases().emplace_back(new Case{&info, true, name + ":varied"}).get());
    }
    for (Case* c : families) {
      auto* small = benchmark::RegisterBenchmark(c->name.c_str(), BM_Allocate, c);
      small->UseManualTime()->Unit(benchmark::kMillisecond)->MinTime(0.2)->Repetitions(3);
      for (int n : kSmallSizes) {
        if (n <= settings.max_jobs) small->Arg(n);
      }
    }
    // Space-sharing inputs grow as n²: 10,000 jobs would already be 50 million pairs.
    if (!settings.large || info.capabilities.packing || settings.max_jobs <= kLargestSmallSize) {
      continue;
    }
    for (int n : kLargeSizes) {
      if (n > settings.max_jobs) continue;
      auto* large = benchmark::RegisterBenchmark(name.c_str(), BM_Allocate, base);
      large->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(1)->Arg(n);
      large->Repetitions(n <= kLargeSizes[0] ? 3 : 1);
    }
  }
}

bool ParseFlag(std::string_view arg, std::string_view name, std::string* value) {
  if (!arg.starts_with(name)) return false;
  arg.remove_prefix(name.size());
  if (arg.empty()) {
    value->clear();
    return true;
  }
  if (arg.front() != '=') return false;
  *value = std::string(arg.substr(1));
  return true;
}

double ParsePositive(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(value > 0.0)) {
    std::fprintf(stderr, "policy_bench: %s needs a positive number, got \"%s\"\n", flag.c_str(),
                 text.c_str());
    std::exit(2);
  }
  return value;
}

// Takes our flags out of argv, leaving Google Benchmark's.
void ParseOwnFlags(int* argc, char** argv) {
  Settings& settings = GetSettings();
  if (const char* env = std::getenv("GAVEL_BENCH_LARGE");
      env != nullptr && *env != '\0' && std::string_view(env) != "0") {
    settings.large = true;
  }
  int kept = 1;
  for (int i = 1; i < *argc; ++i) {
    const std::string_view arg = argv[i];
    std::string value;
    if (ParseFlag(arg, "--gavel_large", &value)) {
      settings.large = value.empty() || value == "true" || value == "1";
    } else if (ParseFlag(arg, "--gavel_max_jobs", &value)) {
      settings.max_jobs = static_cast<int>(ParsePositive("--gavel_max_jobs", value));
    } else if (ParseFlag(arg, "--gavel_budget_s", &value)) {
      settings.budget_s = ParsePositive("--gavel_budget_s", value);
    } else if (ParseFlag(arg, "--gavel_packed_budget_s", &value)) {
      settings.packed_budget_s = ParsePositive("--gavel_packed_budget_s", value);
    } else if (ParseFlag(arg, "--gavel_mem_limit_mib", &value)) {
      settings.mem_limit_mib = ParsePositive("--gavel_mem_limit_mib", value);
    } else if (ParseFlag(arg, "--gavel_repeat_limit_s", &value)) {
      settings.repeat_limit_s = ParsePositive("--gavel_repeat_limit_s", value);
    } else if (ParseFlag(arg, "--gavel_varied_age_scale", &value)) {
      settings.varied_age_scale = ParsePositive("--gavel_varied_age_scale", value);
    } else if (ParseFlag(arg, "--gavel_varied_unit_weights", &value)) {
      settings.varied_unit_weights = value.empty() || value == "true" || value == "1";
    } else if (arg.starts_with("--gavel_")) {
      std::fprintf(stderr, "policy_bench: unknown flag %s\n", argv[i]);
      std::exit(2);
    } else {
      argv[kept++] = argv[i];
    }
  }
  *argc = kept;
}

}  // namespace
}  // namespace gavel::bench

int main(int argc, char** argv) {
  gavel::bench::ParseOwnFlags(&argc, argv);
  gavel::bench::RegisterAll();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("input",
                              "n single-GPU jobs, types uniform over the 26 models, "
                              "cluster v100=p100=k80=n/4, seed 2 (spec 4.6); <policy>:varied: "
                              "the same jobs part way through their run (seed 22)");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
