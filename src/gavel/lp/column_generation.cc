#include "gavel/lp/column_generation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gavel/core/check.h"

namespace gavel::lp {
namespace {

constexpr int kLeftOut = -1;
// Phase 1 calls the whole LP infeasible when its least total elastic slack exceeds this per
// row: the primal feasibility tolerance of Clp and GLPK.
constexpr double kInfeasibilityTolerance = 1e-7;
// Pricing (column_generation.h): the relative tolerance for an improving column, how many
// columns of one row enter per round, and partial pricing's least share of the columns
// looked at and its number of batches' worth of candidates that ends a round early.
constexpr double kPricingTolerance = 1e-9;
constexpr int kMaxPerRow = 2;
constexpr double kPartialPricingShare = 0.1;
constexpr int kCandidatesPerBatch = 2;

// A column of the whole model as the session currently knows it.
struct FullColumn {
  double lower = 0.0;
  double upper = kInfinity;
  double objective = 0.0;
  int inner = kLeftOut;  // its index in the inner session, or kLeftOut
};

// A column of the inner session that belongs to no column of the whole model: an elastic
// slack of one row, used only in phase 1 (fixed at 0 otherwise).
struct ElasticColumn {
  int inner = 0;
  int row = 0;
  double coefficient = 1.0;  // +1 lifts the row's activity towards its lower bound, -1 lowers it
};

bool ContainsZero(double lower, double upper) { return lower <= 0.0 && upper >= 0.0; }

class ColumnGenerationSession final : public Session {
 public:
  ColumnGenerationSession(const Model& model, const SolveOptions& options,
                          const ColumnGenerationOptions& cg, ColumnOracle* oracle = nullptr)
      : sense_(model.sense()), options_(options), cg_(cg), oracle_(oracle) {
    CopyColumnMajor(model);
  }

  // Loads the restricted model into `inner`: every non-lazy column, every lazy one whose
  // bounds exclude 0, and one elastic column per bounded side of every row, fixed at 0.
  Status LoadInner(Solver& inner, const Model& model) {
    row_lower_ = model.row_lower();
    row_upper_ = model.row_upper();
    Model restricted(sense_);
    const std::size_t n = columns_.size();
    for (std::size_t j = 0; j < n; ++j) {
      const Column& c = model.columns()[j];
      if (c.lazy && ContainsZero(c.lower, c.upper)) continue;
      columns_[j].inner = restricted.AddColumn(c.lower, c.upper, c.objective);
      inner_to_full_.push_back(static_cast<int>(j));
    }
    // Elastic columns go in now, fixed at 0, so that phase 1 only changes bounds and
    // objective coefficients (cheap in every backend) instead of adding columns.
    std::vector<std::vector<std::pair<int, double>>> elastic_of_row(
        static_cast<std::size_t>(model.num_rows()));
    for (int i = 0; i < model.num_rows(); ++i) {
      for (const double sign : {1.0, -1.0}) {
        if (!ElasticNeeded(i, sign)) continue;
        const int column = restricted.AddColumn(0.0, 0.0);
        inner_to_full_.push_back(kLeftOut);
        RecordElastic(column, i, sign);
        elastic_of_row[static_cast<std::size_t>(i)].emplace_back(column, sign);
      }
    }
    std::vector<int> cols;
    std::vector<double> coefs;
    for (int i = 0; i < model.num_rows(); ++i) {
      cols.clear();
      coefs.clear();
      for (int k = model.row_start()[static_cast<std::size_t>(i)];
           k < model.row_start()[static_cast<std::size_t>(i) + 1]; ++k) {
        const auto full = static_cast<std::size_t>(model.entry_column()[static_cast<std::size_t>(k)]);
        if (columns_[full].inner == kLeftOut) continue;
        cols.push_back(columns_[full].inner);
        coefs.push_back(model.entry_value()[static_cast<std::size_t>(k)]);
      }
      for (const auto& [column, sign] : elastic_of_row[static_cast<std::size_t>(i)]) {
        cols.push_back(column);
        coefs.push_back(sign);
      }
      restricted.AddRow(row_lower_[static_cast<std::size_t>(i)],
                        row_upper_[static_cast<std::size_t>(i)], cols, coefs);
    }
    GAVEL_ASSIGN_OR_RETURN(inner_, inner.Load(restricted, options_));
    // The oracle's seed goes in now rather than at the first solve, so that a start point
    // (SetStartPoint) can give the seeded columns their values.
    SeedOracle();
    return Status::Ok();
  }

