// GavelIterator for C++ training loops: the same lease protocol and checkpoint contract as
// python/gavel_iterator.py (docs/checkpointing.md), header-only, depending on nothing but
// POSIX sockets, the standard library and nlohmann/json (the wire is proto3 JSON over
// HTTP/1.1 to the worker agent; proto/iterator.proto).
//
//   gavel::iterator::GavelIterator it(
//       [&](const std::string& dir) { SaveModel(dir + "/model.bin"); },
//       [&](const std::string& dir) { LoadModel(dir + "/model.bin"); });
//   while (it.Next()) {            // it.steps_done() = steps finished before this one
//     TrainStep(NextBatch());
//   }
//
// The constructor claims the job's checkpoint for its launch (CheckpointStore below), restores
// it (calling `load`) and asks the agent for a lease (Init). Next() counts the step just finished, reports progress every few seconds
// (Progress, which also brings lease extensions), and at the lease's end saves a checkpoint
// (calling `save`), tells the agent (Done) and either goes on under a new lease or returns
// false; at the job's total steps it saves, says Done(COMPLETE) and returns false; after
// SIGTERM it saves at the next step boundary and returns false. Only checkpointed steps are
// ever reported as done: steps lost with a killed process are redone, never counted twice.
//
// Without GAVEL_AGENT_URL it runs Options::total_steps (or GAVEL_TOTAL_STEPS) steps under an
// unlimited lease.
//
// Errors: AgentError (the agent refused a call or is unreachable: a job must not outlive its
// agent), CheckpointError (an inconsistent checkpoint directory, naming the file).
// Thread-safety: one GavelIterator is used by one thread. Installing the SIGTERM handler
// (Options::handle_sigterm) replaces the process's handler.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace gavel::iterator {

