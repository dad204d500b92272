// SolveEcosLp against two independent truths: ECOS itself (the C library inside Debian's
// r-cran-ecosolver, loaded at run time when installed: scripts/install-deps.sh installs it)
// for its exit codes and final points, and Clp for optimal values and feasibility.
#include "gavel/lp/ecos_lp.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "gavel/lp/model.h"
#include "gavel/lp/solver.h"

namespace gavel::lp {
namespace {

// ECOS 2.0's C interface (ecos.h of 2.0.7 to 2.0.14; idxint is SuiteSparse_long). The
// workspace is declared up to its settings pointer, to switch ECOS's printing off; Solve
// checks the layout against the sizes and defaults it must hold before trusting it.
namespace ecos_abi {
using idxint = long;
struct Settings {
  double gamma, delta, eps, feastol, abstol, reltol, feastol_inacc, abstol_inacc, reltol_inacc;
  idxint nitref, maxit, verbose;
};
struct Workspace {
  idxint n, m, p, D;
  double *x, *y, *z, *s, *lambda;
  double kap, tau;
  double *best_x, *best_y, *best_z, *best_s;
  double best_kap, best_tau, best_cx, best_by, best_hz;
  void* best_info;
  double *dsaff, *dzaff, *W_times_dzaff, *dsaff_by_W, *saff, *zaff;
  void* C;
  void *A, *G;
  double *c, *b, *h;
  idxint *AtoK, *GtoK;
  double *xequil, *Aequil, *Gequil;
  double resx0, resy0, resz0;
  double *rx, *ry, *rz;
  double rt, hresx, hresy, hresz, nx, ny, nz, ns, cx, by, hz, sz;
  void* KKT;
  void* info;
  Settings* stgs;
};
using Setup = Workspace* (*)(idxint n, idxint m, idxint p, idxint l, idxint ncones, idxint* q,
                             idxint nex, double* Gpr, idxint* Gjc, idxint* Gir, double* Apr,
                             idxint* Ajc, idxint* Air, double* c, double* h, double* b);
using Solve = idxint (*)(Workspace*);
using Cleanup = void (*)(Workspace*, idxint keepvars);
}  // namespace ecos_abi

class RealEcos {
 public:
  static const RealEcos* Get() {
    static const RealEcos* instance = [] () -> const RealEcos* {
      const char* path = std::getenv("GAVEL_ECOS_LIBRARY");
      void* handle = dlopen(path != nullptr ? path
                                            : "/usr/lib/R/site-library/ECOSolveR/libs/ECOSolveR.so",
                            RTLD_NOW | RTLD_LOCAL);
      if (handle == nullptr) return nullptr;
      auto* ecos = new RealEcos;
      ecos->setup_ = reinterpret_cast<ecos_abi::Setup>(dlsym(handle, "ECOS_setup"));
      ecos->solve_ = reinterpret_cast<ecos_abi::Solve>(dlsym(handle, "ECOS_solve"));
      ecos->cleanup_ = reinterpret_cast<ecos_abi::Cleanup>(dlsym(handle, "ECOS_cleanup"));
      if (!ecos->setup_ || !ecos->solve_ || !ecos->cleanup_) return nullptr;
      return ecos;
    }();
    return instance;
  }

  static constexpr int kLayoutMismatch = -100;
  struct Answer {
    int exit = 0;
    std::vector<double> x;
  };