  Result<Solution> Solve() override;

  void SetObjective(int column, double coefficient) override {
    FullColumn& c = Full(column);
    c.objective = coefficient;
    if (c.inner != kLeftOut) inner_->SetObjective(c.inner, coefficient);
  }

  void SetColumnBounds(int column, double lower, double upper) override {
    FullColumn& c = Full(column);
    c.lower = lower;
    c.upper = upper;
    if (c.inner != kLeftOut) {
      inner_->SetColumnBounds(c.inner, lower, upper);
    } else if (!ContainsZero(lower, upper)) {
      // 0 is no longer a value it may take: it cannot stay out.
      const int load[] = {column};
      LoadColumns(load);
    }
  }

  void SetRowBounds(int row, double lower, double upper) override {
    GAVEL_CHECK(row >= 0 && row < num_rows());
    row_lower_[static_cast<std::size_t>(row)] = lower;
    row_upper_[static_cast<std::size_t>(row)] = upper;
    inner_->SetRowBounds(row, lower, upper);
  }

  int AddColumn(double lower, double upper, double objective, std::span<const int> rows,
                std::span<const double> coefficients) override {
    GAVEL_CHECK(rows.size() == coefficients.size());
    // The interface has no lazy flag: a column added here is always loaded.
    const int full = static_cast<int>(columns_.size());
    columns_.push_back(FullColumn{lower, upper, objective, kLeftOut});
    column_start_.push_back(column_start_.back());
    columns_.back().inner = inner_->AddColumn(lower, upper, objective, rows, coefficients);
    MapInner(columns_.back().inner, full);
    return full;
  }

  // Hands the point to the inner session over the loaded columns: left-out columns stay out
  // (at 0, whatever the point says), elastic columns are 0. The oracle's seed columns are
  // loaded with the model, after its columns (full indices num_columns(), ... in seed order),
  // so the point may give them values; those past its end start at 0.
  void SetStartPoint(std::span<const double> values) override {
    std::vector<double> inner_values(inner_to_full_.size(), 0.0);
    for (std::size_t k = 0; k < inner_values.size(); ++k) {
      const int full = inner_to_full_[k];
      if (full != kLeftOut && static_cast<std::size_t>(full) < values.size()) {
        inner_values[k] = values[static_cast<std::size_t>(full)];
      }
    }
    inner_->SetStartPoint(inner_values);
  }

  int AddRow(double lower, double upper, std::span<const int> columns,
             std::span<const double> coefficients) override {
    GAVEL_CHECK(columns.size() == coefficients.size());
    std::vector<int> inner_columns;
    std::vector<double> inner_coefficients;
    for (std::size_t k = 0; k < columns.size(); ++k) {
      const FullColumn& c = Full(columns[k]);
      if (c.inner != kLeftOut) {
        inner_columns.push_back(c.inner);
        inner_coefficients.push_back(coefficients[k]);
      } else {
        // Left-out columns' entries are kept row-wise: pricing scatters them, loading a
        // column gathers them.
        added_entry_column_.push_back(columns[k]);
        added_entry_value_.push_back(coefficients[k]);
      }
    }
    const int row = inner_->AddRow(lower, upper, inner_columns, inner_coefficients);
    GAVEL_CHECK(row == num_rows());
    added_row_.push_back(row);
    added_row_start_.push_back(static_cast<std::int64_t>(added_entry_column_.size()));
    row_lower_.push_back(lower);
    row_upper_.push_back(upper);
    AddMissingElastics(row);
    return row;
  }

 private:
  int num_rows() const { return static_cast<int>(row_lower_.size()); }

  FullColumn& Full(int column) {
    GAVEL_CHECK(column >= 0 && column < static_cast<int>(columns_.size()));
    return columns_[static_cast<std::size_t>(column)];
  }

  void MapInner(int inner, int full) {
    GAVEL_CHECK(inner == static_cast<int>(inner_to_full_.size()));
    inner_to_full_.push_back(full);
  }