// The agent refused a call (`status` = its HTTP status) or could not be reached (status 0).
class AgentError : public std::runtime_error {
 public:
  AgentError(const std::string& method, int status, const std::string& message)
      : std::runtime_error("gavel agent " + method + ": " +
                           (status != 0 ? "HTTP " + std::to_string(status) + ": " : std::string()) +
                           message),
        status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Permission to train: stop at step `stop_at_step` (absolute) or after `max_duration_s`
// seconds of training, whichever comes first. A gang lease (step_bound_only, multi-GPU jobs)
// stops at stop_at_step only: every rank gets the same step, so all ranks stop together.
struct Lease {
  std::uint64_t stop_at_step = 0;
  double max_duration_s = 0.0;
  std::int64_t round_end_unix_ms = 0;
  bool step_bound_only = false;
  friend bool operator==(const Lease&, const Lease&) = default;
};

using Environment = std::map<std::string, std::string>;

namespace internal {

// proto3 JSON writes 64-bit integers as strings and non-finite doubles as "Infinity" etc.
inline std::uint64_t AsUint(const nlohmann::json& value, const char* field) {
  if (value.is_number_unsigned()) return value.get<std::uint64_t>();
  if (value.is_number_integer() && value.get<std::int64_t>() >= 0)
    return static_cast<std::uint64_t>(value.get<std::int64_t>());
  if (value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos)
      return std::stoull(text);
  }
  if (value.is_null()) return 0;
  throw AgentError("response", 0,
                   std::string("field ") + field + ": not an unsigned integer: " + value.dump());
}

inline double AsDouble(const nlohmann::json& value, const char* field) {
  if (value.is_number()) return value.get<double>();
  if (value.is_null()) return 0.0;
  if (value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    if (text == "Infinity") return std::numeric_limits<double>::infinity();
    if (text == "-Infinity") return -std::numeric_limits<double>::infinity();
    if (text == "NaN") return std::numeric_limits<double>::quiet_NaN();
  }
  throw AgentError("response", 0,
                   std::string("field ") + field + ": not a number: " + value.dump());
}

inline Lease LeaseFromJson(const nlohmann::json& value) {
  Lease lease;
  if (!value.is_object()) return lease;
  lease.stop_at_step = AsUint(value.value("stopAtStep", nlohmann::json()), "lease.stopAtStep");
  lease.max_duration_s =
      AsDouble(value.value("maxDurationS", nlohmann::json()), "lease.maxDurationS");
  lease.round_end_unix_ms = static_cast<std::int64_t>(
      AsUint(value.value("roundEndUnixMs", nlohmann::json()), "lease.roundEndUnixMs"));
  const nlohmann::json gang = value.value("stepBoundOnly", nlohmann::json());
  lease.step_bound_only = gang.is_boolean() && gang.get<bool>();
  return lease;
}

// One POST of proto3 JSON to the agent ("http://127.0.0.1:PORT"); returns the response body.
inline nlohmann::json Post(const std::string& url, const std::string& method,
                           const nlohmann::json& body, const std::string& token, double timeout_s) {
  static const std::regex kUrl(R"(^http://(127\.[0-9.]+|localhost|\[::1\]):([0-9]{1,5})/?$)");
  std::smatch match;
  if (!std::regex_match(url, match, kUrl)) {
    throw AgentError(method, 0, "GAVEL_AGENT_URL '" + url + "' is not http://<loopback>:<port>");
  }
  const bool v6 = match[1] == "[::1]";
  const int port = std::stoi(match[2]);
  const int fd = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw AgentError(method, 0, "socket failed");
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  int connected = -1;
  if (v6) {
    sockaddr_in6 addr{};
    addr.sin6_family = AF_INET6;
    addr.sin6_addr = in6addr_loopback;
    addr.sin6_port = htons(static_cast<std::uint16_t>(port));
    connected = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  } else {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    connected = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  }
  if (connected != 0) throw AgentError(method, 0, "unreachable at " + url);

  const std::string payload = body.dump();
  std::string request =
      "POST /gavel.wire.Iterator/" + method + " HTTP/1.1\r\nHost: localhost\r\n" +
      "Content-Type: application/json\r\nConnection: close\r\n" +
      (token.empty() ? std::string() : "Authorization: Bearer " + token + "\r\n") +
      "Content-Length: " + std::to_string(payload.size()) + "\r\n\r\n" + payload;
  for (std::size_t sent = 0; sent < request.size();) {
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) throw AgentError(method, 0, "connection lost while sending");
    sent += static_cast<std::size_t>(n);
  }
  std::string response;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  char buffer[4096];
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      throw AgentError(method, 0, "no answer within " + std::to_string(timeout_s) + " s");
    pollfd p{fd, POLLIN, 0};
    const int ready =
        ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left.count(), 1 << 30)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the agent closes after the response (Connection: close)
    response.append(buffer, static_cast<std::size_t>(n));
  }
  const std::size_t head_end = response.find("\r\n\r\n");
  if (response.rfind("HTTP/1.", 0) != 0 || head_end == std::string::npos || response.size() < 12) {
    throw AgentError(method, 0, "malformed HTTP response");
  }
  const int status = std::atoi(response.substr(9, 3).c_str());
  nlohmann::json parsed = nlohmann::json::parse(response.substr(head_end + 4), nullptr, false);
  if (status != 200) {
    const std::string message =
        parsed.is_object() && parsed.contains("error") && parsed["error"].is_string()
            ? parsed["error"].get<std::string>()
            : response.substr(head_end + 4);
    throw AgentError(method, status, message);
  }
  if (parsed.is_discarded()) throw AgentError(method, 0, "the response is not JSON");
  return parsed;
}

inline void SyncPath(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

inline volatile std::sig_atomic_t g_sigterm = 0;
inline void OnSigterm(int) { g_sigterm = 1; }

}  // namespace internal

