// Linux implementation of platform/net.h.
#include "platform/net.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>

namespace ebb::platform {
namespace {

SocketResult Result(ssize_t n) {
  SocketResult r;
  if (n < 0) {
    r.error = errno;
  } else {
    r.bytes = n;
  }
  return r;
}

template <class F>
bool SocketAddress(int fd, F f, std::string& ip, int& port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  ip.clear();
  port = 0;
  if (f(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return false;
  char text[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &a->sin_addr, text, sizeof(text));
    port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof(text));
    port = ntohs(a->sin6_port);
  } else {
    return false;
  }
  ip = text;
  return true;
}

}  // namespace

SocketResult SendNow(int socket, const void* data, size_t size) {
  return Result(::send(socket, data, size, MSG_DONTWAIT | MSG_NOSIGNAL));
}

SocketResult Send(int socket, const void* data, size_t size) {
  return Result(::send(socket, data, size, MSG_NOSIGNAL));
}

SocketResult ReceiveNow(int socket, void* data, size_t size) {
  return Result(::recv(socket, data, size, MSG_DONTWAIT));
}

bool WaitWritable(int socket, int timeout_ms) {
  pollfd p{socket, POLLOUT, 0};
  if (::poll(&p, 1, timeout_ms) <= 0) return false;
  return (p.revents & (POLLERR | POLLHUP)) == 0;
}

bool PeerClosed(int socket) {
  pollfd r{socket, POLLIN, 0};
  if (::poll(&r, 1, 0) > 0) {
    char b;
    if (::recv(socket, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0) return true;
  }
  return false;
}

bool BytesPending(int socket) {
  int n = 0;
  return ::ioctl(socket, FIONREAD, &n) == 0 && n > 0;
}

bool PeerAddress(int socket, std::string& ip, int& port) {
  return SocketAddress(socket, ::getpeername, ip, port);
}

bool LocalAddress(int socket, std::string& ip, int& port) {
  return SocketAddress(socket, ::getsockname, ip, port);
}

void ShutdownSocket(int socket, Shutdown how) {
  ::shutdown(socket, how == Shutdown::kWrite ? SHUT_WR : SHUT_RDWR);
}

void CloseSocket(int socket) { ::close(socket); }

void SetReuseAddress(int socket) {
  int yes = 1;
  setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
}

void RaiseListenBacklog(int socket) {
  if (socket >= 0) ::listen(socket, SOMAXCONN);  // a second listen() only resizes the backlog
}

ListenProbe ProbeListen(const std::string& host, int port) {
  ListenProbe out;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &res); rc != 0) {
    out.resolve_error = gai_strerror(rc);
    return out;
  }
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      out.error = errno;
      continue;
    }
    SetReuseAddress(fd);
    const bool ok = ::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 1) == 0;
    const int err = errno;
    ::close(fd);
    if (ok) {
      freeaddrinfo(res);
      out.ok = true;
      out.error = 0;
      return out;
    }
    out.error = err;
  }
  freeaddrinfo(res);
  return out;
}

WakeEvent::~WakeEvent() { Close(); }

bool WakeEvent::Open() {
  Close();
  fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  return fd_ >= 0;
}

void WakeEvent::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void WakeEvent::Signal() {
  if (fd_ < 0) return;
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(fd_, &one, sizeof(one));
}

void WakeEvent::Drain() {
  if (fd_ < 0) return;
  uint64_t v;
  [[maybe_unused]] ssize_t n = ::read(fd_, &v, sizeof(v));
}

int PollSet::Wait(int timeout_ms) {
  static_assert(sizeof(Entry) == sizeof(pollfd) && offsetof(Entry, fd) == offsetof(pollfd, fd) &&
                offsetof(Entry, events) == offsetof(pollfd, events) &&
                offsetof(Entry, revents) == offsetof(pollfd, revents));
  static_assert(kIn == POLLIN);
  for (auto& e : entries_) e.revents = 0;
  const int rc = ::poll(reinterpret_cast<pollfd*>(entries_.data()), entries_.size(), timeout_ms);
  if (rc < 0) return errno == EINTR ? 0 : -1;
  return rc;
}

bool PollSet::Failed(size_t i) const { return (entries_[i].revents & (POLLERR | POLLNVAL)) != 0; }

bool IsNumericAddress(const std::string& name) {
  unsigned char buf[16];
  return inet_pton(AF_INET, name.c_str(), buf) == 1 || inet_pton(AF_INET6, name.c_str(), buf) == 1;
}

}  // namespace ebb::platform
