// The documented range of every number Gavel reads from a user (files, flags, RPCs); the
// table is in docs/formats.md, "Bounds". Every parser checks its numbers against these
// constants and names the file/line/field or flag when one is outside, so that no input can
// overflow a conversion, run a simulation without end, or hand a solver values whose ratios
// make its "optimal" meaningless.
//
// Why these numbers: each is 2-3 orders of magnitude beyond anything in the shipped data
// (throughputs 0.22-699 steps/s, at most 8.7e8 steps per trace job, arrivals up to 1.1e7 s),
// and small enough that products the scheduler forms (steps / throughput, weight x
// throughput, a round count) stay well inside a double's exact range and the LP solvers'
// tolerances. Constants only; thread-safe.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "gavel/core/status.h"

namespace gavel::bounds {

// Steps per second of one job on one GPU type; 0 means "cannot run there". A positive value
// below the minimum is refused rather than rounded to 0, so that nothing is silently lost.
inline constexpr double kMinPositiveThroughput = 1e-4;
inline constexpr double kMaxThroughput = 1e5;
// Total (or remaining) steps of one job.
inline constexpr double kMaxSteps = 1e10;
// Any time in seconds: arrivals, durations, SLOs, time since start, windows (~31.7 years).
inline constexpr double kMaxSeconds = 1e9;
// Round length: at least a millisecond (a shorter one would make a simulation take ~forever
// in rounds), at most a day.
inline constexpr double kMinRoundSeconds = 1e-3;
inline constexpr double kMaxRoundSeconds = 86400.0;
// Priority and entity weights.
inline constexpr double kMinWeight = 1e-6;
inline constexpr double kMaxWeight = 1e6;
// Prices in $/hour per GPU.
inline constexpr double kMaxPrice = 1e6;
// Host resources of one server, or one GPU's share of them (CPU cores, GB of memory): far
// beyond any machine, so that a typo (an extra digit) is refused.
inline constexpr double kMaxHostCpus = 1e5;
inline constexpr double kMaxHostMemGb = 1e7;
// GPUs: per type in a cluster, per server, per job (scale factor), offered by one agent.
inline constexpr int kMaxGpus = 1'000'000;
// Seeds: numpy's range (the original seeds numpy as well as Python's random).
inline constexpr std::uint64_t kMaxSeed = 4'294'967'295ULL;
// Arrival rates in jobs per hour.
inline constexpr double kMaxJobsPerHour = 1e6;
// Jobs listed in one trace or snapshot.
inline constexpr std::size_t kMaxJobs = 10'000'000;

// InvalidArgument "<where>: <value> is outside [lo, hi]<unit>" unless lo <= value <= hi
// (NaN and infinities are outside every range).
inline Status CheckRange(double value, double lo, double hi, const std::string& where,
                         const char* unit = "") {
  if (std::isfinite(value) && value >= lo && value <= hi) return Status::Ok();
  char text[160];
  std::snprintf(text, sizeof text, "%.17g is outside [%g, %g]%s", value, lo, hi, unit);
  return Status::InvalidArgument(where + ": " + text);
}

// A throughput: 0, or within [kMinPositiveThroughput, kMaxThroughput].
inline Status CheckThroughput(double value, const std::string& where) {
  if (value == 0.0) return Status::Ok();
  return CheckRange(value, kMinPositiveThroughput, kMaxThroughput, where,
                    " steps/s (or exactly 0 = cannot run)");
}

}  // namespace gavel::bounds