// A job's checkpoints (docs/checkpointing.md, "The layout on disk"), the layout
// python/gavel_iterator.py uses:
//   <root>/attempt-<N>/LATEST              the current checkpoint of launch N, e.g. "ckpt-000000000120"
//   <root>/attempt-<N>/ckpt-000000000120/  the user's files + gavel_iterator.json {"steps": 120, ...}
//   <root>/LATEST, <root>/ckpt-*/          the same for runs outside Gavel (no GAVEL_ATTEMPT)
// A checkpoint becomes current only by the atomic replacement of a LATEST after its files were
// synced, so a process killed at any moment leaves the old or the new one current.
//
// The fence: every launch of a job (GAVEL_ATTEMPT, numbered by the scheduler) writes only in
// its own namespace, attempt-<N>. At start it claims the job's checkpoint: it moves (one
// rename) the current checkpoint of the latest earlier launch that has one into its own
// namespace, then removes the earlier launches' namespaces. A process of an earlier launch still running (the
// scheduler gave its job to a new launch: a straggler, a host declared dead that was not) can
// write on in its own namespace, but no later launch reads it once claimed, and the scheduler
// credits reports of the current launch only; so it can neither overwrite nor shrink the
// checkpoint the job's count rests on.
class CheckpointStore {
 public:
  // `root` is the job's directory. With `attempt`, this process writes in attempt-<N>; without,
  // in `root` itself (runs outside Gavel) and Latest() reads the newest checkpoint of the job.
  explicit CheckpointStore(std::filesystem::path root,
                           std::optional<std::uint64_t> attempt = std::nullopt)
      : root_(std::move(root)), attempt_(attempt), dir_(attempt ? NamespaceOf(root_, *attempt) : root_) {}

  static std::filesystem::path NamespaceOf(const std::filesystem::path& root, std::uint64_t attempt) {
    return root / ("attempt-" + std::to_string(attempt));
  }

  // {directory, steps} of the current checkpoint; nullopt when there is none. A launch's store
  // reads its own namespace; a store without attempt reads the newest of the whole job.
  std::optional<std::pair<std::string, std::uint64_t>> Latest() const {
    if (attempt_) return CurrentIn(dir_);
    return NewestBelow(std::numeric_limits<std::uint64_t>::max());
  }

  // A launch's start (rank 0): makes the job's checkpoint (the latest earlier launch's) this
  // launch's own (see the class comment), removes earlier launches' namespaces and returns
  // Latest(). Moves nothing when this launch already holds one.
  std::optional<std::pair<std::string, std::uint64_t>> Claim() {
    namespace fs = std::filesystem;
    if (!attempt_) return Latest();
    for (int tries = 0; tries < 20; ++tries) {
      if (CurrentIn(dir_)) break;  // claimed already
      const auto best = NewestBelow(*attempt_);
      if (!best) break;
      fs::create_directories(dir_);
      const fs::path target = dir_ / fs::path(best->first).filename();
      std::error_code ec;
      fs::remove_all(target, ec);
      fs::rename(best->first, target, ec);
      if (ec) continue;  // claimed or cleaned up meanwhile by another launch: look again
      Point(target.filename().string());
      break;
    }
    for (const Namespace& ns : Namespaces(*attempt_)) Remove(ns);
    return CurrentIn(dir_);
  }