  Answer Solve(const InequalityLp& lp) const {
    // Column-compressed G, as ECOS takes it.
    const int n = lp.num_columns;
    std::vector<std::vector<std::pair<long, double>>> by_column(static_cast<std::size_t>(n));
    for (int r = 0; r < lp.num_rows(); ++r) {
      for (int k = lp.row_start[r]; k < lp.row_start[r + 1]; ++k) {
        by_column[lp.column[k]].push_back({r, lp.value[k]});
      }
    }
    std::vector<double> pr;
    std::vector<long> jc{0}, ir;
    for (const auto& entries : by_column) {
      for (const auto& [row, value] : entries) {
        ir.push_back(row);
        pr.push_back(value);
      }
      jc.push_back(static_cast<long>(pr.size()));
    }
    std::vector<double> c = lp.c, h = lp.h;
    ecos_abi::Workspace* work =
        setup_(n, lp.num_rows(), 0, lp.num_rows(), 0, nullptr, 0, pr.data(), jc.data(),
               ir.data(), nullptr, nullptr, nullptr, c.data(), h.data(), nullptr);
    Answer answer;
    if (work == nullptr) {
      answer.exit = -7;
      return answer;
    }
    // The layout check: dimensions as given, ECOS's default settings where expected.
    const bool layout_ok = work->n == n && work->m == lp.num_rows() && work->p == 0 &&
                           work->stgs->maxit == 100 && work->stgs->feastol == 1e-8 &&
                           work->stgs->gamma == 0.99;
    if (!layout_ok) {
      cleanup_(work, 0);
      answer.exit = kLayoutMismatch;
      return answer;
    }
    work->stgs->verbose = 0;
    answer.exit = static_cast<int>(solve_(work));
    answer.x.assign(work->x, work->x + n);
    cleanup_(work, 0);
    return answer;
  }