  // Whether `row` needs an elastic column of this sign (+1: the row has a lower bound to
  // reach; -1: an upper bound to stay under) that it does not have yet.
  bool ElasticNeeded(int row, double sign) const {
    const auto i = static_cast<std::size_t>(row);
    const bool bounded = sign > 0.0 ? row_lower_[i] > -kInfinity : row_upper_[i] < kInfinity;
    return bounded && (i >= elastic_sides_.size() || (elastic_sides_[i] & SideBit(sign)) == 0);
  }
  static unsigned char SideBit(double sign) { return sign > 0.0 ? 1 : 2; }

  void RecordElastic(int inner, int row, double sign) {
    elastic_.push_back(ElasticColumn{inner, row, sign});
    const auto i = static_cast<std::size_t>(row);
    if (elastic_sides_.size() <= i) elastic_sides_.resize(i + 1, 0);
    elastic_sides_[i] = static_cast<unsigned char>(elastic_sides_[i] | SideBit(sign));
  }

  // Adds (fixed at 0, or open when in phase 1) the elastic columns `row` lacks: a new row, or
  // a bound that was infinite and no longer is.
  void AddMissingElastics(int row) {
    for (const double sign : {1.0, -1.0}) {
      if (!ElasticNeeded(row, sign)) continue;
      const int rows[] = {row};
      const double coefficients[] = {sign};
      const int column = inner_->AddColumn(0.0, in_phase1_ ? kInfinity : 0.0,
                                           in_phase1_ ? Phase1Cost() : 0.0, rows, coefficients);
      MapInner(column, kLeftOut);
      RecordElastic(column, row, sign);
    }
  }

  // Phase 1 minimises the total elastic slack, written in the model's own sense.
  double Phase1Cost() const { return sense_ == Sense::kMaximize ? -1.0 : 1.0; }

  void EnterPhase1() {
    for (int i = 0; i < num_rows(); ++i) AddMissingElastics(i);
    for (const ElasticColumn& e : elastic_) {
      inner_->SetColumnBounds(e.inner, 0.0, kInfinity);
      inner_->SetObjective(e.inner, Phase1Cost());
    }
    for (const FullColumn& c : columns_) {
      if (c.inner != kLeftOut && c.objective != 0.0) inner_->SetObjective(c.inner, 0.0);
    }
    in_phase1_ = true;
  }

  void LeavePhase1() {
    for (const ElasticColumn& e : elastic_) {
      inner_->SetColumnBounds(e.inner, 0.0, 0.0);
      inner_->SetObjective(e.inner, 0.0);
    }
    for (const FullColumn& c : columns_) {
      if (c.inner != kLeftOut && c.objective != 0.0) inner_->SetObjective(c.inner, c.objective);
    }
    in_phase1_ = false;
  }

  double ElasticTotal(const Solution& solution) const {
    double total = 0.0;
    for (const ElasticColumn& e : elastic_) {
      total += std::max(0.0, solution.values[static_cast<std::size_t>(e.inner)]);
    }
    return total;
  }

  // Loads the given left-out columns into the inner session, with their entries in every
  // row (those of rows added later included).
  void LoadColumns(std::span<const int> full_columns) {
    if (full_columns.empty()) return;  // (an empty batch has no first index)
    std::vector<std::vector<std::pair<int, double>>> late(full_columns.size());
    if (!added_entry_column_.empty()) {
      std::vector<std::pair<int, std::size_t>> slot_of;  // (column, slot), sorted by column
      for (std::size_t s = 0; s < full_columns.size(); ++s) slot_of.emplace_back(full_columns[s], s);
      std::sort(slot_of.begin(), slot_of.end());
      for (std::size_t r = 0; r < added_row_.size(); ++r) {
        for (auto k = static_cast<std::size_t>(added_row_start_[r]);
             k < static_cast<std::size_t>(added_row_start_[r + 1]); ++k) {
          const int column = added_entry_column_[k];
          const auto it = std::lower_bound(slot_of.begin(), slot_of.end(),
                                           std::make_pair(column, std::size_t{0}));
          if (it == slot_of.end() || it->first != column) continue;
          late[it->second].emplace_back(added_row_[r], added_entry_value_[k]);
        }
      }
    }
    // One batch: adding columns one at a time copies the inner solver's arrays each time
    // (in Clp), which made loading a third of the solve at 2,048 jobs.
    ColumnBatch batch;
    for (std::size_t s = 0; s < full_columns.size(); ++s) {
      const auto j = static_cast<std::size_t>(full_columns[s]);
      const FullColumn& c = columns_[j];
      GAVEL_CHECK(c.inner == kLeftOut);
      const auto begin = static_cast<std::size_t>(column_start_[j]);
      const auto count = static_cast<std::size_t>(column_start_[j + 1]) - begin;
      batch.Add(c.lower, c.upper, in_phase1_ ? 0.0 : c.objective,
                std::span<const int>(entry_row_).subspan(begin, count),
                std::span<const double>(entry_value_).subspan(begin, count));
      for (const auto& [row, value] : late[s]) batch.AddEntry(row, value);
    }
    const int first = inner_->AddColumns(batch);
    for (std::size_t s = 0; s < full_columns.size(); ++s) {
      const auto j = static_cast<std::size_t>(full_columns[s]);
      columns_[j].inner = first + static_cast<int>(s);
      MapInner(columns_[j].inner, static_cast<int>(j));
    }
  }