  // Writes a checkpoint of `steps` through save(directory) and makes it current.
  std::string Save(std::uint64_t steps, const std::function<void(const std::string&)>& save,
                   const nlohmann::json& extra = nlohmann::json::object()) {
    namespace fs = std::filesystem;
    fs::create_directories(dir_);
    const fs::path staging =
        dir_ / (".staging-" + std::to_string(::getpid()) + "-" + std::to_string(steps));
    fs::remove_all(staging);
    fs::create_directories(staging);
    save(staging.string());
    nlohmann::json meta = extra;
    meta["format"] = 1;
    meta["steps"] = steps;
    if (attempt_) meta["attempt"] = *attempt_;
    meta["saved_unix"] =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    std::ofstream(staging / "gavel_iterator.json") << meta.dump();
    for (const auto& entry : fs::recursive_directory_iterator(staging))
      internal::SyncPath(entry.path());
    internal::SyncPath(staging);
    char name[64];
    std::snprintf(name, sizeof(name), "ckpt-%012llu", static_cast<unsigned long long>(steps));
    const fs::path final_dir = dir_ / name;
    fs::remove_all(
        final_dir);  // not current (LATEST names an older one): a dead process's leftover
    fs::rename(staging, final_dir);
    Point(name);
    for (const auto& entry : fs::directory_iterator(dir_)) {
      const std::string entry_name = entry.path().filename().string();
      if (entry_name != name &&
          (entry_name.rfind("ckpt-", 0) == 0 || entry_name.rfind(".staging-", 0) == 0)) {
        std::error_code ec;
        fs::remove_all(entry.path(), ec);
      }
    }
    return final_dir.string();
  }

