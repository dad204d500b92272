#include "gavel/rpc/listener.h"

#include "gavel/rpc/tls_front.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/server_posix.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace gavel::rpc {
namespace {

using Clock = std::chrono::steady_clock;

void CloseFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// A bound, listening socket for `address`; errors say why.
Result<int> Bind(const HostPort& address) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(address.port);
  if (const int rc = ::getaddrinfo(address.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return Status::InvalidArgument(address.ToString() + ": " + ::gai_strerror(rc));
  }
  std::string reason = "no address";
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) {
      reason = std::strerror(errno);
      continue;
    }
    // SO_REUSEADDR only: a restart may bind over TIME_WAIT; without SO_REUSEPORT a second
    // listener on the same address is refused by the kernel.
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0) {
      reason = errno == EADDRINUSE ? "the address is in use (another gavel serve?)"
                                   : std::strerror(errno);
      CloseFd(fd);
    }
  }
  ::freeaddrinfo(found);
  if (fd < 0) return Status::IoError(address.ToString() + ": cannot listen there: " + reason);
  return fd;
}

int PortOf(int fd) {
  sockaddr_storage bound{};
  socklen_t size = sizeof bound;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &size) != 0) return 0;
  if (bound.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&bound)->sin6_port);
  }
  return ntohs(reinterpret_cast<const sockaddr_in*>(&bound)->sin_port);
}

}  // namespace

Result<std::unique_ptr<GuardedListener>> GuardedListener::Start(const HostPort& address,
                                                                grpc::Server* server,
                                                                ListenerOptions options) {
  std::unique_ptr<GuardedListener> listener(new GuardedListener());
  listener->server_ = server;
  listener->options_ = options;
  GAVEL_ASSIGN_OR_RETURN(listener->listen_fd_, Bind(address));
  listener->port_ = PortOf(listener->listen_fd_);
  rlimit limit{};
  listener->fd_limit_ =
      ::getrlimit(RLIMIT_NOFILE, &limit) == 0 ? static_cast<std::uint64_t>(limit.rlim_cur) : 1024;
  listener->wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  listener->epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (listener->wake_fd_ < 0 || listener->epoll_fd_ < 0) {
    return Status::IoError("cannot start the accept loop: " + std::string(std::strerror(errno)));
  }
  for (int fd : {listener->listen_fd_, listener->wake_fd_}) {
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.fd = fd;
    ::epoll_ctl(listener->epoll_fd_, EPOLL_CTL_ADD, fd, &event);
  }
  GuardedListener* self = listener.get();
  listener->thread_ = std::thread([self] { self->Run(); });
  return listener;
}

GuardedListener::~GuardedListener() {
  Stop();
  options_.tls_front.reset();  // ends the TLS relays (and waits for them)
}

void GuardedListener::Stop() {
  if (options_.tls_front) options_.tls_front->StopAdopting();
  if (!thread_.joinable()) return;
  stop_.store(true);
  const std::uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
  thread_.join();
  CloseFd(listen_fd_);
  CloseFd(wake_fd_);
  CloseFd(epoll_fd_);
}

void GuardedListener::Run() {
  // Connections accepted and not yet heard from, by descriptor; `queue` holds their
  // deadlines in accept order (the timeout is constant), with a generation so that an entry
  // of a descriptor since closed and reused is recognised as stale.
  struct Pending {
    std::uint64_t generation;
  };
  std::map<int, Pending> pending;
  std::deque<std::tuple<Clock::time_point, int, std::uint64_t>> queue;
  std::uint64_t generation = 0;
  const auto timeout = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(options_.first_bytes_timeout.value()));
  const auto drop = [&](int fd) {
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
    pending.erase(fd);
  };

  // Closes the oldest silent connection when `due(its deadline)`, skipping stale entries and
  // counting it in `counter`; false when there is none to close.
  const auto close_oldest = [&](auto due, std::atomic<std::uint64_t>& counter) {
    while (!queue.empty() && due(std::get<0>(queue.front()))) {
      const auto [deadline, fd, gen] = queue.front();
      queue.pop_front();
      const auto it = pending.find(fd);
      if (it == pending.end() || it->second.generation != gen) continue;
      drop(fd);
      ::close(fd);
      counter.fetch_add(1);
      return true;
    }
    return false;
  };
  // Short of descriptors, the oldest silent connection makes room for the newest: a client
  // that means business speaks within milliseconds and is handed over long before its turn,
  // so a flood of silent connections only ever evicts itself.
  const auto evict_oldest = [&] {
    return close_oldest([](Clock::time_point) { return true; }, evicted_);
  };

  std::vector<epoll_event> events(256);
  while (!stop_.load()) {
    int wait_ms = 1000;
    if (!queue.empty()) {
      const auto left = std::get<0>(queue.front()) - Clock::now();
      wait_ms = static_cast<int>(std::clamp<std::int64_t>(
          std::chrono::duration_cast<std::chrono::milliseconds>(left).count() + 1, 0, 1000));
    }
    const int n = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), wait_ms);
    bool out_of_descriptors = false;
    for (int i = 0; i < n; ++i) {
      const int fd = events[static_cast<std::size_t>(i)].data.fd;
      if (fd == wake_fd_) continue;
      if (fd != listen_fd_) {
        // The client spoke (or hung up): gRPC takes it from here, preface still unread.
        const bool readable = (events[static_cast<std::size_t>(i)].events & EPOLLIN) != 0;
        drop(fd);
        if (readable && options_.tls_front) {
          options_.tls_front->Adopt(fd, server_);
        } else if (readable) {
          grpc::AddInsecureChannelFromFd(server_, fd);
        } else {
          ::close(fd);
        }
        continue;
      }
      while (true) {
        int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (client < 0) {
          if (errno == EINTR || errno == ECONNABORTED) continue;
          if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
            out_of_descriptors = true;
          }
          break;  // EAGAIN: accepted everything waiting
        }
        // Descriptors are handed out lowest first, so the new one's number counts those in
        // use; the table is kept compact (below) for that to stay true.
        if (static_cast<std::uint64_t>(client) + static_cast<std::uint64_t>(options_.reserve) >=
            fd_limit_) {
          if (!evict_oldest()) {
            ::close(client);  // every descriptor serves a connection that spoke: shed this one
            refused_.fetch_add(1);
            continue;
          }
          // Move it into the hole the eviction left, so that the next accept's number still
          // counts the descriptors in use.
          const int lower = ::fcntl(client, F_DUPFD_CLOEXEC, 0);
          if (lower >= 0 && lower < client) {
            ::close(client);
            client = lower;
          } else if (lower >= 0) {
            ::close(lower);
          }
        }
        const int one = 1;
        ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        epoll_event event{};
        event.events = EPOLLIN | EPOLLRDHUP;
        event.data.fd = client;
        ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, client, &event);
        pending[client] = Pending{++generation};
        queue.emplace_back(Clock::now() + timeout, client, generation);
      }
    }
    // Silent connections past their deadline are closed.
    const auto now = Clock::now();
    while (close_oldest([now](Clock::time_point deadline) { return deadline <= now; },
                        timed_out_)) {
    }
    // Out of descriptors: the connection waits in the backlog; try again in a moment rather
    // than spin on a listening socket that stays readable.
    if (out_of_descriptors) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (const auto& [fd, unused] : pending) ::close(fd);
}

}  // namespace gavel::rpc