  std::vector<int> LeftOutColumns() const {
    std::vector<int> left_out;
    for (std::size_t j = 0; j < columns_.size(); ++j) {
      if (columns_[j].inner == kLeftOut) left_out.push_back(static_cast<int>(j));
    }
    return left_out;
  }

  // Prices every left-out column with the row duals `y` and loads the most improving ones.
  // Writes every left-out column's reduced cost into `reduced_costs` (one per full column).
  // Returns how many columns were loaded.
  int PriceAndLoad(std::span<const double> y, std::vector<double>& reduced_costs) {
    const std::size_t n = columns_.size();
    reduced_costs.assign(n, 0.0);
    // Rows added after the load: scatter their duals onto the left-out columns they touch.
    std::vector<double> added_dot;
    std::vector<double> added_magnitude;
    if (!added_entry_column_.empty()) {
      added_dot.assign(n, 0.0);
      added_magnitude.assign(n, 0.0);
      for (std::size_t r = 0; r < added_row_.size(); ++r) {
        const double dual = y[static_cast<std::size_t>(added_row_[r])];
        if (dual == 0.0) continue;
        for (auto k = static_cast<std::size_t>(added_row_start_[r]);
             k < static_cast<std::size_t>(added_row_start_[r + 1]); ++k) {
          const auto column = static_cast<std::size_t>(added_entry_column_[k]);
          added_dot[column] += dual * added_entry_value_[k];
          added_magnitude[column] += std::abs(dual * added_entry_value_[k]);
        }
      }
    }
    const std::size_t batch = BatchSize();
    // Partial pricing: a round may stop early, once it has looked at a good share of the
    // columns and found plenty of candidates; the next round goes on from there. Only a
    // round that has looked at every column can end the solve.
    const auto min_scan = static_cast<std::size_t>(kPartialPricingShare * static_cast<double>(n));
    const std::size_t enough = static_cast<std::size_t>(kCandidatesPerBatch) * batch;
    const double direction = sense_ == Sense::kMaximize ? 1.0 : -1.0;
    // (how much one unit of movement improves the objective, column), for improving columns.
    std::vector<std::pair<double, int>> improving;
    std::size_t j = pricing_cursor_ < n ? pricing_cursor_ : 0;
    for (std::size_t scanned = 0; scanned < n; ++scanned, j = j + 1 == n ? 0 : j + 1) {
      if (scanned >= min_scan && improving.size() >= enough) break;
      const FullColumn& c = columns_[j];
      if (c.inner != kLeftOut) continue;
      double dot = 0.0;
      double magnitude = 0.0;
      for (auto k = static_cast<std::size_t>(column_start_[j]);
           k < static_cast<std::size_t>(column_start_[j + 1]); ++k) {
        const double term = y[static_cast<std::size_t>(entry_row_[k])] * entry_value_[k];
        dot += term;
        magnitude += std::abs(term);
      }
      if (!added_dot.empty()) {
        dot += added_dot[j];
        magnitude += added_magnitude[j];
      }
      const double cost = in_phase1_ ? 0.0 : c.objective;
      const double reduced = cost - dot;
      reduced_costs[j] = reduced;
      // Raising x_j from 0 changes the objective (in its sense) by `gain` per unit.
      const double gain = direction * reduced;
      const double tolerance = kPricingTolerance * (1.0 + std::abs(cost) + magnitude);
      if ((gain > tolerance && c.upper > 0.0) || (gain < -tolerance && c.lower < 0.0)) {
        improving.emplace_back(std::abs(gain), static_cast<int>(j));
      }
    }
    pricing_cursor_ = j;
    if (improving.empty()) return 0;
    // The most improving first, but spread over the rows: a column is taken only while one
    // of its rows has had fewer than max_per_row columns this round. Columns that improve
    // by the same rows mostly stand in for one another (all pairs of one job, say), and
    // loading all of them would grow the restricted LP without need.
    const std::size_t shortlist = std::min(improving.size(), enough);
    std::partial_sort(improving.begin(), improving.begin() + static_cast<std::ptrdiff_t>(shortlist),
                      improving.end(), std::greater<>());
    std::vector<int> taken_in_row(static_cast<std::size_t>(num_rows()), 0);
    std::vector<int> load;
    for (std::size_t s = 0; s < shortlist && load.size() < batch; ++s) {
      const auto column = static_cast<std::size_t>(improving[s].second);
      const auto first = static_cast<std::size_t>(column_start_[column]);
      const auto last = static_cast<std::size_t>(column_start_[column + 1]);
      bool room = first == last;
      for (std::size_t k = first; k < last && !room; ++k) {
        room = taken_in_row[static_cast<std::size_t>(entry_row_[k])] < kMaxPerRow;
      }
      if (!room) continue;
      for (std::size_t k = first; k < last; ++k) ++taken_in_row[static_cast<std::size_t>(entry_row_[k])];
      load.push_back(static_cast<int>(column));
    }
    // Column order, so that the inner session sees the same problem whatever the ranking.
    std::sort(load.begin(), load.end());
    LoadColumns(load);
    return static_cast<int>(load.size());
  }

