#include "gavel/workload/job_outcome.h"

#include <string>

namespace gavel::workload {

const char* OutcomeKindName(OutcomeKind kind) {
  switch (kind) {
    case OutcomeKind::kCompleted:
      return "completed";
    case OutcomeKind::kUserError:
      return "user_error";
    case OutcomeKind::kInfrastructureFailure:
      return "infrastructure_failure";
    case OutcomeKind::kKilled:
      return "killed";
  }
  return "completed";
}

Result<OutcomeKind> ParseOutcomeKind(std::string_view name) {
  for (OutcomeKind kind : {OutcomeKind::kCompleted, OutcomeKind::kUserError,
                           OutcomeKind::kInfrastructureFailure, OutcomeKind::kKilled}) {
    if (name == OutcomeKindName(kind)) return kind;
  }
  return Status::InvalidArgument("unknown job outcome '" + std::string(name) +
                                 "' (completed, user_error, infrastructure_failure, killed)");
}

}  // namespace gavel::workload
