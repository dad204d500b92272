// Themis (Mahajan et al., NSDI'20; docs/policies.md, "Themis"): finish-time fairness through
// partial-allocation auctions. Jobs group into apps (PolicyJob::app; a job without one is an
// app of its own). An app's finish-time fairness ρ = T_shared / T_isolated compares the finish
// time it gets with the one it would get alone on an equal 1/N share of the cluster. At every
// round (a round is a lease here) the fraction 1 − f of apps with the largest ρ bid: a
// partial-allocation auction gives them the allocation that maximises the product of their
// valuations 1/ρ (proportional fairness) and keeps, as a hidden payment, the fraction 1 − c_i
// of each winner's allocation (c_i = the others' product with i present / without i). What the
// auction leaves (unsold GPUs and the payments) goes to the other apps, largest ρ first.
// Whole gangs of one GPU type per job in the auction, time shares in the output (a hidden
// payment is a fraction of the lease). Needs remaining steps; recomputed every round.
// Stateless; single-threaded.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "gavel/core/status.h"
#include "gavel/policy/policy.h"

namespace gavel::policy {

struct ThemisOptions {
  // Fairness knob in [0, 1]: the fraction of apps that do NOT bid. f = 0: every app bids
  // (most fair); f = 1: no auction, the leftover pass alone (largest ρ first).
  double f = 0.8;
};

// Parses `f=` from options.params; errors name the key.
Result<ThemisOptions> ParseThemisOptions(const PolicyOptions& options);

// One job as a bidder sees it.
struct AuctionJob {
  int scale_factor = 1;
  // Per GPU type: the job's progress running there, as a fraction of its fastest type's
  // (0 = cannot run there).
  std::vector<double> rate;
};

// One bidding app. Its valuation of an allocation that runs jobs at total rate r (the sum of
// the allocated jobs' `rate`) is 1/ρ(r) = isolated / (elapsed + work / r), 0 when r = 0.
struct AuctionApp {
  std::vector<AuctionJob> jobs;
  double elapsed = 0.0;   // seconds since the app's first job arrived
  double work = 1.0;      // remaining work, seconds on each job's fastest type, summed; > 0
  double isolated = 1.0;  // T_isolated, seconds; > 0
};

struct AuctionResult {
  // Per app, per job: the GPU type it won, -1 = none.
  std::vector<std::vector<int>> type_of;
  // Per app: the fraction c_i in (0, 1] of its allocation it keeps (1 where it won nothing).
  std::vector<double> keep;
};

// The valuation 1/ρ of `app` at total rate `rate` (0 when rate = 0).
double AuctionValuation(const AuctionApp& app, double rate);

// How the payments' reruns (one per winner, without it) run: kReplay replays the full run's
// pops and simulates only the apps whose choices the winner's absence changes (same result,
// about one cheap check per pop instead of a heap operation); kStraightforward reruns the
// greedy from scratch, kept as the tests' oracle for kReplay.
enum class AuctionReruns { kReplay, kStraightforward };

// The proportionally fair allocation (most apps served, then the largest sum of log 1/ρ),
// found greedily GPU gang by gang (exact with one GPU type and one-GPU jobs of equal rates,
// where log 1/ρ is concave in the GPUs won), and each winner's partial-allocation payment
// from a second run without it. `free_gpus[j]`: GPUs of type j on sale.
AuctionResult PartialAllocationAuction(const std::vector<AuctionApp>& apps,
                                       const std::vector<int>& free_gpus,
                                       AuctionReruns reruns = AuctionReruns::kReplay);

std::unique_ptr<Policy> MakeThemis(const ThemisOptions& themis);
Result<std::unique_ptr<Policy>> MakeThemis(const PolicyOptions& options);
// The policy with its default options (options.params ignored).
std::unique_ptr<Policy> MakeThemisWithDefaults(const PolicyOptions& options);

}  // namespace gavel::policy
