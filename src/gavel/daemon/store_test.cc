// The store's contract: a committed batch is there after reopening — also after the process
// that committed it was killed with SIGKILL — and a malformed database is refused with an
// error naming the table, row and field.
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "gavel/daemon/sqlite_store.h"
#include "gavel/daemon/store.h"

namespace gavel::daemon {
namespace {

class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "gavel_store_test_XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

JobRow MakeJob(std::uint64_t id, std::uint64_t steps_done) {
  JobRow row;
  row.id = id;
  row.user = "alice";
  row.spec.add_command("python3");
  row.spec.add_command("train.py");
  row.spec.set_total_steps(1000);
  row.spec.set_scale_factor(1);
  row.spec.set_job_type("ResNet-18 (batch size 64)");
  (*row.spec.mutable_throughputs())["v100"] = 12.5;
  row.state = wire::RUNNING;
  row.steps_done = steps_done;
  row.submitted_ms = 1000 + static_cast<std::int64_t>(id);
  row.attempts = 2;
  row.failures = 1;
  row.streak = 1;
  row.last_exit_code = 3;
  row.message = "crashed";
  row.next_retry_ms = 5000;
  row.first_launch_ms = 1500;
  row.last_startup_s = 2.5;
  row.startup_total_s = 7.25;
  row.per_type["v100"] = JobGpuRow{12.0, 300.0, 0.5, 10.0, 11.5, 4};
  row.per_type["k80"] = JobGpuRow{3.0, 20.0, 0.25, 2.0, 0.0, 0};
  row.colocated[{"v100", "A3C"}] = ColocatedRow{6.5, 3};
  row.colocated[{"v100", "Transformer (batch size 16)"}] = ColocatedRow{0.125, 1};
  row.colocated[{"k80", "A3C"}] = ColocatedRow{1.75, 2};
  return row;
}

void ExpectSameJob(const JobRow& a, const JobRow& b) {
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.user, b.user);
  EXPECT_EQ(a.spec.SerializeAsString(), b.spec.SerializeAsString());
  EXPECT_EQ(a.state, b.state);
  EXPECT_EQ(a.steps_done, b.steps_done);
  EXPECT_EQ(a.submitted_ms, b.submitted_ms);
  EXPECT_EQ(a.attempts, b.attempts);
  EXPECT_EQ(a.failures, b.failures);
  EXPECT_EQ(a.streak, b.streak);
  EXPECT_EQ(a.last_exit_code, b.last_exit_code);
  EXPECT_EQ(a.message, b.message);
  EXPECT_EQ(a.next_retry_ms, b.next_retry_ms);
  EXPECT_EQ(a.first_launch_ms, b.first_launch_ms);
  EXPECT_EQ(a.last_startup_s, b.last_startup_s);
  EXPECT_EQ(a.startup_total_s, b.startup_total_s);
  EXPECT_EQ(a.per_type, b.per_type);
  EXPECT_EQ(a.colocated, b.colocated);
}

WriteBatch FullBatch() {
  WriteBatch batch;
  batch.jobs = {MakeJob(1, 100), MakeJob(2, 0)};
  AgentRow agent;
  agent.agent_id = "agent-a";
  agent.address = "127.0.0.1:4000";
  agent.gpu_type = "v100";
  agent.num_gpus = 2;
  agent.first_worker_id = 0;
  agent.registered_ms = 42;
  agent.token = "secret-token";
  agent.owner = "host-a";
  agent.host_cpus = 32.0;
  agent.host_mem_gb = 256.5;
  agent.busy_seconds = {1.5, 2.25};
  batch.agents = {agent};
  batch.open_round = RoundRow{7, 100, 460, {{0, 1, 0, 1, false}, {1, 2, 0, 1, false}}};
  batch.events = {{1, "submit", 1, 0, "by alice"}};
  batch.meta = {{"next_job_id", "3"}};
  return batch;
}

TEST(SqliteStoreTest, CommittedBatchesSurviveReopening) {
  TempDir dir;
  {
    auto store = SqliteStore::Open(dir.path());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    ASSERT_TRUE((*store)->Commit(FullBatch()).ok());
    WriteBatch mark;
    mark.reported_workers = {1};
    ASSERT_TRUE((*store)->Commit(mark).ok());
  }
  auto store = SqliteStore::Open(dir.path());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto state = (*store)->Load();
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  ASSERT_EQ(state->jobs.size(), 2u);
  ExpectSameJob(state->jobs[0], MakeJob(1, 100));
  ExpectSameJob(state->jobs[1], MakeJob(2, 0));
  ASSERT_EQ(state->agents.size(), 1u);
  EXPECT_EQ(state->agents[0].agent_id, "agent-a");
  EXPECT_EQ(state->agents[0].token, "secret-token");
  EXPECT_EQ(state->agents[0].owner, "host-a");
  EXPECT_EQ(state->agents[0].busy_seconds, (std::vector<double>{1.5, 2.25}));
  EXPECT_EQ(state->agents[0].host_cpus, 32.0);
  EXPECT_EQ(state->agents[0].host_mem_gb, 256.5);
  ASSERT_TRUE(state->open_round.has_value());
  EXPECT_EQ(state->open_round->round_id, 7u);
  ASSERT_EQ(state->open_round->tasks.size(), 2u);
  EXPECT_FALSE(state->open_round->tasks[0].reported);
  EXPECT_TRUE(state->open_round->tasks[1].reported);
  EXPECT_EQ(state->meta["next_job_id"], "3");
  EXPECT_EQ(state->meta["schema_version"], "5");
}

TEST(SqliteStoreTest, ClosingARoundForgetsItsTasksAndUpsertsReplaceRows) {
  TempDir dir;
  auto store = SqliteStore::Open(dir.path());
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->Commit(FullBatch()).ok());
  WriteBatch next;
  next.close_round = true;
  next.jobs = {MakeJob(1, 250)};
  ASSERT_TRUE((*store)->Commit(next).ok());
  auto state = (*store)->Load();
  ASSERT_TRUE(state.ok());
  EXPECT_FALSE(state->open_round.has_value());
  ASSERT_EQ(state->jobs.size(), 2u);
  EXPECT_EQ(state->jobs[0].steps_done, 250u);
}

