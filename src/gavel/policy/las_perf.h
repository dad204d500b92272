// las_perf: least attained service in Tiresias' queues, each job on the fastest GPU type that
// has room for its gang (docs/policies.md, "las_perf"). Non-clairvoyant: it reads attained
// service, waiting time and throughputs, never remaining steps.
//
// Order: Tiresias' queues by attained GPU-seconds (TiresiasOptions), FIFO by arrival within
// a queue, jobs that waited `starve` seconds promoted to the first queue. GPUs are
// handed out in that order; a job that fits nowhere is skipped and the next may fit
// (backfilling), a gang gets all its GPUs of one type or none. Where it goes:
// - a running job stays on its type when that still fits (a move costs a restart), unless a
//   type with room (free GPUs no running job still to be placed will want back) runs it at
//   least `upgrade` times faster: idle fast GPUs are worth a restart;
// - any other job takes, among the fitting types, one with room before one without, then the
//   largest throughput, then the most room;
// - a job that has waited less than `patience` does not start where it runs below `slow`
//   times its fastest speed;
// - then trades: a placed job takes a faster type from jobs placed there (they take its
//   type) when that saves more expected run time than `trade` per restart, each job's
//   remaining work expected to be as much as it has done and at least the workload's mean
//   duration, `min_remaining` (Gavel's heterogeneity-awareness among the jobs chosen to
//   run, gangs included: the fast GPUs go to the jobs that save the most time on them).
// - calm rounds: while no round of the last `calm` seconds was contended, a round in which
//   every job finds room oldest first, each on the fastest type with room for its gang and
//   at least `calm_speed` of its best speed there, is run exactly so, afresh (moves
//   included), whatever the rules above would choose.
// Stateful (each job's service at its last promotion, the last contended round);
// single-threaded.
#pragma once

#include <memory>

#include "gavel/core/status.h"
#include "gavel/policy/policy.h"
#include "gavel/policy/tiresias.h"

namespace gavel::policy {

struct LasPerfOptions {
  // Tiresias' two queues split at one GPU-hour (more queues, geometric thresholds, let the
  // window's long jobs starve under load, and measured no better below it); a job that has
  // waited a day is promoted to the first queue (a gang preempted by a stream of new jobs
  // otherwise waits for a whole type to free up).
  TiresiasOptions queues{.thresholds = {3600.0}, .starve_seconds = 86400.0};
  double upgrade = 1.2;  // a running job moves to a type with room this many times faster
  // A trade must save more than this many seconds of expected run time per job it
  // restarts; 0 = no trades.
  double trade = 3600.0;
  // Seconds of work any job is expected to have left: the workload's mean job duration
  // (generated jobs: 60,303 s). With heavy-tailed durations a job that has run less than
  // that is expected to need about as much again (at least), however little it has run; a
  // floor far below it (half an hour) lets trades weigh a young gang that will run for
  // days as if it were about to finish, and move it to a slow type.
  double min_remaining = 60000.0;
  // A job that has waited less than `patience` seconds does not start on a type where it
  // runs below `slow` times its speed on its fastest type: it waits for a faster one.
  double slow = 0.2;
  double patience = 36000.0;
  // A calm round: every job finds room, oldest first, on the fastest type with room for its
  // gang, and there runs at least `calm_speed` times its speed on its fastest type. It is
  // run exactly so when no round of the last `calm` seconds was contended (seconds; 0 =
  // never): when nothing waits, the order only decides which type each job gets, and first
  // come on the fastest free type, moving whenever a faster one frees up, is what the
  // field's best at light load (oasis without utilities) does; once jobs compete for GPUs,
  // or some would run far below their best speed, the queues decide, until `calm` seconds
  // after the last such round (default: one simulator round, so the first calm round).
  double calm = 360.0;
  double calm_speed = 0.5;
};

// Parses tiresias_2das's keys (queues=, thresholds=, starve=), `upgrade=F` (F >= 1; 0 = never
// move a running job), `trade=S`, `min_remaining=S` (S >= 1), `patience=S`, `calm=S`
// (seconds), `slow=R` and `calm_speed=R` (R in [0, 1]) from options.params. Errors name the
// key.
Result<LasPerfOptions> ParseLasPerfOptions(const PolicyOptions& options);

std::unique_ptr<Policy> MakeLasPerf(const LasPerfOptions& options);
Result<std::unique_ptr<Policy>> MakeLasPerf(const PolicyOptions& options);
std::unique_ptr<Policy> MakeLasPerfWithDefaults(const PolicyOptions& options);

}  // namespace gavel::policy
