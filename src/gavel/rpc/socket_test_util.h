// Raw loopback sockets for the listener's tests (listener_test.cc, tls_front_test.cc): floods
// of connections that say nothing (or only a few bytes), and whether the server closed one.
// Thread-safety: free functions.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace gavel::rpc::testing {

// `n` connections to 127.0.0.1:`port`, each having sent `first_bytes` (none by default).
inline std::vector<int> LoopbackConnections(int port, int n, const std::string& first_bytes = "") {
  std::vector<int> fds;
  for (int i = 0; i < n; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    if (!first_bytes.empty()) {
      EXPECT_EQ(::write(fd, first_bytes.data(), first_bytes.size()),
                static_cast<ssize_t>(first_bytes.size()));
    }
    fds.push_back(fd);
  }
  return fds;
}

// Whether the server closed `fd` within `seconds` (end of file or a reset).
inline bool ClosedByPeer(int fd, int seconds) {
  timeval wait{seconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  char buffer[64];
  ssize_t n = 0;
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0) {
  }
  return n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
}

// The listener's `reserve` that lets only about `room` more descriptors be opened by the
// server once the test's own `clients` sockets are open (0 when the limit is too low).
inline int ReserveLeavingRoom(int clients, int room) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  const int lowest_free = ::dup(0);
  if (lowest_free < 0) return 0;
  ::close(lowest_free);
  const int reserve = static_cast<int>(limit.rlim_cur) - (lowest_free + clients + room);
  return reserve > 0 ? reserve : 0;
}

}  // namespace gavel::rpc::testing