// The crash test: a child process commits batches and kills itself with SIGKILL right after
// the last commit returns; every batch it committed must be there.
TEST(SqliteStoreTest, CommitsSurviveSigkill) {
  TempDir dir;
  constexpr int kBatches = 50;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto store = SqliteStore::Open(dir.path());
    if (!store.ok()) ::_exit(2);
    for (int i = 1; i <= kBatches; ++i) {
      WriteBatch batch;
      batch.jobs = {MakeJob(static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(i) * 10)};
      batch.meta = {{"next_job_id", std::to_string(i + 1)}};
      if (!(*store)->Commit(batch).ok()) ::_exit(3);
    }
    ::raise(SIGKILL);
    ::_exit(4);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
  ASSERT_EQ(WTERMSIG(status), SIGKILL);
  auto store = SqliteStore::Open(dir.path());  // the child's lock died with it
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto state = (*store)->Load();
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  ASSERT_EQ(state->jobs.size(), static_cast<std::size_t>(kBatches));
  for (int i = 1; i <= kBatches; ++i) {
    EXPECT_EQ(state->jobs[static_cast<std::size_t>(i - 1)].steps_done,
              static_cast<std::uint64_t>(i) * 10);
  }
  EXPECT_EQ(state->meta["next_job_id"], std::to_string(kBatches + 1));
}

TEST(SqliteStoreTest, ASecondDaemonOnTheSameDirectoryIsRefused) {
  TempDir dir;
  auto first = SqliteStore::Open(dir.path());
  ASSERT_TRUE(first.ok());
  auto second = SqliteStore::Open(dir.path());
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("in use"), std::string::npos);
}

void Corrupt(const std::string& dir, const char* sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir + "/state.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
}

TEST(SqliteStoreTest, MalformedRowsAreRefusedNamingTheField) {
  struct Case {
    const char* sql;
    const char* expected;
  };
  const Case cases[] = {
      {"UPDATE jobs SET state=9 WHERE id=2", "job 2, field state"},
      {"UPDATE jobs SET spec=x'ffffffff' WHERE id=1", "job 1, field spec"},
      {"UPDATE jobs SET steps_done='many' WHERE id=1", "job 1, field steps_done"},
      {"UPDATE agents SET busy_seconds='1.5,x'", "agent agent-a, field busy_seconds"},
      {"UPDATE meta SET value='6' WHERE key='schema_version'", "schema version 6"},
      {"UPDATE job_colocated SET measured=-2 WHERE job_id=1 AND partner_type='A3C' AND "
       "gpu_type='k80'",
       "table job_colocated, job 1 type k80 partner \"A3C\", field measured"},
      {"UPDATE job_colocated SET measurements='often' WHERE job_id=2", "field measurements"},
      {"UPDATE job_colocated SET job_id=9 WHERE job_id=2", "job_colocated, job 9"},
      {"UPDATE agents SET host_cpus=-1", "agent agent-a, field host_cpus"},
      {"UPDATE agents SET host_mem_gb='lots'", "agent agent-a, field host_mem_gb"},
  };
  for (const Case& c : cases) {
    TempDir dir;
    {
      auto store = SqliteStore::Open(dir.path());
      ASSERT_TRUE(store.ok());
      ASSERT_TRUE((*store)->Commit(FullBatch()).ok());
    }
    Corrupt(dir.path(), c.sql);
    auto store = SqliteStore::Open(dir.path());
    Status status = store.ok() ? (*store)->Load().status() : store.status();
    ASSERT_FALSE(status.ok()) << c.sql;
    EXPECT_NE(status.message().find(c.expected), std::string::npos)
        << c.sql << " -> " << status.message();
  }
}