  // Waits (at most timeout_s) until the current checkpoint holds `steps` or more than
  // `newer_than` (rank 0 may have stopped a few steps earlier); returns what it holds.
  std::uint64_t WaitFor(std::uint64_t steps, std::uint64_t newer_than, double timeout_s) const {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (true) {
      const auto latest = Latest();
      const std::uint64_t held = latest ? latest->second : 0;
      if (held >= steps || held > newer_than || std::chrono::steady_clock::now() >= deadline)
        return held;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  // Ranks other than 0: waits (at most timeout_s) until rank 0 has claimed the launch's
  // checkpoint (Claim, then MarkClaimed), so that every rank loads the same one; false on
  // timeout.
  bool WaitForClaim(double timeout_s) const {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (!std::filesystem::exists(dir_ / "CLAIMED")) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return true;
  }
  void MarkClaimed() {
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "CLAIMED") << "claimed\n";
  }

 private:
  struct Namespace {
    std::filesystem::path path;
    std::optional<std::uint64_t> attempt;  // nullopt: the root's own (runs outside Gavel)
  };

  // The current checkpoint of the latest launch below `below` that has one (the root's own
  // last): the job's current line of checkpoints. An earlier launch may hold more steps (a
  // process that ran on after it was replaced), but the scheduler never credited those.
  std::optional<std::pair<std::string, std::uint64_t>> NewestBelow(std::uint64_t below) const {
    std::vector<Namespace> namespaces = Namespaces(below);
    const auto order = [](const Namespace& n) { return n.attempt ? *n.attempt + 1 : 0; };
    std::sort(namespaces.begin(), namespaces.end(),
              [&](const Namespace& a, const Namespace& b) { return order(a) > order(b); });
    for (std::size_t k = 0; k < namespaces.size(); ++k) {
      const Namespace& ns = namespaces[k];
      if (auto current = CurrentIn(ns.path, /*dangling_is_empty=*/ns.attempt.has_value())) {
        return current;
      }
      // A LATEST whose checkpoint is gone: a later launch claimed it. If that launch has moved
      // it but not yet made it current (killed or slow between its rename and its LATEST), it
      // is in that launch's namespace under the same name: take it from there, for removing
      // that namespace would lose the job's checkpoint.
      if (!ns.attempt) continue;
      const std::optional<std::string> name = PointedName(ns.path);
      if (!name) continue;
      for (std::size_t later = 0; later < k; ++later) {
        if (auto moved = CheckpointNamed(namespaces[later].path, *name)) return moved;
      }
    }
    return std::nullopt;
  }

  // The name a namespace's LATEST holds; nullopt without one.
  static std::optional<std::string> PointedName(const std::filesystem::path& dir) {
    std::ifstream in(dir / "LATEST");
    std::string name;
    if (!(in >> name)) return std::nullopt;
    return name;
  }

  // {directory, steps} of the checkpoint `name` in `dir` when it is there whole (its
  // gavel_iterator.json readable, its steps those of its name); nullopt otherwise.
  static std::optional<std::pair<std::string, std::uint64_t>> CheckpointNamed(
      const std::filesystem::path& dir, const std::string& name) {
    static const std::regex kName(R"(^ckpt-([0-9]{12,})$)");
    std::smatch match;
    if (!std::regex_match(name, match, kName)) return std::nullopt;
    std::ifstream meta_in(dir / name / "gavel_iterator.json");
    const nlohmann::json meta = nlohmann::json::parse(meta_in, nullptr, false);
    if (!meta_in || meta.is_discarded() || !meta.is_object()) return std::nullopt;
    const auto steps = meta.find("steps");
    if (steps == meta.end() || !steps->is_number_unsigned() ||
        steps->get<std::uint64_t>() != std::stoull(match[1].str())) {
      return std::nullopt;
    }
    return std::make_pair((dir / name).string(), steps->get<std::uint64_t>());
  }

  // The root's own checkpoints and every attempt-<N> below `below`.
  std::vector<Namespace> Namespaces(std::uint64_t below) const {
    namespace fs = std::filesystem;
    std::vector<Namespace> out{{root_, std::nullopt}};
    static const std::regex kAttempt(R"(^attempt-([0-9]{1,19})$)");
    std::error_code ec;
    for (fs::directory_iterator it(root_, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      std::smatch match;
      if (!std::regex_match(name, match, kAttempt)) continue;
      const std::uint64_t n = std::stoull(match[1].str());
      if (n < below) out.push_back({it->path(), n});
    }
    return out;
  }

  void Remove(const Namespace& ns) const {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (ns.attempt) {
      fs::remove_all(ns.path, ec);
      return;
    }
    for (fs::directory_iterator it(ns.path, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name == "LATEST" || name.rfind("ckpt-", 0) == 0 || name.rfind(".staging-", 0) == 0 ||
          name.rfind(".LATEST.tmp-", 0) == 0) {
        std::error_code ignored;
        fs::remove_all(it->path(), ignored);
      }
    }
  }

  // Makes `name` (a checkpoint directory in this namespace) current.
  void Point(const std::string& name) const {
    namespace fs = std::filesystem;
    const fs::path temporary = dir_ / (".LATEST.tmp-" + std::to_string(::getpid()));
    std::ofstream(temporary) << name << "\n";
    internal::SyncPath(temporary);
    fs::rename(temporary, dir_ / "LATEST");
    internal::SyncPath(dir_);
  }

  // The current checkpoint of one namespace. `dangling_is_empty`: a LATEST whose checkpoint is
  // gone counts as none (an earlier launch's, claimed by a later one) instead of an error.
  static std::optional<std::pair<std::string, std::uint64_t>> CurrentIn(
      const std::filesystem::path& dir, bool dangling_is_empty = false) {
    namespace fs = std::filesystem;
    const fs::path pointer = dir / "LATEST";
    std::ifstream in(pointer);
    if (!in) return std::nullopt;
    std::string name;
    in >> name;
    static const std::regex kName(R"(^ckpt-([0-9]{12,})$)");
    std::smatch match;
    if (!std::regex_match(name, match, kName)) {
      throw CheckpointError(pointer.string() + ": '" + name +
                            "' is not a checkpoint name (ckpt-<12+ digits>)");
    }
    if (dangling_is_empty && !fs::exists(dir / name)) return std::nullopt;
    const fs::path meta_path = dir / name / "gavel_iterator.json";
    std::ifstream meta_in(meta_path);
    const nlohmann::json meta = nlohmann::json::parse(meta_in, nullptr, false);
    if (!meta_in || meta.is_discarded() || !meta.is_object()) {
      if (dangling_is_empty && !fs::exists(dir / name)) return std::nullopt;
      throw CheckpointError(meta_path.string() + ": unreadable; " + pointer.string() +
                            " names it as current");
    }
    const auto steps = meta.find("steps");
    if (steps == meta.end() || !steps->is_number_unsigned() ||
        steps->get<std::uint64_t>() != std::stoull(match[1].str())) {
      throw CheckpointError(meta_path.string() + ": field steps does not match the directory name");
    }
    return std::make_pair((dir / name).string(), steps->get<std::uint64_t>());
  }

  std::filesystem::path root_;
  std::optional<std::uint64_t> attempt_;
  std::filesystem::path dir_;
};

class GavelIterator {
 public:
  using CheckpointFn = std::function<void(const std::string& directory)>;

  struct Options {
    std::optional<Environment> env;             // unset = the process environment
    std::optional<std::uint64_t> total_steps;   // outside Gavel only
    std::optional<std::string> checkpoint_dir;  // unset = GAVEL_CHECKPOINT_DIR
    double progress_interval_s = 2.0;
    std::function<double()> clock;                // seconds, monotonic; unset = steady_clock
    std::function<void(const std::string&)> log;  // unset = stderr
    bool handle_sigterm = true;
  };

  GavelIterator(CheckpointFn save, CheckpointFn load)
      : GavelIterator(std::move(save), std::move(load), Options()) {}

  GavelIterator(CheckpointFn save, CheckpointFn load, Options options)
      : save_(std::move(save)), load_(std::move(load)), options_(std::move(options)) {
    if (!options_.clock) {
      options_.clock = [] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
            .count();
      };
    }
    const Environment env = options_.env ? *options_.env : ProcessEnvironment();
    auto get = [&](const char* key, const std::string& fallback = "") {
      const auto it = env.find(key);
      return it == env.end() ? fallback : it->second;
    };
    url_ = get("GAVEL_AGENT_URL");
    token_ = get("GAVEL_TOKEN");
    job_id_ = std::stoull(get("GAVEL_JOB_ID", "0"));
    worker_id_ = std::stoull(get("GAVEL_WORKER_ID", "0"));
    round_id_ = std::stoull(get("GAVEL_ROUND_ID", "0"));
    rank_ = std::stoull(get("GAVEL_RANK", "0"));
    world_size_ = std::stoull(get("GAVEL_WORLD_SIZE", "1"));
    const std::string root =
        options_.checkpoint_dir ? *options_.checkpoint_dir : get("GAVEL_CHECKPOINT_DIR");
    const std::string attempt = get("GAVEL_ATTEMPT");
    if (!root.empty()) {
      store_.emplace(root, attempt.empty() ? std::nullopt
                                           : std::optional<std::uint64_t>(std::stoull(attempt)));
    }

    // ---- Restore (the launch's claim on the job's checkpoint; CheckpointStore) ----
    if (store_) {
      std::optional<std::pair<std::string, std::uint64_t>> latest;
      if (attempt.empty()) {
        latest = store_->Latest();  // outside Gavel: no launches to fence
      } else if (world_size_ > 1 && rank_ != 0) {
        if (!store_->WaitForClaim(120.0)) {
          throw CheckpointError(root + ": rank 0 did not claim the job's checkpoint within 120 s");
        }
        latest = store_->Latest();
      } else {
        latest = store_->Claim();
        store_->MarkClaimed();
      }
      const std::uint64_t credited = std::stoull(get("GAVEL_CHECKPOINTED_STEPS", "0"));
      if (credited > (latest ? latest->second : 0)) {
        throw CheckpointError(root + ": no checkpoint holds the " + std::to_string(credited) +
                              " steps the scheduler credited (the newest holds " +
                              std::to_string(latest ? latest->second : 0) +
                              "): is the checkpoint directory shared by every agent?");
      }
      if (latest) {
        load_(latest->first);
        steps_ = latest->second;
        Log("restored checkpoint " + latest->first + " (step " + std::to_string(steps_) + ")");
      }
    }
    checkpointed_ = steps_;

    // ---- Lease ----
    Lease lease;
    if (!url_.empty()) {
      const nlohmann::json response = internal::Post(url_, "Init",
                                                     {{"jobId", job_id_},
                                                      {"workerId", worker_id_},
                                                      {"roundId", round_id_},
                                                      {"restoredSteps", steps_}},
                                                     token_, 30.0);
      total_steps_ = internal::AsUint(response.value("totalSteps", nlohmann::json()), "totalSteps");
      hold_timeout_s_ =
          internal::AsDouble(response.value("holdTimeoutS", nlohmann::json()), "holdTimeoutS");
      lease = internal::LeaseFromJson(response.value("lease", nlohmann::json()));
    } else {
      total_steps_ =
          options_.total_steps ? *options_.total_steps : std::stoull(get("GAVEL_TOTAL_STEPS", "0"));
      lease = Lease{total_steps_, std::numeric_limits<double>::infinity(), 0};
    }
    AdoptLease(lease);
    if (options_.handle_sigterm) std::signal(SIGTERM, internal::OnSigterm);
  }

  // Counts the step just finished (if any) and says whether to run another.
  bool Next() {
    if (finished_) return false;
    if (outstanding_) {
      outstanding_ = false;
      ++steps_;
    }
    const double now = options_.clock();
    if (internal::g_sigterm != 0) {
      Checkpoint();
      try {
        Progress(now);
      } catch (const AgentError& error) {
        Log(std::string("could not report the final checkpoint: ") + error.what());
      }
      stopped_by_signal_ = true;
      return Finish("stopped by SIGTERM at step " + std::to_string(steps_));
    }
    if (steps_ >= total_steps_) {
      Checkpoint();
      completed_ = true;
      if (!url_.empty()) internal::Post(url_, "Done", DoneRequest("COMPLETE", now), token_, 30.0);
      return Finish("complete at step " + std::to_string(steps_));
    }
    while (LeaseReached(options_.clock())) {
      Checkpoint();
      if (url_.empty()) return Finish("lease reached at step " + std::to_string(steps_));
      const nlohmann::json response =
          internal::Post(url_, "Done", DoneRequest("LEASE_REACHED", options_.clock()), token_,
                         hold_timeout_s_ + 30.0);
      if (!response.value("continueRunning", false))
        return Finish("lease ended at step " + std::to_string(steps_));
      round_id_ = internal::AsUint(response.value("roundId", nlohmann::json()), "roundId");
      AdoptLease(internal::LeaseFromJson(response.value("lease", nlohmann::json())));
      Log("lease extended (round " + std::to_string(round_id_) + ")");
    }
    if (!url_.empty() && now >= next_progress_) Progress(now);
    if (!training_start_) training_start_ = options_.clock();
    outstanding_ = true;
    return true;
  }

  std::uint64_t steps_done() const { return steps_; }
  std::uint64_t total_steps() const { return total_steps_; }
  std::uint64_t checkpointed_steps() const { return checkpointed_; }
  const Lease& lease() const { return lease_; }
  bool completed() const { return completed_; }
  bool stopped_by_signal() const { return stopped_by_signal_; }

 private:
  static Environment ProcessEnvironment() {
    Environment env;
    for (const char* key :
         {"GAVEL_AGENT_URL", "GAVEL_TOKEN", "GAVEL_JOB_ID", "GAVEL_WORKER_ID", "GAVEL_ROUND_ID",
          "GAVEL_RANK", "GAVEL_WORLD_SIZE", "GAVEL_CHECKPOINT_DIR", "GAVEL_TOTAL_STEPS",
          "GAVEL_ATTEMPT", "GAVEL_CHECKPOINTED_STEPS"}) {
      if (const char* value = std::getenv(key)) env[key] = value;
    }
    return env;
  }

  bool LeaseReached(double now) const {
    if (steps_ >= lease_.stop_at_step) return true;
    // A gang lease ends at its step only: a rank stopping on its own clock would leave the
    // others blocked in a collective.
    return !lease_.step_bound_only && now - lease_start_ >= lease_.max_duration_s;
  }

  void AdoptLease(const Lease& lease) {
    lease_ = lease;
    lease_start_ = options_.clock();
    lease_base_steps_ = steps_;
    training_start_.reset();
    interval_ = options_.progress_interval_s;
    if (std::isfinite(lease.max_duration_s) && lease.max_duration_s > 0) {
      interval_ = std::min(interval_, std::max(0.25, lease.max_duration_s / 8.0));
    }
    next_progress_ = lease_start_ + interval_;
  }

  double TrainingSeconds(double now) const {
    return training_start_ ? std::max(0.0, now - *training_start_) : 0.0;
  }

  nlohmann::json DoneRequest(const char* reason, double now) const {
    return {{"jobId", job_id_},
            {"workerId", worker_id_},
            {"roundId", round_id_},
            {"reason", reason},
            {"checkpointedSteps", checkpointed_},
            {"stepsTrained", steps_ - lease_base_steps_},
            {"trainingSeconds", TrainingSeconds(now)}};
  }

  void Progress(double now) {
    next_progress_ = now + interval_;
    if (url_.empty()) return;
    const nlohmann::json response = internal::Post(url_, "Progress",
                                                   {{"jobId", job_id_},
                                                    {"workerId", worker_id_},
                                                    {"roundId", round_id_},
                                                    {"steps", steps_},
                                                    {"checkpointedSteps", checkpointed_},
                                                    {"trainingSeconds", TrainingSeconds(now)}},
                                                   token_, 30.0);
    const Lease lease = internal::LeaseFromJson(response.value("lease", nlohmann::json()));
    if (!(lease == lease_) && !lease_.step_bound_only) {
      AdoptLease(lease);  // a new grant: its duration counts from now
      training_start_ = now;
      Log("lease updated");
    }
  }

  void Checkpoint() {
    if (steps_ == checkpointed_) return;
    if (!store_) {
      checkpointed_ = steps_;  // outside Gavel without a directory: nothing outlives us anyway
      return;
    }
    if (world_size_ > 1 && rank_ != 0) {
      // Rank 0 saves for everyone; the others wait (bounded) for its save to land.
      checkpointed_ =
          std::min(steps_, std::max(checkpointed_, store_->WaitFor(steps_, checkpointed_, 30.0)));
      return;
    }
    const std::string directory = store_->Save(steps_, save_, {{"job_id", job_id_}});
    checkpointed_ = steps_;
    Log("checkpoint " + directory + " (step " + std::to_string(steps_) + ")");
  }

  bool Finish(const std::string& why) {
    finished_ = true;
    Log(why);
    return false;
  }

  void Log(const std::string& message) const {
    if (options_.log) {
      options_.log(message);
    } else {
      std::cerr << "[gavel_iterator] " << message << std::endl;
    }
  }

  CheckpointFn save_;
  CheckpointFn load_;
  Options options_;
  std::string url_;
  std::string token_;
  std::uint64_t job_id_ = 0;
  std::uint64_t worker_id_ = 0;
  std::uint64_t round_id_ = 0;
  std::uint64_t rank_ = 0;
  std::uint64_t world_size_ = 1;
  std::optional<CheckpointStore> store_;
  std::uint64_t steps_ = 0;
  std::uint64_t checkpointed_ = 0;
  std::uint64_t total_steps_ = 0;
  double hold_timeout_s_ = 0.0;
  Lease lease_;
  double lease_start_ = 0.0;
  std::uint64_t lease_base_steps_ = 0;
  std::optional<double> training_start_;
  double interval_ = 2.0;
  double next_progress_ = 0.0;
  bool outstanding_ = false;
  bool finished_ = false;
  bool completed_ = false;
  bool stopped_by_signal_ = false;
};

}  // namespace gavel::iterator
