// ChildProcess: a program the end-to-end tests and the scale bench start (gavel serve, gavel
// worker, the CLI) in its own process group, stdout and stderr appended to files. It owns the
// process: destroying it stops it (SIGTERM, then SIGKILL after the stop grace). Movable, not
// copyable; not thread-safe (one owner).
#ifndef GAVEL_DAEMON_CHILD_PROCESS_H_
#define GAVEL_DAEMON_CHILD_PROCESS_H_

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace gavel::daemon {

class ChildProcess {
 public:
  ChildProcess() = default;
  ChildProcess(const std::vector<std::string>& argv, const std::string& out, const std::string& err,
               double stop_grace_seconds = 5.0)
      : stop_grace_seconds_(stop_grace_seconds) {
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      ::dup2(o, 1);
      ::dup2(e, 2);
      std::vector<char*> args;
      for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
  }
  ChildProcess(ChildProcess&& other) noexcept
      : pid_(std::exchange(other.pid_, -1)), stop_grace_seconds_(other.stop_grace_seconds_) {}
  ChildProcess& operator=(ChildProcess&& other) noexcept {
    Stop();
    pid_ = std::exchange(other.pid_, -1);
    stop_grace_seconds_ = other.stop_grace_seconds_;
    return *this;
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess() { Stop(); }

  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }
  // Waits for the process to exit; returns its wait status.
  int Wait() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }
  // SIGTERM, then SIGKILL after the stop grace.
  void Stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(stop_grace_seconds_);
    while (std::chrono::steady_clock::now() < deadline) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    Kill9();
  }
  void Kill9() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
  double stop_grace_seconds_ = 5.0;
};

}  // namespace gavel::daemon

#endif  // GAVEL_DAEMON_CHILD_PROCESS_H_