TEST(SqliteStoreTest, AFileThatIsNotADatabaseIsRefused) {
  TempDir dir;
  {
    std::FILE* f = std::fopen((dir.path() + "/state.db").c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("this is not a database, just some text that is long enough.......", f);
    std::fclose(f);
  }
  auto store = SqliteStore::Open(dir.path());
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("state.db"), std::string::npos);
}

// The state was created world-readable. The directory we create is 0700 and the
// database, its WAL and shared-memory files and the lock are 0600, whatever the umask, also
// when an older version left them wider.
TEST(SqliteStoreTest, TheStateIsPrivateToItsOwner) {
  const auto mode = [](const std::string& path) {
    struct stat info {};
    EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
    return info.st_mode & 07777;
  };
  const mode_t old_umask = ::umask(0);  // the most permissive: nothing masked
  TempDir parent;
  const std::string dir = parent.path() + "/state";
  {
    auto store = SqliteStore::Open(dir);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    ASSERT_TRUE((*store)->Commit(FullBatch()).ok());
    EXPECT_EQ(mode(dir), 0700u);
    for (const char* file : {"/state.db", "/state.db-wal", "/state.db-shm", "/LOCK"}) {
      EXPECT_EQ(mode(dir + file), 0600u) << file;
    }
  }
  for (const char* file : {"/state.db", "/LOCK"}) {
    ASSERT_EQ(::chmod((dir + file).c_str(), 0644), 0);
  }
  {
    auto store = SqliteStore::Open(dir);
    ASSERT_TRUE(store.ok());
    for (const char* file : {"/state.db", "/LOCK"}) EXPECT_EQ(mode(dir + file), 0600u) << file;
    EXPECT_EQ((*store)->Load()->agents.size(), 1u);
  }
  ::umask(old_umask);
}

// A version-1 state kept each agent's registering token in plain text: opening it erases the
// tokens, adds the owner column and marks the agents dead (they register again).
TEST(SqliteStoreTest, SchemaOneIsMigratedWithoutItsTokens) {
  TempDir dir;
  {
    auto store = SqliteStore::Open(dir.path());
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->Commit(FullBatch()).ok());
  }
  // Turn it back into what version 1 wrote: no owner column, the token in clear.
  Corrupt(dir.path(),
          "ALTER TABLE agents DROP COLUMN owner; UPDATE agents SET token='admin-token-1';"
          "ALTER TABLE agents DROP COLUMN host_cpus; ALTER TABLE agents DROP COLUMN host_mem_gb;"
          "ALTER TABLE jobs DROP COLUMN last_startup_s; ALTER TABLE jobs DROP COLUMN startup_total_s;"
          "UPDATE meta SET value='1' WHERE key='schema_version'");
  auto store = SqliteStore::Open(dir.path());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto state = (*store)->Load();
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  ASSERT_EQ(state->agents.size(), 1u);
  EXPECT_EQ(state->agents[0].token, "");
  EXPECT_EQ(state->agents[0].owner, "");
  EXPECT_FALSE(state->agents[0].alive);
  EXPECT_EQ(state->jobs.size(), FullBatch().jobs.size());
  EXPECT_EQ(state->meta.at("schema_version"), "5");
  EXPECT_EQ(state->jobs[0].startup_total_s, 0.0);  // not measured before version 3
}

TEST(SqliteStoreTest, SchemaTwoGainsTheStartUpColumns) {
  TempDir dir;
  {
    auto store = SqliteStore::Open(dir.path());
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->Commit(FullBatch()).ok());
  }
  Corrupt(dir.path(),
          "ALTER TABLE jobs DROP COLUMN last_startup_s; ALTER TABLE jobs DROP COLUMN startup_total_s;"
          "ALTER TABLE agents DROP COLUMN host_cpus; ALTER TABLE agents DROP COLUMN host_mem_gb;"
          "UPDATE meta SET value='2' WHERE key='schema_version'");
  auto store = SqliteStore::Open(dir.path());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto state = (*store)->Load();
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  ASSERT_EQ(state->jobs.size(), FullBatch().jobs.size());
  EXPECT_EQ(state->jobs[0].last_startup_s, 0.0);
  EXPECT_EQ(state->agents[0].owner, "host-a");  // version 2's columns are kept
  EXPECT_EQ(state->meta.at("schema_version"), "5");
  // Written back with the new columns.
  ASSERT_TRUE((*store)->Commit(FullBatch()).ok());
  EXPECT_EQ((*store)->Load()->jobs[0].startup_total_s, 7.25);
}