  std::size_t BatchSize() const {
    return static_cast<std::size_t>(std::max<double>(cg_.min_batch, cg_.batch_per_row * num_rows()));
  }

  // Asks the oracle for improving columns and loads them (with a zero objective in phase 1).
  // Returns how many.
  int PriceOracle(std::span<const double> y) {
    if (oracle_ == nullptr) return 0;
    ColumnBatch batch;
    oracle_->Price(y, in_phase1_, BatchSize(), batch);
    return LoadOracleColumns(std::move(batch));
  }

  // Loads the oracle's seed columns; LoadInner calls it once, when the session is loaded.
  void SeedOracle() {
    if (oracle_ == nullptr) return;
    ColumnBatch batch;
    oracle_->Seed(batch);
    LoadOracleColumns(std::move(batch));
  }

  int LoadOracleColumns(ColumnBatch batch) {
    if (batch.size() == 0) return 0;
    const std::vector<double> objective = batch.objective;
    if (in_phase1_) std::fill(batch.objective.begin(), batch.objective.end(), 0.0);
    const int first = inner_->AddColumns(batch);
    const int first_full = static_cast<int>(columns_.size());
    for (std::size_t s = 0; s < batch.size(); ++s) {
      columns_.push_back(FullColumn{batch.lower[s], batch.upper[s], objective[s], kLeftOut});
      column_start_.push_back(column_start_.back());
      columns_.back().inner = first + static_cast<int>(s);
      MapInner(columns_.back().inner, first_full + static_cast<int>(s));
    }
    oracle_->Added(first_full);
    return static_cast<int>(batch.size());
  }

  // The inner solution as a solution over the whole model.
  Solution Expand(const Solution& inner, std::vector<double> reduced_costs, long iterations) const {
    Solution full;
    full.outcome = inner.outcome;
    full.objective = inner.objective;
    full.iterations = iterations;
    if (!inner.values.empty()) {
      full.values.assign(columns_.size(), 0.0);
      for (std::size_t k = 0; k < inner.values.size(); ++k) {
        if (inner_to_full_[k] != kLeftOut) {
          full.values[static_cast<std::size_t>(inner_to_full_[k])] = inner.values[k];
        }
      }
    }
    full.row_duals = inner.row_duals;
    if (!inner.reduced_costs.empty()) {
      reduced_costs.resize(columns_.size(), 0.0);
      for (std::size_t k = 0; k < inner.reduced_costs.size(); ++k) {
        if (inner_to_full_[k] != kLeftOut) {
          reduced_costs[static_cast<std::size_t>(inner_to_full_[k])] = inner.reduced_costs[k];
        }
      }
      full.reduced_costs = std::move(reduced_costs);
    }
    return full;
  }