 private:
  ecos_abi::Setup setup_ = nullptr;
  ecos_abi::Solve solve_ = nullptr;
  ecos_abi::Cleanup cleanup_ = nullptr;
};

// The makespan policy's feasibility LP in cvxpy's canonical order (min_total_duration.py):
// X >= 0, per-type capacity, per-job time share, per-job throughput >= R/T; objective 0.
InequalityLp MakespanFeasibility(const std::vector<std::vector<double>>& throughput,
                                 const std::vector<int>& scale_factor,
                                 const std::vector<double>& capacity,
                                 const std::vector<double>& remaining, double makespan) {
  const int m = static_cast<int>(throughput.size());
  const int k = static_cast<int>(capacity.size());
  InequalityLp lp;
  lp.num_columns = m * k;
  lp.c.assign(static_cast<std::size_t>(m * k), 0.0);
  auto var = [&](int i, int j) { return i + j * m; };  // cvxpy flattens column-major
  for (int v = 0; v < m * k; ++v) lp.AddRow({v}, {-1.0}, 0.0);
  for (int j = 0; j < k; ++j) {
    std::vector<int> cols;
    std::vector<double> coefs;
    for (int i = 0; i < m; ++i) {
      cols.push_back(var(i, j));
      coefs.push_back(scale_factor[i]);
    }
    lp.AddRow(cols, coefs, capacity[j]);
  }
  for (int i = 0; i < m; ++i) {
    std::vector<int> cols;
    for (int j = 0; j < k; ++j) cols.push_back(var(i, j));
    lp.AddRow(cols, std::vector<double>(static_cast<std::size_t>(k), 1.0), 1.0);
  }
  for (int i = 0; i < m; ++i) {
    std::vector<int> cols;
    std::vector<double> coefs;
    for (int j = 0; j < k; ++j) {
      cols.push_back(var(i, j));
      coefs.push_back(-throughput[i][j]);
    }
    lp.AddRow(cols, coefs, -remaining[i] / makespan);
  }
  return lp;
}

// A makespan feasibility LP of 1-40 jobs; `lower` bounds the makespan from below (each job
// alone on its fastest type) and the makespan tried is a random multiple of it.
InequalityLp RandomMakespan(std::mt19937& rng) {
  std::uniform_int_distribution<int> jobs(1, 40);
  std::uniform_real_distribution<double> speed(0.2, 30.0);
  std::uniform_real_distribution<double> steps(1e3, 1e6);
  std::uniform_int_distribution<int> sf_pick(0, 3);
  const int m = jobs(rng);
  std::vector<std::vector<double>> throughput(static_cast<std::size_t>(m));
  std::vector<int> sf(static_cast<std::size_t>(m));
  std::vector<double> remaining(static_cast<std::size_t>(m));
  double lower = 0.0;
  for (int i = 0; i < m; ++i) {
    throughput[i] = {speed(rng), speed(rng), speed(rng)};
    const int pick = sf_pick(rng);
    sf[i] = pick == 3 ? 4 : (pick == 2 ? 2 : 1);
    remaining[i] = steps(rng);
    lower = std::max(lower, remaining[i] / *std::max_element(throughput[i].begin(),
                                                             throughput[i].end()));
  }
  std::uniform_real_distribution<double> count(2.0, 12.0);
  const std::vector<double> capacity = {std::floor(count(rng)), std::floor(count(rng)),
                                        std::floor(count(rng))};
  // Makespans from well below to well above the optimum, as the original's bisection tries.
  std::uniform_real_distribution<double> factor(0.1, 1.5);
  const double makespan = lower * factor(rng) * std::max(1.0, m / 8.0);
  return MakespanFeasibility(throughput, sf, capacity, remaining, makespan);
}

// A max-min fairness LP of 1-80 jobs as cvxpy 1.1 hands the original's to ECOS
// (policy/max_min_fairness.cc, SolveAsTheOriginal): minimise t over [t, X column-major] with
// −Σ_j C[i][j] X[i][j] − t <= 0 per job, −X <= 0, capacity per type, time per job. From 17
// jobs on, t is in more rows than the normal equations' dense threshold: the Schur
// complement path.
InequalityLp RandomMaxMin(std::mt19937& rng) {
  std::uniform_int_distribution<int> jobs(1, 80);
  std::uniform_real_distribution<double> gain(0.05, 3.0);
  std::uniform_int_distribution<int> sf_pick(0, 3);
  std::uniform_real_distribution<double> count(1.0, 12.0);
  const int m = jobs(rng);
  const int k = 3;
  auto var = [&](int i, int j) { return 1 + i + j * m; };
  InequalityLp lp;
  lp.num_columns = 1 + m * k;
  lp.c = {1.0};  // minimise t
  lp.c.resize(static_cast<std::size_t>(lp.num_columns), 0.0);
  std::vector<int> sf(static_cast<std::size_t>(m));
  for (int i = 0; i < m; ++i) {
    const int pick = sf_pick(rng);
    sf[i] = pick == 3 ? 4 : (pick == 2 ? 2 : 1);
    std::vector<int> cols = {0};
    std::vector<double> coefs = {-1.0};
    for (int j = 0; j < k; ++j) {
      cols.push_back(var(i, j));
      coefs.push_back(-gain(rng) * sf[i]);
    }
    lp.AddRow(cols, coefs, 0.0);
  }
  for (int v = 1; v < lp.num_columns; ++v) lp.AddRow({v}, {-1.0}, 0.0);
  for (int j = 0; j < k; ++j) {
    std::vector<int> cols;
    std::vector<double> coefs;
    for (int i = 0; i < m; ++i) {
      cols.push_back(var(i, j));
      coefs.push_back(sf[i]);
    }
    lp.AddRow(cols, coefs, std::floor(count(rng)));
  }
  for (int i = 0; i < m; ++i) {
    std::vector<int> cols;
    for (int j = 0; j < k; ++j) cols.push_back(var(i, j));
    lp.AddRow(cols, std::vector<double>(static_cast<std::size_t>(k), 1.0), 1.0);
  }
  return lp;
}

// A bounded random LP with an objective: box rows 0 <= x <= u plus random dense rows.
InequalityLp RandomBoundedLp(std::mt19937& rng, bool make_infeasible) {
  std::uniform_int_distribution<int> size(1, 12);
  std::uniform_real_distribution<double> coef(-5.0, 5.0);
  std::uniform_real_distribution<double> positive(0.5, 10.0);
  const int n = size(rng);
  const int extra = size(rng);
  InequalityLp lp;
  lp.num_columns = n;
  for (int j = 0; j < n; ++j) {
    lp.AddRow({j}, {-1.0}, 0.0);
    lp.AddRow({j}, {1.0}, positive(rng));
    lp.c.push_back(coef(rng));
  }
  std::vector<double> point(static_cast<std::size_t>(n));
  for (int j = 0; j < n; ++j) point[j] = 0.1 * positive(rng) / 10.0;  // inside every box
  for (int r = 0; r < extra; ++r) {
    std::vector<int> cols;
    std::vector<double> coefs;
    double at_point = 0.0;
    for (int j = 0; j < n; ++j) {
      cols.push_back(j);
      coefs.push_back(coef(rng));
      at_point += coefs.back() * point[j];
    }
    lp.AddRow(cols, coefs, at_point + positive(rng) / 10.0);  // `point` satisfies it
  }
  if (make_infeasible) {
    // x_0 >= 20 contradicts the box x_0 <= u_0 <= 10.
    lp.AddRow({0}, {-1.0}, -20.0);
  }
  return lp;
}

Model ToModel(const InequalityLp& lp) {
  Model model(Sense::kMinimize);
  for (int j = 0; j < lp.num_columns; ++j) model.AddColumn(-kInfinity, kInfinity, lp.c[j]);
  for (int r = 0; r < lp.num_rows(); ++r) {
    std::vector<int> cols(lp.column.begin() + lp.row_start[r],
                          lp.column.begin() + lp.row_start[r + 1]);
    std::vector<double> coefs(lp.value.begin() + lp.row_start[r],
                              lp.value.begin() + lp.row_start[r + 1]);
    model.AddRow(-kInfinity, lp.h[r], cols, coefs);
  }
  return model;
}

double MaxRowViolation(const InequalityLp& lp, const std::vector<double>& x) {
  double worst = 0.0;
  for (int r = 0; r < lp.num_rows(); ++r) {
    double sum = 0.0;
    for (int k = lp.row_start[r]; k < lp.row_start[r + 1]; ++k) {
      sum += lp.value[k] * x[lp.column[k]];
    }
    worst = std::max(worst, (sum - lp.h[r]) / std::max(1.0, std::fabs(lp.h[r])));
  }
  return worst;
}

// How closely two runs of ECOS's algorithm can agree: ECOS solves its regularised KKT
// systems by a sparse LDL' whose rounding (its AMD ordering, δ = 7e-8 on the diagonal)
// leaves errors near 1e-8 that iterative refinement does not always remove; they grow over
// the iterations, so the final points agree to about 1e-4 relative, and an answer right at
// a tolerance can come out "optimal" in one and "inaccurate" in the other.
struct Agreement {
  int trials = 0;
  int same_exit = 0;
  int optimal_both = 0;
  int infeasible_both = 0;
  double worst_relative_difference = 0.0;  // over variables, where both are optimal

