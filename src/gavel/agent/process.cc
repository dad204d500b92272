#include "gavel/agent/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace gavel::agent {
namespace {

std::string ErrnoText(int error) { return std::strerror(error); }

// A file descriptor closed on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Reset(); }
  int get() const { return fd_; }
  void Reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

class PosixProcess final : public Process {
 public:
  explicit PosixProcess(pid_t pid) : pid_(pid) {}
  ~PosixProcess() override {
    if (!exit_) {
      ::kill(-pid_, SIGKILL);
      int status = 0;
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
    }
  }

  int pid() const override { return pid_; }

  void SignalGroup(int signal) override {
    // The group outlives its leader only while other members exist; once it is empty the id
    // cannot name another group (Linux does not reuse a pid still in use as a group id), so
    // ESRCH is the only possible failure and means there is nothing left to signal.
    ::kill(-pid_, signal);
  }

  std::optional<ExitStatus> PollExit() override {
    if (exit_) return exit_;
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r != pid_) return std::nullopt;
    ExitStatus exit;
    if (WIFEXITED(status)) {
      exit.code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
      exit.code = -WTERMSIG(status);
    }
    // Whatever the leader left behind in its group goes with it.
    ::kill(-pid_, SIGKILL);
    exit_ = exit;
    return exit_;
  }

 private:
  pid_t pid_;
  std::optional<ExitStatus> exit_;
};

bool IsExecutableFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// Writes an int to the status pipe and exits; only async-signal-safe calls.
[[noreturn]] void ChildFail(int pipe_fd, int error) {
  ssize_t ignored = ::write(pipe_fd, &error, sizeof(error));
  (void)ignored;
  ::_exit(127);
}

}  // namespace

std::string ExitStatus::ToString() const {
  if (code < 0) {
    const char* name = ::sigabbrev_np(-code);
    return "killed by signal " + std::to_string(-code) +
           (name ? std::string(" (SIG") + name + ")" : "");
  }
  return "exit status " + std::to_string(code);
}

Result<std::string> ResolveProgram(const std::string& name, const std::string& path_list) {
  if (name.empty()) return Status::InvalidArgument("command: argv[0] is empty");
  if (name.find('/') != std::string::npos) return name;
  std::size_t begin = 0;
  while (begin <= path_list.size()) {
    std::size_t end = path_list.find(':', begin);
    if (end == std::string::npos) end = path_list.size();
    std::string candidate = end > begin ? path_list.substr(begin, end - begin) : std::string(".");
    candidate.push_back('/');
    candidate.append(name);
    if (IsExecutableFile(candidate)) return candidate;
    begin = end + 1;
  }
  return Status::NotFound("command: '" + name + "' is not an executable on the agent's PATH");
}

Result<std::unique_ptr<Process>> PosixProcessLauncher::Launch(const LaunchSpec& spec) {
  // ---- Everything the child needs, prepared before fork ----
  if (spec.argv.empty()) return Status::InvalidArgument("command: empty argv");
  struct stat st {};
  if (::stat(spec.working_directory.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Status::NotFound("working directory '" + spec.working_directory +
                            "' does not exist or is not a directory");
  }
  std::vector<char*> argv;
  argv.reserve(spec.argv.size() + 1);
  for (const std::string& arg : spec.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  env_strings.reserve(spec.env.size());
  for (const auto& [key, value] : spec.env) env_strings.push_back(key + "=" + value);
  std::vector<char*> envp;
  envp.reserve(env_strings.size() + 1);
  for (std::string& entry : env_strings) envp.push_back(entry.data());
  envp.push_back(nullptr);

  const int log_flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC;
  Fd devnull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  Fd out(::open(spec.stdout_path.c_str(), log_flags, 0644));
  if (out.get() < 0) {
    return Status::IoError("cannot open stdout log '" + spec.stdout_path +
                           "': " + ErrnoText(errno));
  }
  Fd err(::open(spec.stderr_path.c_str(), log_flags, 0644));
  if (err.get() < 0) {
    return Status::IoError("cannot open stderr log '" + spec.stderr_path +
                           "': " + ErrnoText(errno));
  }
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return Status::IoError(std::string("pipe2: ") + ErrnoText(errno));
  }
  Fd status_read(pipe_fds[0]);
  Fd status_write(pipe_fds[1]);
  const pid_t parent = ::getpid();

  const pid_t pid = ::fork();
  if (pid < 0) return Status::IoError(std::string("fork: ") + ErrnoText(errno));
  if (pid == 0) {
    // ---- Child: async-signal-safe calls only ----
    const int fail_fd = status_write.get();
    if (::setpgid(0, 0) != 0) ChildFail(fail_fd, errno);
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) ChildFail(fail_fd, errno);
    if (::getppid() != parent) ::_exit(127);  // the agent died before prctl took effect
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (::dup2(devnull.get(), 0) < 0 || ::dup2(out.get(), 1) < 0 || ::dup2(err.get(), 2) < 0) {
      ChildFail(fail_fd, errno);
    }
    if (::chdir(spec.working_directory.c_str()) != 0) ChildFail(fail_fd, errno);
    ::execve(argv[0], argv.data(), envp.data());
    ChildFail(fail_fd, errno);
  }

  // ---- Parent ----
  // Also set the group from here, so that it exists before we return (no race with a
  // SignalGroup that comes before the child ran setpgid). EACCES after exec is harmless.
  ::setpgid(pid, pid);
  status_write.Reset();
  int child_errno = 0;
  ssize_t n = 0;
  do {
    n = ::read(status_read.get(), &child_errno, sizeof(child_errno));
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(sizeof(child_errno))) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return Status::NotFound("cannot execute '" + spec.argv[0] + "' in '" + spec.working_directory +
                            "': " + ErrnoText(child_errno));
  }
  return std::unique_ptr<Process>(std::make_unique<PosixProcess>(pid));
}

}  // namespace gavel::agent