  // The lazy columns' entries, column by column (other columns are always loaded and never
  // priced, so their ranges are empty).
  void CopyColumnMajor(const Model& model) {
    const std::size_t n = static_cast<std::size_t>(model.num_columns());
    columns_.resize(n);
    std::vector<std::int64_t> count(n + 1, 0);
    for (std::size_t j = 0; j < n; ++j) {
      const Column& c = model.columns()[j];
      columns_[j] = FullColumn{c.lower, c.upper, c.objective, kLeftOut};
    }
    // The lazy flags, compact: both passes below look one up per entry.
    std::vector<bool> lazy(n);
    for (std::size_t j = 0; j < n; ++j) lazy[j] = model.columns()[j].lazy;
    for (const int column : model.entry_column()) {
      if (lazy[static_cast<std::size_t>(column)]) ++count[static_cast<std::size_t>(column) + 1];
    }
    for (std::size_t j = 0; j < n; ++j) count[j + 1] += count[j];
    column_start_ = count;
    entry_row_.resize(static_cast<std::size_t>(column_start_.back()));
    entry_value_.resize(entry_row_.size());
    for (int i = 0; i < model.num_rows(); ++i) {
      for (int k = model.row_start()[static_cast<std::size_t>(i)];
           k < model.row_start()[static_cast<std::size_t>(i) + 1]; ++k) {
        const auto column = static_cast<std::size_t>(model.entry_column()[static_cast<std::size_t>(k)]);
        if (!lazy[column]) continue;
        const auto at = static_cast<std::size_t>(count[column]++);
        entry_row_[at] = i;
        entry_value_[at] = model.entry_value()[static_cast<std::size_t>(k)];
      }
    }
  }

  Sense sense_;
  SolveOptions options_;
  ColumnGenerationOptions cg_;
  ColumnOracle* oracle_;  // may be null
  std::unique_ptr<Session> inner_;

  std::vector<FullColumn> columns_;
  std::vector<int> inner_to_full_;  // kLeftOut for elastic columns
  std::vector<double> row_lower_, row_upper_;
  // Column-major entries of the lazy columns in the rows the model was loaded with.
  std::vector<std::int64_t> column_start_;
  std::vector<int> entry_row_;
  std::vector<double> entry_value_;
  // Rows added through AddRow: their entries in columns that were left out at the time.
  std::vector<int> added_row_;
  std::vector<std::int64_t> added_row_start_{0};
  std::vector<int> added_entry_column_;
  std::vector<double> added_entry_value_;
  std::vector<ElasticColumn> elastic_;
  std::vector<unsigned char> elastic_sides_;  // per row: bit 1 = +1 column, bit 2 = -1 column
  bool in_phase1_ = false;
  std::size_t pricing_cursor_ = 0;  // where the next pricing round starts
};

Result<Solution> ColumnGenerationSession::Solve() {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  const auto out_of_time = [&] {
    return options_.time_limit_seconds > 0.0 &&
           std::chrono::duration<double>(Clock::now() - start).count() >
               options_.time_limit_seconds;
  };
  if (in_phase1_) LeavePhase1();  // an earlier Solve() failed half-way
  long iterations = 0;
  // Ends the solve with `solution`'s outcome; a phase-1 point is no point of the whole LP.
  const auto finish = [&](Solution solution, std::vector<double> reduced_costs) {
    if (in_phase1_) {
      LeavePhase1();
      solution.values.clear();
      solution.row_duals.clear();
      solution.reduced_costs.clear();
      reduced_costs.clear();
    }
    return Expand(solution, std::move(reduced_costs), iterations);
  };
  // Set once phase 1 has found the restricted LP feasible: should the inner solver still call
  // it infeasible (tolerances), every column is loaded and the inner solver has the last word.
  bool phase1_said_feasible = false;
  std::vector<double> reduced_costs;
  for (;;) {
    GAVEL_ASSIGN_OR_RETURN(Solution solution, inner_->Solve());
    iterations += solution.iterations;
    switch (solution.outcome) {
      case Outcome::kOptimal:
        break;
      case Outcome::kInfeasible: {
        // Phase 1 is feasible by construction unless the bounds themselves cross.
        if (in_phase1_) return finish(std::move(solution), {});
        if (!phase1_said_feasible) {
          // Infeasible without the left-out columns says nothing about the whole LP.
          EnterPhase1();
          continue;
        }
        const std::vector<int> left_out = LeftOutColumns();
        if (left_out.empty()) return finish(std::move(solution), {});
        LoadColumns(left_out);
        continue;
      }
      case Outcome::kUnbounded:
        // A ray of the restricted LP is a ray of the whole LP (left-out columns stay at 0), so
        // the whole LP is unbounded once it is known to be feasible. Backends may say
        // "unbounded" for a dual infeasible LP before they know it to be primal feasible:
        // phase 1 settles that first.
        if (!in_phase1_ && !phase1_said_feasible) {
          EnterPhase1();
          continue;
        }
        return finish(std::move(solution), {});
      case Outcome::kLimitReached:
        return finish(std::move(solution), {});
    }
    if (solution.row_duals.size() != static_cast<std::size_t>(num_rows())) {
      if (oracle_ != nullptr) {
        return Status::Internal("column generation: the inner solver gave no duals to price "
                                "the oracle's columns with");
      }
      // Nothing to price with: load everything and let the inner solver finish.
      const std::vector<int> left_out = LeftOutColumns();
      if (!left_out.empty()) {
        LoadColumns(left_out);
        continue;
      }
    } else if (PriceAndLoad(solution.row_duals, reduced_costs) +
                   PriceOracle(solution.row_duals) >
               0) {
      if (!out_of_time()) continue;
      // Out of time: in phase 2 the restricted optimum is still a feasible point of the whole
      // LP, just perhaps not an optimal one.
      solution.outcome = Outcome::kLimitReached;
      return finish(std::move(solution), {});
    }
    if (in_phase1_) {
      const double infeasibility = ElasticTotal(solution);
      LeavePhase1();
      if (infeasibility > kInfeasibilityTolerance * std::max(1, num_rows())) {
        Solution infeasible;
        infeasible.outcome = Outcome::kInfeasible;
        infeasible.iterations = iterations;
        return infeasible;
      }
      phase1_said_feasible = true;
      continue;  // phase 2 from phase 1's basis
    }
    return finish(std::move(solution), std::move(reduced_costs));
  }
}

class ColumnGenerationSolver final : public Solver {
 public:
  ColumnGenerationSolver(std::shared_ptr<Solver> inner, ColumnGenerationOptions options)
      : inner_(std::move(inner)),
        options_(options),
        name_(std::string(inner_->name()) + "+column-generation") {}