  std::string Summary() const {
    return std::to_string(same_exit) + "/" + std::to_string(trials) + " same exit, " +
           std::to_string(optimal_both) + " optimal, " + std::to_string(infeasible_both) +
           " infeasible, worst difference " + std::to_string(worst_relative_difference);
  }

  void Add(const EcosResult& ours, const RealEcos::Answer& theirs) {
    ++trials;
    if (static_cast<int>(ours.exit) != theirs.exit) return;
    ++same_exit;
    if (ours.exit == EcosExit::kPrimalInfeasible) ++infeasible_both;
    if (ours.exit != EcosExit::kOptimal) return;
    ++optimal_both;
    for (std::size_t v = 0; v < ours.x.size(); ++v) {
      worst_relative_difference =
          std::max(worst_relative_difference,
                   std::fabs(ours.x[v] - theirs.x[v]) / std::max(1e-2, std::fabs(theirs.x[v])));
    }
  }
};

// Solves `trials` LPs from `next_lp(trial)` with both solvers, into `agreement`.
template <class NextLp>
void CompareWithEcos(const RealEcos& ecos, int trials, const NextLp& next_lp,
                     Agreement& agreement) {
  for (int trial = 0; trial < trials; ++trial) {
    const InequalityLp lp = next_lp(trial);
    const RealEcos::Answer theirs = ecos.Solve(lp);
    ASSERT_NE(theirs.exit, RealEcos::kLayoutMismatch) << "unexpected ECOS workspace layout";
    agreement.Add(SolveEcosLp(lp), theirs);
  }
}

TEST(EcosLpTest, TakesEcossStepsOnMakespanFeasibilityProblems) {
  const RealEcos* ecos = RealEcos::Get();
  if (ecos == nullptr) GTEST_SKIP() << "ECOS (r-cran-ecosolver) is not installed";
  std::mt19937 rng(7);
  Agreement agreement;
  ASSERT_NO_FATAL_FAILURE(CompareWithEcos(
      *ecos, 400, [&](int) { return RandomMakespan(rng); }, agreement));
  SCOPED_TRACE(agreement.Summary());
  EXPECT_GE(agreement.same_exit, 396);  // 99%
  EXPECT_GT(agreement.optimal_both, 100);
  EXPECT_GT(agreement.infeasible_both, 100);
  EXPECT_LT(agreement.worst_relative_difference, 1e-3);
}

TEST(EcosLpTest, TakesEcossStepsOnLpsWithObjectives) {
  const RealEcos* ecos = RealEcos::Get();
  if (ecos == nullptr) GTEST_SKIP() << "ECOS (r-cran-ecosolver) is not installed";
  std::mt19937 rng(11);
  Agreement agreement;
  ASSERT_NO_FATAL_FAILURE(CompareWithEcos(
      *ecos, 400,
      [&](int trial) { return RandomBoundedLp(rng, /*make_infeasible=*/trial % 5 == 0); },
      agreement));
  SCOPED_TRACE(agreement.Summary());
  EXPECT_GE(agreement.same_exit, 396);
  EXPECT_GT(agreement.optimal_both, 250);
  EXPECT_GT(agreement.infeasible_both, 60);
  EXPECT_LT(agreement.worst_relative_difference, 1e-3);
}

// The max-min LPs' optimal faces are wide (every job above the minimum has room), and ECOS's
// LDL' rounding moves its stopping point along them a little more than on the makespan LPs:
// most points agree to 1e-3, all to 0.1 (relative to max(|x|, 0.01)).
TEST(EcosLpTest, TakesEcossStepsOnMaxMinFairnessProblems) {
  const RealEcos* ecos = RealEcos::Get();
  if (ecos == nullptr) GTEST_SKIP() << "ECOS (r-cran-ecosolver) is not installed";
  std::mt19937 rng(13);
  Agreement agreement;
  int close = 0;
  for (int trial = 0; trial < 150; ++trial) {
    const InequalityLp lp = RandomMaxMin(rng);
    const RealEcos::Answer theirs = ecos->Solve(lp);
    ASSERT_NE(theirs.exit, RealEcos::kLayoutMismatch) << "unexpected ECOS workspace layout";
    Agreement one;
    const EcosResult ours = SolveEcosLp(lp);
    one.Add(ours, theirs);
    agreement.Add(ours, theirs);
    if (one.optimal_both == 1 && one.worst_relative_difference < 1e-3) ++close;
  }
  SCOPED_TRACE(agreement.Summary() + ", " + std::to_string(close) + " within 1e-3");
  EXPECT_GE(agreement.same_exit, 147);
  EXPECT_GE(agreement.optimal_both, 140);
  EXPECT_GE(close, 135);
  EXPECT_LT(agreement.worst_relative_difference, 0.1);
}

// Every max-min LP is feasible and bounded: ECOS's optimum is Clp's, on both sides of the
// dense-column threshold.
TEST(EcosLpTest, MaxMinFairnessOptimaMatchClp) {
  std::unique_ptr<Solver> clp = MakeClpSolver();
  std::mt19937 rng(17);
  int dense_column_cases = 0;
  for (int trial = 0; trial < 120; ++trial) {
    const InequalityLp lp = RandomMaxMin(rng);
    const EcosResult ours = SolveEcosLp(lp);
    const auto reference = clp->Solve(ToModel(lp));
    ASSERT_TRUE(reference.ok());
    ASSERT_EQ(reference->outcome, Outcome::kOptimal);
    ASSERT_EQ(ours.exit, EcosExit::kOptimal) << "trial " << trial;
    EXPECT_NEAR(ours.x[0], reference->objective, 1e-6 * std::max(1.0, std::fabs(ours.x[0])))
        << "trial " << trial;
    EXPECT_LT(MaxRowViolation(lp, ours.x), 1e-7) << "trial " << trial;
    if ((lp.num_columns - 1) / 3 > 16) ++dense_column_cases;
  }
  EXPECT_GT(dense_column_cases, 60);
}

TEST(EcosLpTest, AgreesWithClpOnOptimaAndInfeasibility) {
  std::unique_ptr<Solver> clp = MakeClpSolver();
  std::mt19937 rng(3);
  int optimal = 0, infeasible = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const InequalityLp lp = RandomBoundedLp(rng, /*make_infeasible=*/trial % 4 == 0);
    const EcosResult ours = SolveEcosLp(lp);
    const auto reference = clp->Solve(ToModel(lp));
    ASSERT_TRUE(reference.ok()) << reference.status().ToString();
    if (reference->outcome == Outcome::kInfeasible) {
      EXPECT_EQ(ours.exit, EcosExit::kPrimalInfeasible) << "trial " << trial;
      ++infeasible;
      continue;
    }
    ASSERT_EQ(reference->outcome, Outcome::kOptimal);
    ASSERT_EQ(ours.exit, EcosExit::kOptimal) << "trial " << trial;
    ++optimal;
    double objective = 0.0;
    for (int j = 0; j < lp.num_columns; ++j) objective += lp.c[j] * ours.x[j];
    EXPECT_NEAR(objective, reference->objective,
                1e-6 * std::max(1.0, std::fabs(reference->objective)))
        << "trial " << trial;
    EXPECT_LT(MaxRowViolation(lp, ours.x), 1e-7) << "trial " << trial;
  }
  EXPECT_GT(optimal, 150);
  EXPECT_GT(infeasible, 50);
}

TEST(EcosLpTest, FeasibilityAnswersMatchClpOnMakespanProblems) {
  std::unique_ptr<Solver> clp = MakeClpSolver();
  std::mt19937 rng(5);
  int checked = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const InequalityLp lp = RandomMakespan(rng);
    const EcosResult ours = SolveEcosLp(lp);
    const auto reference = clp->Solve(ToModel(lp));
    ASSERT_TRUE(reference.ok());
    // Near the boundary ECOS may stop inaccurate; away from it the answers must agree.
    if (ours.exit != EcosExit::kOptimal && ours.exit != EcosExit::kPrimalInfeasible) continue;
    ++checked;
    EXPECT_EQ(ours.exit == EcosExit::kOptimal, reference->outcome == Outcome::kOptimal)
        << "trial " << trial << ": ecos " << EcosExitName(ours.exit);
    if (ours.exit == EcosExit::kOptimal) {
      EXPECT_LT(MaxRowViolation(lp, ours.x), 1e-6);
    }
  }
  EXPECT_GT(checked, 180);
}

TEST(EcosLpTest, ReportsAnUnboundedProblemAsDualInfeasible) {
  InequalityLp lp;  // minimise −x subject to −x <= 0: x can grow without bound
  lp.num_columns = 1;
  lp.c = {-1.0};
  lp.AddRow({0}, {-1.0}, 0.0);
  EXPECT_EQ(SolveEcosLp(lp).exit, EcosExit::kDualInfeasible);
}

TEST(EcosLpTest, SolvesAOneVariableProblemExactly) {
  InequalityLp lp;  // minimise −x subject to 0 <= x <= 2
  lp.num_columns = 1;
  lp.c = {-1.0};
  lp.AddRow({0}, {-1.0}, 0.0);
  lp.AddRow({0}, {1.0}, 2.0);
  const EcosResult result = SolveEcosLp(lp);
  ASSERT_EQ(result.exit, EcosExit::kOptimal);
  EXPECT_NEAR(result.x[0], 2.0, 1e-7);
}

}  // namespace
}  // namespace gavel::lp
