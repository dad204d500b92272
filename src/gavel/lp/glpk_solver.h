// GLPK (GNU Linear Programming Kit) as an independent second solver: the tests check the
// Clp-backed policies against it. Kept in its own target (gavel_lp_glpk) so the product does
// not depend on it. Thread-safety: GLPK keeps global state; use from one thread at a time.
#pragma once

#include <memory>

#include "gavel/lp/solver.h"

namespace gavel::lp {
std::unique_ptr<Solver> MakeGlpkSolver();
}  // namespace gavel::lp
