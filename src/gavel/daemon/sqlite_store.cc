#include "gavel/daemon/sqlite_store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <sstream>

#include "gavel/daemon/error_text.h"

namespace gavel::daemon {
namespace {

// Version 2: agents.owner added; agents.token holds the agent's callback token instead of the
// token it registered with. Version 3: jobs.last_startup_s and jobs.startup_total_s.
// Version 4: agents.host_cpus and agents.host_mem_gb (0 = not advertised). Version 5: the
// job_colocated table, the measured co-located throughputs (a version-4 state had none: the
// table starts empty). Older versions are migrated on open. (New job fields such as the app,
// utility and host demands live in the jobs.spec blob, a JobSpec message: proto3 reads old
// blobs with those fields at their defaults, so they need no migration.)
constexpr int kSchemaVersion = 5;

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS jobs(
  id INTEGER PRIMARY KEY, user TEXT NOT NULL, spec BLOB NOT NULL, state INTEGER NOT NULL,
  steps_done INTEGER NOT NULL, submitted_ms INTEGER NOT NULL, finished_ms INTEGER NOT NULL,
  attempts INTEGER NOT NULL, failures INTEGER NOT NULL, streak INTEGER NOT NULL,
  last_exit_code INTEGER NOT NULL, message TEXT NOT NULL, next_retry_ms INTEGER NOT NULL,
  first_launch_ms INTEGER NOT NULL, last_startup_s REAL NOT NULL DEFAULT 0,
  startup_total_s REAL NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS job_gpu(
  job_id INTEGER NOT NULL, gpu_type TEXT NOT NULL, seconds REAL NOT NULL, steps REAL NOT NULL,
  allocation REAL NOT NULL, prior REAL NOT NULL, measured REAL NOT NULL,
  measurements INTEGER NOT NULL, PRIMARY KEY(job_id, gpu_type));
CREATE TABLE IF NOT EXISTS job_colocated(
  job_id INTEGER NOT NULL, gpu_type TEXT NOT NULL, partner_type TEXT NOT NULL,
  measured REAL NOT NULL, measurements INTEGER NOT NULL,
  PRIMARY KEY(job_id, gpu_type, partner_type));
CREATE TABLE IF NOT EXISTS agents(
  agent_id TEXT PRIMARY KEY, address TEXT NOT NULL, gpu_type TEXT NOT NULL,
  num_gpus INTEGER NOT NULL, first_worker_id INTEGER NOT NULL, registered_ms INTEGER NOT NULL,
  token TEXT NOT NULL, alive INTEGER NOT NULL, busy_seconds TEXT NOT NULL,
  owner TEXT NOT NULL DEFAULT '', host_cpus REAL NOT NULL DEFAULT 0,
  host_mem_gb REAL NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS rounds(
  round_id INTEGER PRIMARY KEY, start_ms INTEGER NOT NULL, end_ms INTEGER NOT NULL,
  open INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS round_tasks(
  round_id INTEGER NOT NULL, worker_id INTEGER NOT NULL, job_id INTEGER NOT NULL,
  rank INTEGER NOT NULL, world_size INTEGER NOT NULL, reported INTEGER NOT NULL,
  PRIMARY KEY(round_id, worker_id));
CREATE TABLE IF NOT EXISTS events(
  seq INTEGER PRIMARY KEY AUTOINCREMENT, ts_ms INTEGER NOT NULL, kind TEXT NOT NULL,
  job_id INTEGER NOT NULL, worker_id INTEGER NOT NULL, message TEXT NOT NULL);
)sql";

// A prepared statement that finalizes itself.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) : db_(db) {
    rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
  }
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  bool ok() const { return rc_ == SQLITE_OK; }
  Stmt& Bind(int i, std::int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  Stmt& Bind(int i, double v) {
    sqlite3_bind_double(stmt_, i, v);
    return *this;
  }
  Stmt& Bind(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& BindBlob(int i, const std::string& v) {
    sqlite3_bind_blob(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  // Runs a statement that returns no rows, then resets it for reuse.
  Status Run(const char* what) {
    const int rc = sqlite3_step(stmt_);
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
    if (rc != SQLITE_DONE) {
      return Status::IoError(std::string("state database: ") + what + ": " + sqlite3_errmsg(db_));
    }
    return Status::Ok();
  }
  // Steps a query: true while there is a row.
  bool Next() { return sqlite3_step(stmt_) == SQLITE_ROW; }
  std::int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  double Real(int col) const { return sqlite3_column_double(stmt_, col); }
  bool IsInteger(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_INTEGER; }
  bool IsNumber(int col) const {
    const int type = sqlite3_column_type(stmt_, col);
    return type == SQLITE_INTEGER || type == SQLITE_FLOAT;
  }
  std::string Text(int col) const {
    const auto* p = sqlite3_column_blob(stmt_, col);
    const int n = sqlite3_column_bytes(stmt_, col);
    return p == nullptr ? std::string() : std::string(static_cast<const char*>(p),
                                                      static_cast<std::size_t>(n));
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = SQLITE_ERROR;
};

std::string JoinDoubles(const std::vector<double>& values) {
  std::ostringstream out;
  out.precision(17);
  for (std::size_t i = 0; i < values.size(); ++i) out << (i ? "," : "") << values[i];
  return out.str();
}

Result<std::vector<double>> SplitDoubles(const std::string& text, const std::string& where) {
  std::vector<double> values;
  if (text.empty()) return values;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      std::size_t used = 0;
      values.push_back(std::stod(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      return Status::InvalidArgument(where + ": `" + item + "` is not a number");
    }
  }
  return values;
}

bool ValidJobState(std::int64_t state) {
  return state >= wire::QUEUED && state <= wire::CANCELLED;
}

}  // namespace

SqliteStore::SqliteStore(sqlite3* db, int lock_fd, std::string path)
    : db_(db), lock_fd_(lock_fd), path_(std::move(path)) {}

SqliteStore::~SqliteStore() {
  sqlite3_close(db_);
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

Status SqliteStore::Exec(const char* sql) {
  char* error = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &error) != SQLITE_OK) {
    const std::string message = error ? error : "unknown error";
    sqlite3_free(error);
    return Status::IoError("state database " + path_ + ": " + message);
  }
  return Status::Ok();
}

Result<std::unique_ptr<SqliteStore>> SqliteStore::Open(const std::string& state_dir) {
  std::error_code ec;
  const bool existed = std::filesystem::exists(state_dir, ec);
  std::filesystem::create_directories(state_dir, ec);
  if (ec) return Status::IoError("cannot create state directory " + state_dir + ": " + ec.message());
  // The state is the operator's alone: a directory we create is 0700, and the
  // files in it are 0600 whatever the umask, also when an older gavel left them wider.
  if (!existed && ::chmod(state_dir.c_str(), 0700) != 0) {
    return Status::IoError("cannot chmod 700 " + state_dir + ": " + std::strerror(errno));
  }
  const std::string lock_path = state_dir + "/LOCK";
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Status::IoError("cannot open " + lock_path + ": " + std::strerror(errno));
  (void)::fchmod(fd, 0600);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return Status::FailedPrecondition("state directory " + state_dir +
                                      " is in use by another gavel serve");
  }
  const std::string path = state_dir + "/state.db";
  // SQLite creates its -wal and -shm files with the database file's mode, so creating the
  // database 0600 first makes all three private.
  for (const std::string& file : {path, path + "-wal", path + "-shm"}) {
    const bool main_file = file == path;
    const int private_fd = ::open(file.c_str(), O_RDWR | O_CLOEXEC | (main_file ? O_CREAT : 0), 0600);
    if (private_fd < 0) {
      if (!main_file && errno == ENOENT) continue;
      const std::string reason = std::strerror(errno);
      ::close(fd);
      return Status::IoError("cannot open state database " + file + ": " + reason);
    }
    const bool chmod_ok = ::fchmod(private_fd, 0600) == 0;
    ::close(private_fd);
    if (!chmod_ok) {
      ::close(fd);
      return Status::IoError("cannot chmod 600 " + file + ": " + std::strerror(errno));
    }
  }
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    const std::string message = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    ::close(fd);
    return Status::IoError("cannot open state database " + path + ": " + message);
  }
  std::unique_ptr<SqliteStore> store(new SqliteStore(db, fd, path));
  sqlite3_busy_timeout(db, 5000);
  GAVEL_RETURN_IF_ERROR(store->Exec("PRAGMA journal_mode=WAL;"));
  GAVEL_RETURN_IF_ERROR(store->Exec("PRAGMA synchronous=FULL;"));
  GAVEL_RETURN_IF_ERROR(store->Exec("PRAGMA foreign_keys=OFF;"));
  // A file that is not a database (or is corrupt) fails here with SQLite's message.
  GAVEL_RETURN_IF_ERROR(store->Exec("BEGIN IMMEDIATE;"));
  Status created = store->Exec(kSchema);
  if (created.ok()) {
    Stmt get(db, "SELECT value FROM meta WHERE key='schema_version'");
    if (get.Next()) {
      const std::string version = get.Text(0);
      if (version == "1") {
        // Version 1 kept each agent's registering token in plain text and no owner: erase the
        // tokens and mark the agents dead, so that each registers again (with a callback
        // token and under its own identity) on its next heartbeat.
        created = store->Exec(
            "ALTER TABLE agents ADD COLUMN owner TEXT NOT NULL DEFAULT '';"
            "UPDATE agents SET token='', alive=0;");
      }
      if (version == "1" || version == "2") {
        // Start-up times were not measured before version 3: 0.
        if (created.ok()) {
          created = store->Exec(
              "ALTER TABLE jobs ADD COLUMN last_startup_s REAL NOT NULL DEFAULT 0;"
              "ALTER TABLE jobs ADD COLUMN startup_total_s REAL NOT NULL DEFAULT 0;");
        }
      }
      if (version == "1" || version == "2" || version == "3") {
        // Agents advertised no host resources before version 4: not limited.
        if (created.ok()) {
          created = store->Exec(
              "ALTER TABLE agents ADD COLUMN host_cpus REAL NOT NULL DEFAULT 0;"
              "ALTER TABLE agents ADD COLUMN host_mem_gb REAL NOT NULL DEFAULT 0;");
        }
      }
      if (version == "1" || version == "2" || version == "3" || version == "4") {
        // No co-located throughputs were stored before version 5: job_colocated (created
        // above) starts empty and the daemon learns them again.
        if (created.ok()) {
          created = store->Exec("UPDATE meta SET value='5' WHERE key='schema_version';");
        }
      } else if (version != std::to_string(kSchemaVersion)) {
        created = Status::FailedPrecondition("state database " + path + " has schema version " +
                                             version + "; this gavel reads version " +
                                             std::to_string(kSchemaVersion));
      }
    } else {
      Stmt put(db, "INSERT INTO meta(key, value) VALUES('schema_version', ?)");
      created = put.Bind(1, std::to_string(kSchemaVersion)).Run("write schema version");
    }
  }
  if (!created.ok()) {
    (void)store->Exec("ROLLBACK;");
    return created;
  }
  GAVEL_RETURN_IF_ERROR(store->Exec("COMMIT;"));
  return store;
}

Result<StoredState> SqliteStore::Load() {
  StoredState state;
  {
    Stmt q(db_, "SELECT key, value FROM meta");
    while (q.Next()) state.meta[q.Text(0)] = q.Text(1);
  }
  std::map<std::uint64_t, std::size_t> index;
  {
    Stmt q(db_,
           "SELECT id, user, spec, state, steps_done, submitted_ms, finished_ms, attempts, "
           "failures, streak, last_exit_code, message, next_retry_ms, first_launch_ms, "
           "last_startup_s, startup_total_s FROM jobs ORDER BY id");
    while (q.Next()) {
      JobRow row;
      row.id = static_cast<std::uint64_t>(q.Int(0));
      const std::string where = "state database, table jobs, job " + std::to_string(row.id);
      row.user = q.Text(1);
      if (!row.spec.ParseFromString(q.Text(2))) {
        return Status::InvalidArgument(where + ", field spec: not a valid JobSpec");
      }
      if (!q.IsInteger(3) || !ValidJobState(q.Int(3))) {
        return Status::InvalidArgument(where + ", field state: `" + q.Text(3) +
                                       "` is not a job state (1..5)");
      }
      row.state = static_cast<wire::JobState>(q.Int(3));
      if (!q.IsInteger(4) || q.Int(4) < 0) {
        return Status::InvalidArgument(where + ", field steps_done: `" + q.Text(4) +
                                       "` is not a step count");
      }
      row.steps_done = static_cast<std::uint64_t>(q.Int(4));
      row.submitted_ms = q.Int(5);
      row.finished_ms = q.Int(6);
      row.attempts = static_cast<std::uint32_t>(q.Int(7));
      row.failures = static_cast<std::uint32_t>(q.Int(8));
      row.streak = static_cast<std::uint32_t>(q.Int(9));
      row.last_exit_code = static_cast<std::int32_t>(q.Int(10));
      row.message = q.Text(11);
      row.next_retry_ms = q.Int(12);
      row.first_launch_ms = q.Int(13);
      row.last_startup_s = q.Real(14);
      row.startup_total_s = q.Real(15);
      index[row.id] = state.jobs.size();
      state.jobs.push_back(std::move(row));
    }
  }
  {
    Stmt q(db_,
           "SELECT job_id, gpu_type, seconds, steps, allocation, prior, measured, measurements "
           "FROM job_gpu");
    while (q.Next()) {
      const auto job = static_cast<std::uint64_t>(q.Int(0));
      const std::string where = "state database, table job_gpu, job " + std::to_string(job) +
                                " type " + q.Text(1);
      const auto it = index.find(job);
      if (it == index.end()) return Status::InvalidArgument(where + ": no such job");
      for (int col = 2; col <= 7; ++col) {
        if (!q.IsNumber(col)) {
          return Status::InvalidArgument(where + ", column " + std::to_string(col) +
                                         ": not a number");
        }
      }
      JobGpuRow row{q.Real(2), q.Real(3), q.Real(4), q.Real(5), q.Real(6),
                    static_cast<std::uint32_t>(q.Int(7))};
      state.jobs[it->second].per_type[q.Text(1)] = row;
    }
  }
  {
    Stmt q(db_,
           "SELECT job_id, gpu_type, partner_type, measured, measurements FROM job_colocated");
    while (q.Next()) {
      const auto job = static_cast<std::uint64_t>(q.Int(0));
      const std::string where = "state database, table job_colocated, job " +
                                std::to_string(job) + " type " + q.Text(1) + " partner " +
                                Quoted(q.Text(2));
      const auto it = index.find(job);
      if (it == index.end()) return Status::InvalidArgument(where + ": no such job");
      const double measured = q.Real(3);
      if (!q.IsNumber(3) || !std::isfinite(measured) || measured < 0.0) {
        return Status::InvalidArgument(where + ", field measured: must be a non-negative number");
      }
      if (!q.IsInteger(4) || q.Int(4) < 0 || q.Int(4) > std::numeric_limits<std::uint32_t>::max()) {
        return Status::InvalidArgument(where + ", field measurements: must be a count");
      }
      state.jobs[it->second].colocated[{q.Text(1), q.Text(2)}] =
          ColocatedRow{measured, static_cast<std::uint32_t>(q.Int(4))};
    }
  }
  {
    Stmt q(db_,
           "SELECT agent_id, address, gpu_type, num_gpus, first_worker_id, registered_ms, token, "
           "alive, busy_seconds, owner, host_cpus, host_mem_gb FROM agents "
           "ORDER BY first_worker_id");
    while (q.Next()) {
      AgentRow row;
      row.agent_id = q.Text(0);
      const std::string where = "state database, table agents, agent " + row.agent_id;
      row.address = q.Text(1);
      row.gpu_type = q.Text(2);
      if (!q.IsInteger(3) || q.Int(3) < 1) {
        return Status::InvalidArgument(where + ", field num_gpus: must be a positive integer");
      }
      row.num_gpus = static_cast<std::uint32_t>(q.Int(3));
      row.first_worker_id = static_cast<std::uint64_t>(q.Int(4));
      row.registered_ms = q.Int(5);
      row.token = q.Text(6);
      row.alive = q.Int(7) != 0;
      row.owner = q.Text(9);
      for (const int col : {10, 11}) {
        const double v = q.Real(col);
        if (!q.IsNumber(col) || !std::isfinite(v) || v < 0.0) {
          return Status::InvalidArgument(where + ", field " +
                                         (col == 10 ? "host_cpus" : "host_mem_gb") +
                                         ": must be a non-negative number");
        }
        (col == 10 ? row.host_cpus : row.host_mem_gb) = v;
      }
      GAVEL_ASSIGN_OR_RETURN(row.busy_seconds,
                             SplitDoubles(q.Text(8), where + ", field busy_seconds"));
      row.busy_seconds.resize(row.num_gpus, 0.0);
      state.agents.push_back(std::move(row));
    }
  }
  {
    Stmt q(db_, "SELECT round_id, start_ms, end_ms FROM rounds WHERE open=1 ORDER BY round_id");
    while (q.Next()) {
      RoundRow round;
      round.round_id = static_cast<std::uint64_t>(q.Int(0));
      round.start_ms = q.Int(1);
      round.end_ms = q.Int(2);
      state.open_round = std::move(round);  // the latest open one
    }
  }
  if (state.open_round) {
    Stmt q(db_,
           "SELECT worker_id, job_id, rank, world_size, reported FROM round_tasks "
           "WHERE round_id=? ORDER BY worker_id");
    q.Bind(1, static_cast<std::int64_t>(state.open_round->round_id));
    while (q.Next()) {
      RoundTaskRow task;
      task.worker_id = static_cast<std::uint64_t>(q.Int(0));
      task.job_id = static_cast<std::uint64_t>(q.Int(1));
      task.rank = static_cast<std::uint32_t>(q.Int(2));
      task.world_size = static_cast<std::uint32_t>(q.Int(3));
      task.reported = q.Int(4) != 0;
      state.open_round->tasks.push_back(task);
    }
  }
  return state;
}

Status SqliteStore::Commit(const WriteBatch& batch) {
  if (batch.empty()) return Status::Ok();
  GAVEL_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE;"));
  auto body = [&]() -> Status {
    if (!batch.jobs.empty()) {
      Stmt job(db_,
               "INSERT OR REPLACE INTO jobs(id, user, spec, state, steps_done, submitted_ms, "
               "finished_ms, attempts, failures, streak, last_exit_code, message, next_retry_ms, "
               "first_launch_ms, last_startup_s, startup_total_s) "
               "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
      Stmt gpu(db_,
               "INSERT OR REPLACE INTO job_gpu(job_id, gpu_type, seconds, steps, allocation, "
               "prior, measured, measurements) VALUES(?,?,?,?,?,?,?,?)");
      Stmt colocated(db_,
                     "INSERT OR REPLACE INTO job_colocated(job_id, gpu_type, partner_type, "
                     "measured, measurements) VALUES(?,?,?,?,?)");
      for (const JobRow& row : batch.jobs) {
        std::string spec;
        row.spec.SerializeToString(&spec);
        GAVEL_RETURN_IF_ERROR(job.Bind(1, static_cast<std::int64_t>(row.id))
                                  .Bind(2, row.user)
                                  .BindBlob(3, spec)
                                  .Bind(4, static_cast<std::int64_t>(row.state))
                                  .Bind(5, static_cast<std::int64_t>(row.steps_done))
                                  .Bind(6, row.submitted_ms)
                                  .Bind(7, row.finished_ms)
                                  .Bind(8, static_cast<std::int64_t>(row.attempts))
                                  .Bind(9, static_cast<std::int64_t>(row.failures))
                                  .Bind(10, static_cast<std::int64_t>(row.streak))
                                  .Bind(11, static_cast<std::int64_t>(row.last_exit_code))
                                  .Bind(12, row.message)
                                  .Bind(13, row.next_retry_ms)
                                  .Bind(14, row.first_launch_ms)
                                  .Bind(15, row.last_startup_s)
                                  .Bind(16, row.startup_total_s)
                                  .Run("write job"));
        for (const auto& [type, g] : row.per_type) {
          GAVEL_RETURN_IF_ERROR(gpu.Bind(1, static_cast<std::int64_t>(row.id))
                                    .Bind(2, type)
                                    .Bind(3, g.seconds)
                                    .Bind(4, g.steps)
                                    .Bind(5, g.allocation)
                                    .Bind(6, g.prior)
                                    .Bind(7, g.measured)
                                    .Bind(8, static_cast<std::int64_t>(g.measurements))
                                    .Run("write job progress"));
        }
        for (const auto& [key, c] : row.colocated) {
          GAVEL_RETURN_IF_ERROR(colocated.Bind(1, static_cast<std::int64_t>(row.id))
                                    .Bind(2, key.first)
                                    .Bind(3, key.second)
                                    .Bind(4, c.measured)
                                    .Bind(5, static_cast<std::int64_t>(c.measurements))
                                    .Run("write job co-located throughput"));
        }
      }
    }
    if (!batch.agents.empty()) {
      Stmt agent(db_,
                 "INSERT OR REPLACE INTO agents(agent_id, address, gpu_type, num_gpus, "
                 "first_worker_id, registered_ms, token, alive, busy_seconds, owner, host_cpus, "
                 "host_mem_gb) VALUES(?,?,?,?,?,?,?,?,?,?,?,?)");
      for (const AgentRow& row : batch.agents) {
        GAVEL_RETURN_IF_ERROR(agent.Bind(1, row.agent_id)
                                  .Bind(2, row.address)
                                  .Bind(3, row.gpu_type)
                                  .Bind(4, static_cast<std::int64_t>(row.num_gpus))
                                  .Bind(5, static_cast<std::int64_t>(row.first_worker_id))
                                  .Bind(6, row.registered_ms)
                                  .Bind(7, row.token)
                                  .Bind(8, static_cast<std::int64_t>(row.alive ? 1 : 0))
                                  .Bind(9, JoinDoubles(row.busy_seconds))
                                  .Bind(10, row.owner)
                                  .Bind(11, row.host_cpus)
                                  .Bind(12, row.host_mem_gb)
                                  .Run("write agent"));
      }
    }
    if (batch.close_round || batch.open_round) {
      // Only the open round's tasks matter after a restart; closed rounds keep their times.
      GAVEL_RETURN_IF_ERROR(Exec("DELETE FROM round_tasks; UPDATE rounds SET open=0;"));
    }
    if (batch.open_round) {
      const RoundRow& round = *batch.open_round;
      Stmt r(db_, "INSERT OR REPLACE INTO rounds(round_id, start_ms, end_ms, open) "
                  "VALUES(?,?,?,1)");
      GAVEL_RETURN_IF_ERROR(r.Bind(1, static_cast<std::int64_t>(round.round_id))
                                .Bind(2, round.start_ms)
                                .Bind(3, round.end_ms)
                                .Run("write round"));
      Stmt t(db_, "INSERT INTO round_tasks(round_id, worker_id, job_id, rank, world_size, "
                  "reported) VALUES(?,?,?,?,?,?)");
      for (const RoundTaskRow& task : round.tasks) {
        GAVEL_RETURN_IF_ERROR(t.Bind(1, static_cast<std::int64_t>(round.round_id))
                                  .Bind(2, static_cast<std::int64_t>(task.worker_id))
                                  .Bind(3, static_cast<std::int64_t>(task.job_id))
                                  .Bind(4, static_cast<std::int64_t>(task.rank))
                                  .Bind(5, static_cast<std::int64_t>(task.world_size))
                                  .Bind(6, static_cast<std::int64_t>(task.reported ? 1 : 0))
                                  .Run("write round task"));
      }
    }
    if (!batch.reported_workers.empty()) {
      Stmt mark(db_, "UPDATE round_tasks SET reported=1 WHERE worker_id=? AND round_id IN "
                     "(SELECT round_id FROM rounds WHERE open=1)");
      for (std::uint64_t worker : batch.reported_workers) {
        GAVEL_RETURN_IF_ERROR(
            mark.Bind(1, static_cast<std::int64_t>(worker)).Run("mark round task reported"));
      }
    }
    if (!batch.events.empty()) {
      Stmt e(db_, "INSERT INTO events(ts_ms, kind, job_id, worker_id, message) "
                  "VALUES(?,?,?,?,?)");
      for (const EventRow& row : batch.events) {
        GAVEL_RETURN_IF_ERROR(e.Bind(1, row.ts_ms)
                                  .Bind(2, row.kind)
                                  .Bind(3, static_cast<std::int64_t>(row.job_id))
                                  .Bind(4, static_cast<std::int64_t>(row.worker_id))
                                  .Bind(5, row.message)
                                  .Run("append event"));
      }
    }
    if (!batch.meta.empty()) {
      Stmt m(db_, "INSERT OR REPLACE INTO meta(key, value) VALUES(?,?)");
      for (const auto& [key, value] : batch.meta) {
        GAVEL_RETURN_IF_ERROR(m.Bind(1, key).Bind(2, value).Run("write meta"));
      }
    }
    return Status::Ok();
  };
  const Status status = body();
  if (!status.ok()) {
    (void)Exec("ROLLBACK;");
    return status;
  }
  return Exec("COMMIT;");
}

}  // namespace gavel::daemon
