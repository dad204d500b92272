// JobOutcome: how a workload says a job ends (the Philly study's failure mix), carried on
// TraceJob as an optional label for a failure model to replay. The label is inert by itself:
// a simulation without a failure model runs every job to its total_steps, whatever the label.
//
// Contract for a consumer (docs/workloads.md, "Planned outcomes"):
//   kCompleted             runs to total_steps.
//   kUserError             stops for good when its progress reaches at_progress × total_steps
//                          (a deterministic error in the user's code: not retried).
//   kInfrastructureFailure fails when its progress reaches at_progress × total_steps; it is
//                          retried from its last checkpoint and then runs to total_steps.
//   kKilled                the user stops it at at_progress × total_steps (not a failure,
//                          not retried).
// at_progress is in (0, 1]; 1 for kCompleted. Imported traces give every job at_progress 1
// (the trace's run time already ends at the recorded event). Plain value type.
#pragma once

#include <string_view>

#include "gavel/core/status.h"

namespace gavel::workload {

enum class OutcomeKind { kCompleted, kUserError, kInfrastructureFailure, kKilled };

struct JobOutcome {
  OutcomeKind kind = OutcomeKind::kCompleted;
  double at_progress = 1.0;  // fraction of total_steps done when the job ends, in (0, 1]

  friend bool operator==(const JobOutcome&, const JobOutcome&) = default;
};

// "completed", "user_error", "infrastructure_failure", "killed".
const char* OutcomeKindName(OutcomeKind kind);
Result<OutcomeKind> ParseOutcomeKind(std::string_view name);

}  // namespace gavel::workload