// Version 3 knew no host resources: its agents read as not advertising any, everything else
// is kept. Job specs written before the field's schedulers' fields existed read them as unset
// (the spec is a JobSpec blob), and specs that carry them keep them.
TEST(SqliteStoreTest, SchemaThreeGainsTheHostResourceColumns) {
  TempDir dir;
  {
    auto store = SqliteStore::Open(dir.path());
    ASSERT_TRUE(store.ok());
    WriteBatch batch = FullBatch();
    batch.jobs[1].spec.set_app("search-1");
    batch.jobs[1].spec.set_cpus_per_gpu(4.0);
    batch.jobs[1].spec.mutable_utility()->set_family(wire::JobUtility::LINEAR);
    batch.jobs[1].spec.mutable_utility()->set_value(2.0);
    batch.jobs[1].spec.mutable_utility()->set_time_s(600.0);
    ASSERT_TRUE((*store)->Commit(batch).ok());
  }
  Corrupt(dir.path(),
          "ALTER TABLE agents DROP COLUMN host_cpus; ALTER TABLE agents DROP COLUMN host_mem_gb;"
          "UPDATE meta SET value='3' WHERE key='schema_version'");
  auto store = SqliteStore::Open(dir.path());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto state = (*store)->Load();
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  EXPECT_EQ(state->meta.at("schema_version"), "5");
  ASSERT_EQ(state->agents.size(), 1u);
  EXPECT_EQ(state->agents[0].host_cpus, 0.0);
  EXPECT_EQ(state->agents[0].host_mem_gb, 0.0);
  EXPECT_EQ(state->agents[0].owner, "host-a");
  ASSERT_EQ(state->jobs.size(), 2u);
  EXPECT_EQ(state->jobs[0].spec.app(), "");
  EXPECT_FALSE(state->jobs[0].spec.has_utility());
  EXPECT_EQ(state->jobs[1].spec.app(), "search-1");
  EXPECT_EQ(state->jobs[1].spec.cpus_per_gpu(), 4.0);
  EXPECT_EQ(state->jobs[1].spec.utility().family(), wire::JobUtility::LINEAR);
  EXPECT_EQ(state->jobs[1].spec.utility().time_s(), 600.0);
}

// Version 4 stored no co-located throughputs: the table is added empty, everything else is
// kept, and the rates a daemon learns afterwards are written and read back.
TEST(SqliteStoreTest, SchemaFourGainsTheColocatedTable) {
  TempDir dir;
  {
    auto store = SqliteStore::Open(dir.path());
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->Commit(FullBatch()).ok());
  }
  Corrupt(dir.path(),
          "DROP TABLE job_colocated; UPDATE meta SET value='4' WHERE key='schema_version'");
  auto store = SqliteStore::Open(dir.path());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto state = (*store)->Load();
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  EXPECT_EQ(state->meta.at("schema_version"), "5");
  ASSERT_EQ(state->jobs.size(), 2u);
  EXPECT_TRUE(state->jobs[0].colocated.empty());
  JobRow without = MakeJob(1, 100);
  without.colocated.clear();
  ExpectSameJob(state->jobs[0], without);
  EXPECT_EQ(state->agents[0].host_cpus, 32.0);  // version 4's columns are kept
  ASSERT_TRUE((*store)->Commit(FullBatch()).ok());
  auto again = (*store)->Load();
  ASSERT_TRUE(again.ok());
  ExpectSameJob(again->jobs[0], MakeJob(1, 100));
}

TEST(MemoryStoreTest, BehavesLikeTheSqliteStore) {
  MemoryStore store;
  ASSERT_TRUE(store.Commit(FullBatch()).ok());
  WriteBatch mark;
  mark.reported_workers = {1};
  ASSERT_TRUE(store.Commit(mark).ok());
  auto state = store.Load();
  ASSERT_TRUE(state.ok());
  ASSERT_EQ(state->jobs.size(), 2u);
  ExpectSameJob(state->jobs[0], MakeJob(1, 100));
  ASSERT_TRUE(state->open_round.has_value());
  EXPECT_TRUE(state->open_round->tasks[1].reported);
  MemoryStore reopened(*std::move(state));
  auto again = reopened.Load();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->jobs.size(), 2u);
  EXPECT_EQ(again->agents.size(), 1u);
}

}  // namespace
}  // namespace gavel::daemon