  std::string_view name() const override { return name_; }
  bool SupportsIntegers() const override { return inner_->SupportsIntegers(); }

  Result<std::unique_ptr<Session>> Load(const Model& model,
                                        const SolveOptions& options) override {
    // Nothing to leave out, integers (never dropped: the wrapper prices LPs only), or a
    // central point (the centre of the whole optimal face needs every column): the inner
    // solver's own session.
    if (options.algorithm == Algorithm::kCentral || !model.HasLazyColumns() ||
        model.HasIntegers()) {
      return inner_->Load(model, options);
    }
    auto session = std::make_unique<ColumnGenerationSession>(model, options, options_);
    GAVEL_RETURN_IF_ERROR(session->LoadInner(*inner_, model));
    return std::unique_ptr<Session>(std::move(session));
  }

 private:
  std::shared_ptr<Solver> inner_;
  ColumnGenerationOptions options_;
  std::string name_;
};

}  // namespace

Result<std::unique_ptr<Session>> LoadWithColumnOracle(Solver& inner, const Model& model,
                                                      ColumnOracle& oracle,
                                                      const SolveOptions& options,
                                                      ColumnGenerationOptions cg) {
  if (options.algorithm == Algorithm::kCentral || model.HasIntegers()) {
    return Status::InvalidArgument("a column oracle needs a simplex solve of an LP");
  }
  auto session = std::make_unique<ColumnGenerationSession>(model, options, cg, &oracle);
  GAVEL_RETURN_IF_ERROR(session->LoadInner(inner, model));
  return std::unique_ptr<Session>(std::move(session));
}

std::unique_ptr<Solver> MakeColumnGenerationSolver(std::shared_ptr<Solver> inner,
                                                   ColumnGenerationOptions options) {
  GAVEL_CHECK(inner != nullptr);
  return std::make_unique<ColumnGenerationSolver>(std::move(inner), options);
}

}  // namespace gavel::lp
