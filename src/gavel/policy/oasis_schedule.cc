#include "gavel/policy/oasis_schedule.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <utility>

#include "gavel/policy/oasis_plan.h"

namespace gavel::policy {
namespace {

// The one infinity of the oasis parts (a second definition here clashes with oasis.cc's
// using-declaration when a unity build compiles both in one unit).
using oasis::kInf;

// least[e] = candidate(e) and picked[e] = label where candidate(e) < least[e], for e < count:
// selects on doubles only (the labels are small integers, exact as doubles), no branch, so
// that it vectorises.
template <class Candidate>
void Improve(double* __restrict least, double* __restrict picked, std::size_t count, double label,
             Candidate candidate) {
  for (std::size_t e = 0; e < count; ++e) {
    const double value = candidate(e);
    const double old = least[e];
    const double better = value < old ? 1.0 : 0.0;
    least[e] = std::min(old, value);                       // value < old ? value : old
    picked[e] = picked[e] + (label - picked[e]) * better;  // exact: small integers
  }
}

}  // namespace

Schedule BestSchedule(const ScheduleProblem& problem) {
  const int slots = static_cast<int>(problem.choices.size());
  const int units = problem.units;
  Schedule best;
  if (units <= 0 || slots == 0) return best;
  const auto width = static_cast<std::size_t>(units + 1);
  // row[e]: least cost of e units done by the end of slot t (previous: by t − 1); done[t]:
  // row[units] of slot t; pick[t][e]: the choice made in slot t on that path (-1 = idle).
  // Choice by choice over all e (the same comparisons, in the same order per e, as choice by
  // choice per e), branch-free so that it vectorises; the buffers are reused across calls.
  thread_local std::vector<double> previous;
  thread_local std::vector<double> row;
  thread_local std::vector<double> done;
  thread_local std::vector<double> pick;  // labels as doubles, so that the selects vectorise
  previous.assign(width, kInf);
  previous[0] = 0.0;
  row.resize(width);
  done.resize(static_cast<std::size_t>(slots));
  pick.assign(static_cast<std::size_t>(slots) * width, -1);
  for (int t = 0; t < slots; ++t) {
    double* picked = &pick[static_cast<std::size_t>(t) * width];
    const auto& choices = problem.choices[static_cast<std::size_t>(t)];
    std::copy(previous.begin(), previous.end(), row.begin());
    double* least = row.data();
    const double* before = previous.data();
    for (std::size_t c = 0; c < choices.size(); ++c) {
      const auto label = static_cast<double>(c);
      const double cost = choices[c].cost;
      // e < units of the choice: from nothing done (index max(0, e − units) = 0).
      const auto shift = static_cast<std::size_t>(std::max(0, choices[c].units));
      const std::size_t split = std::min(shift, width);
      const double from_none = before[0] + cost;
      Improve(least, picked, split, label, [from_none](std::size_t) { return from_none; });
      Improve(least + split, picked + split, width - split, label,
              [from = before + split - shift, cost](std::size_t e) { return from[e] + cost; });
    }
    done[static_cast<std::size_t>(t)] = row[static_cast<std::size_t>(units)];
    std::swap(previous, row);
  }
  // Completion at the end of slot t needs E units by t; the utility decides which t is best.
  for (int t = 0; t < slots; ++t) {
    const double c = done[static_cast<std::size_t>(t)];
    if (!std::isfinite(c)) continue;
    const double payoff = problem.utility(t) - c;
    if (!best.feasible || payoff > best.payoff) {
      best.feasible = true;
      best.payoff = payoff;
      best.cost = c;
      best.finish_slot = t;
    }
  }
  if (!best.feasible) return best;
  best.per_slot.assign(static_cast<std::size_t>(best.finish_slot + 1), SlotChoice{});
  int e = units;
  for (int t = best.finish_slot; t >= 0 && e > 0; --t) {
    const auto c =
        static_cast<int>(pick[static_cast<std::size_t>(t) * width + static_cast<std::size_t>(e)]);
    if (c < 0) continue;  // idle in slot t on this path
    const SlotChoice& choice =
        problem.choices[static_cast<std::size_t>(t)][static_cast<std::size_t>(c)];
    best.per_slot[static_cast<std::size_t>(t)] = choice;
    e = std::max(0, e - choice.units);
  }
  return best;
}

}  // namespace gavel::policy
