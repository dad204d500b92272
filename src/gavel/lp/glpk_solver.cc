#include "gavel/lp/glpk_solver.h"

#include <glpk.h>

#include <cmath>
#include <string>

namespace gavel::lp {
namespace {

void SetBounds(glp_prob* lp, bool row, int index, double lo, double hi) {
  int type = GLP_FR;
  const bool has_lo = lo != -kInfinity;
  const bool has_hi = hi != kInfinity;
  if (has_lo && has_hi) type = (lo == hi) ? GLP_FX : GLP_DB;
  else if (has_lo) type = GLP_LO;
  else if (has_hi) type = GLP_UP;
  const double l = has_lo ? lo : 0.0;
  const double u = has_hi ? hi : 0.0;
  if (row) glp_set_row_bnds(lp, index, type, l, u);
  else glp_set_col_bnds(lp, index, type, l, u);
}

Result<Solution> SolveWithGlpk(const Model& model, const SolveOptions& options) {
  glp_term_out(options.verbose ? GLP_ON : GLP_OFF);
  glp_prob* lp = glp_create_prob();
  const int n = model.num_columns();
  const int m = model.num_rows();
  glp_set_obj_dir(lp, model.sense() == Sense::kMaximize ? GLP_MAX : GLP_MIN);
  if (n > 0) glp_add_cols(lp, n);
  if (m > 0) glp_add_rows(lp, m);
  for (int j = 0; j < n; ++j) {
    const Column& c = model.columns()[static_cast<std::size_t>(j)];
    SetBounds(lp, false, j + 1, c.lower, c.upper);
    glp_set_obj_coef(lp, j + 1, c.objective);
    if (c.integer) glp_set_col_kind(lp, j + 1, GLP_IV);
  }
  std::vector<int> ia{0}, ja{0};
  std::vector<double> ar{0.0};
  for (int i = 0; i < m; ++i) {
    SetBounds(lp, true, i + 1, model.row_lower()[static_cast<std::size_t>(i)],
              model.row_upper()[static_cast<std::size_t>(i)]);
    for (int k = model.row_start()[static_cast<std::size_t>(i)];
         k < model.row_start()[static_cast<std::size_t>(i) + 1]; ++k) {
      ia.push_back(i + 1);
      ja.push_back(model.entry_column()[static_cast<std::size_t>(k)] + 1);
      ar.push_back(model.entry_value()[static_cast<std::size_t>(k)]);
    }
  }
  glp_load_matrix(lp, static_cast<int>(ia.size()) - 1, ia.data(), ja.data(), ar.data());

  Solution solution;
  glp_smcp params;
  glp_init_smcp(&params);
  params.msg_lev = options.verbose ? GLP_MSG_ALL : GLP_MSG_OFF;
  params.presolve = GLP_OFF;
  if (options.time_limit_seconds > 0) params.tm_lim = static_cast<int>(options.time_limit_seconds * 1000);
  int rc = glp_simplex(lp, &params);
  if (rc != 0 && rc != GLP_ETMLIM && rc != GLP_EITLIM) {
    glp_delete_prob(lp);
    return Status::Internal("GLPK simplex failed with code " + std::to_string(rc));
  }
  const bool mip = model.HasIntegers();
  int status = glp_get_status(lp);
  if (mip && status == GLP_OPT) {
    glp_iocp iparams;
    glp_init_iocp(&iparams);
    iparams.msg_lev = options.verbose ? GLP_MSG_ALL : GLP_MSG_OFF;
    rc = glp_intopt(lp, &iparams);
    if (rc != 0 && rc != GLP_ETMLIM) {
      glp_delete_prob(lp);
      return Status::Internal("GLPK intopt failed with code " + std::to_string(rc));
    }
    status = glp_mip_status(lp);
  }
  switch (status) {
    case GLP_OPT: solution.outcome = Outcome::kOptimal; break;
    case GLP_NOFEAS: solution.outcome = Outcome::kInfeasible; break;
    case GLP_UNBND: solution.outcome = Outcome::kUnbounded; break;
    default: solution.outcome = Outcome::kLimitReached; break;
  }
  // GLPK's simplex says "unbounded" or "no feasible" through the dual status too.
  if (!mip && status != GLP_OPT) {
    if (glp_get_prim_stat(lp) == GLP_NOFEAS) solution.outcome = Outcome::kInfeasible;
    else if (glp_get_dual_stat(lp) == GLP_NOFEAS) solution.outcome = Outcome::kUnbounded;
  }
  if (solution.outcome == Outcome::kOptimal) {
    for (int j = 1; j <= n; ++j) {
      solution.values.push_back(mip ? glp_mip_col_val(lp, j) : glp_get_col_prim(lp, j));
      if (!mip) solution.reduced_costs.push_back(glp_get_col_dual(lp, j));
    }
    if (!mip) {
      for (int i = 1; i <= m; ++i) solution.row_duals.push_back(glp_get_row_dual(lp, i));
    }
    solution.objective = model.Objective(solution.values);
  }
  glp_delete_prob(lp);
  return solution;
}

class GlpkSolver final : public Solver {
 public:
  std::string_view name() const override { return "glpk"; }
  bool SupportsIntegers() const override { return true; }
  Result<std::unique_ptr<Session>> Load(const Model& model, const SolveOptions& options) override {
    return std::unique_ptr<Session>(
        std::make_unique<RebuildingSession>(model, options, &SolveWithGlpk));
  }
};

}  // namespace

std::unique_ptr<Solver> MakeGlpkSolver() { return std::make_unique<GlpkSolver>(); }

}  // namespace gavel::lp
