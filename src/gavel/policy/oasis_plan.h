// What OASiS promises and at what price, as plain values shared by its parts: the servers a
// cluster is cut into, one slot's promised amounts per server (SlotView), a job's placement in
// a slot (PlanEntry) and its plan over slots (PlanRun), the price curve between the bounds L
// and U, its parameter servers, and the aligned steps of a job's programme (StepGrid).
//
// Plain values; no state, no locking.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

namespace gavel::policy::oasis {

inline constexpr double kInf = std::numeric_limits<double>::infinity();

struct Server {
  int type = 0;
  int gpus = 0;
  double cpus = 0.0;  // 0 = CPU not limited
};

// One slot's promised resources, per server (pointers into a ledger's rows or a copy).
struct SlotView {
  const int* gpus = nullptr;
  const double* cpus = nullptr;
};

using GpuPlacement = std::pair<std::size_t, int>;     // (server, GPUs)
using CpuPlacement = std::pair<std::size_t, double>;  // (server, cores)

// What a schedule holds in one slot: the choice and the per-server amounts it promised.
struct PlanEntry {
  int type = -1;
  int workers = 0;
  std::vector<GpuPlacement> gpus;
  std::vector<CpuPlacement> cpus;

  bool operator==(const PlanEntry&) const = default;
};

// A job's plan: consecutive slots [first, end) that hold the same entry.
struct PlanRun {
  std::int64_t first = 0;
  std::int64_t end = 0;
  PlanEntry entry;
};

// A resource's price per unit and slot, rising with the amount already promised:
//     p = L · (U / L)^(used / capacity)
// (+inf where there is no capacity; U below L counts as L). Every part prices through this one
// expression, so that kept and fresh prices agree to the bit.
struct PriceCurve {
  double lower = kInf;  // L
  double upper = 0.0;   // U
  double operator()(double used, double capacity) const {
    if (capacity <= 0.0) return kInf;
    const double top = std::max(upper, lower);
    return lower * std::pow(top / lower, std::min(1.0, used / capacity));
  }
};

// A job's parameter servers: ceil(workers · ratio) of them, `cpus` cores each (CPU-limited
// clusters only).
struct ParameterServers {
  double ratio = 0.25;
  double cpus = 2.0;
  int For(int workers) const { return static_cast<int>(std::ceil(workers * ratio - 1e-9)); }
};

// The dynamic programme's steps over a horizon of `slots` slots from the current one: `group`
// slots each, a power of two, the steps' boundaries on absolute multiples of `group` (the
// first step runs from now to the next multiple, the last ends with the horizon). Aligned,
// the plans of jobs that arrive in other slots with other horizons change hands on the same
// slots, so that the slots between hold equal promises and share one promise state: without
// it every job's boundaries fell elsewhere, each slot soon held a state of its own, and an
// arrival priced and promised slot by slot (docs/policies.md "oasis", "Bursts").
struct StepGrid {
  int slots = 0;   // the horizon
  int group = 1;   // slots per step
  int offset = 0;  // the current slot's place in its group (now_slot mod group)
  int count = 0;   // steps
  // The horizon's slots [First(step), Last(step)) (relative to the current slot).
  int First(int step) const { return step == 0 ? 0 : step * group - offset; }
  int Last(int step) const { return std::min(slots, (step + 1) * group - offset); }
};

// The smallest power-of-two group that covers `slots` in at most `most_steps` aligned steps.
inline StepGrid MakeStepGrid(int slots, int most_steps, std::int64_t now_slot) {
  for (int group = 1;; group *= 2) {
    const auto offset = static_cast<int>(((now_slot % group) + group) % group);
    const int count = (slots + offset + group - 1) / group;
    if (count <= most_steps) return StepGrid{slots, group, offset, count};
  }
}

}  // namespace gavel::policy::oasis
