// SqliteStore: the Store in a SQLite database `<state dir>/state.db`, in WAL mode with
// synchronous=FULL, so a committed batch survives kill -9 and power loss. The state
// directory is locked (flock on `<dir>/LOCK`) while the store is open: a second daemon on the
// same directory is refused instead of corrupting it.
//
// Schema version 1 (docs/runtime.md lists the tables); a database with another version is
// refused with a clear error. Not synchronised: one thread uses a store at a time.
#pragma once

#include <memory>
#include <string>

#include "gavel/daemon/store.h"

struct sqlite3;

namespace gavel::daemon {

class SqliteStore final : public Store {
 public:
  // Opens (creating if needed) the state directory and its database.
  static Result<std::unique_ptr<SqliteStore>> Open(const std::string& state_dir);
  ~SqliteStore() override;
  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;

  Result<StoredState> Load() override;
  Status Commit(const WriteBatch& batch) override;

  const std::string& path() const { return path_; }

 private:
  SqliteStore(sqlite3* db, int lock_fd, std::string path);
  Status Exec(const char* sql);

  sqlite3* db_;
  int lock_fd_;
  std::string path_;
};

}  // namespace gavel::daemon
