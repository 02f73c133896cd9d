// platform/net: the socket calls of ebb serve's connection front end (server/http_front) and of
// the CLI's port probe: non-blocking reads and writes on a connected socket, its addresses, a
// poll set over many sockets with a wakeup event, and whether a TCP port can be listened on.
// Part of the platform seam (band 0, docs/architecture.md "The platform seam"); the event loop's
// logic stays in server/. A socket is the integer handle httplib hands out (its socket_t).
// Nothing here throws: failures come back as values (errno-style codes, false, -1).
// Thread-safety: calls on one socket from several threads are the system's (a send and a recv
// may overlap); the PollSet and the WakeEvent's Open/Close are not thread-safe, Signal is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ebb::platform {

// A read or a write: `bytes` > 0 moved that many; 0 with `error` 0: the peer closed (a read) or
// nothing moved; `error` != 0: the errno (EAGAIN/EWOULDBLOCK: nothing there without waiting,
// EINTR: interrupted).
struct SocketResult {
  int64_t bytes = 0;
  int error = 0;
};

// Sends without waiting and without SIGPIPE (the peer gone is an error, EPIPE).
SocketResult SendNow(int socket, const void* data, size_t size);
// Sends, waiting while the socket buffer is full, without SIGPIPE.
SocketResult Send(int socket, const void* data, size_t size);
// Receives what the socket has, without waiting.
SocketResult ReceiveNow(int socket, void* data, size_t size);

// Waits up to `timeout_ms` for the socket to take a write: false on timeout, error or hang-up.
bool WaitWritable(int socket, int timeout_ms);
// Whether the peer has closed: the socket is readable with nothing to read (bytes still waiting,
// e.g. a pipelined request, mean it is open).
bool PeerClosed(int socket);
// Whether bytes wait in the socket's receive buffer.
bool BytesPending(int socket);

// The numeric address ("127.0.0.1", "::1") and port of the peer or of this end; false (ip "",
// port 0) when the socket has none (not connected, not IP).
bool PeerAddress(int socket, std::string& ip, int& port);
bool LocalAddress(int socket, std::string& ip, int& port);

enum class Shutdown { kWrite, kBoth };
// Ends the connection's writes (kWrite: the peer reads EOF after what was sent) or both ways;
// a thread blocked on the socket returns.
void ShutdownSocket(int socket, Shutdown how);
void CloseSocket(int socket);

// Lets a new listening socket bind an address whose old connections linger (SO_REUSEADDR). A
// live listener still makes the bind fail.
void SetReuseAddress(int socket);
// Raises a listening socket's backlog to the system's maximum (SOMAXCONN).
void RaiseListenBacklog(int socket);

// Whether this process could listen on host:port now: binds a socket with SO_REUSEADDR (as ebb
// serve does) to each address `host` resolves to, and closes it.
// Whether `name` is a numeric IPv4 or IPv6 address (not a host name to resolve).
bool IsNumericAddress(const std::string& name);

struct ListenProbe {
  bool ok = false;
  std::string resolve_error;  // non-empty: `host` did not resolve (the resolver's words)
  int error = 0;              // else the errno of the last address that failed; 0: no address
};
ListenProbe ProbeListen(const std::string& host, int port);

// An event that wakes a PollSet wait from another thread (Linux: an eventfd). Signals before
// the wait are kept until Drain.
class WakeEvent {
 public:
  WakeEvent() = default;
  ~WakeEvent();  // closes
  WakeEvent(const WakeEvent&) = delete;
  WakeEvent& operator=(const WakeEvent&) = delete;

  bool Open();   // false when the system refuses (the event is then never signalled)
  void Close();  // idempotent
  bool is_open() const { return fd_ >= 0; }
  void Signal();  // no-op when closed
  void Drain();   // clears the signals received so far
  int handle() const { return fd_; }

 private:
  int fd_ = -1;
};

// The sockets (and a WakeEvent) one wait watches for reading, by index in the order added.
class PollSet {
 public:
  void Clear() { entries_.clear(); }
  void AddReadable(int handle) { entries_.push_back(Entry{handle, kIn, 0}); }
  void AddWake(const WakeEvent& e) { AddReadable(e.handle()); }
  size_t size() const { return entries_.size(); }
  // Waits up to `timeout_ms` for any entry to be ready. Returns how many are, 0 on timeout or
  // when a signal interrupted the wait, -1 on another failure.
  int Wait(int timeout_ms);
  bool Ready(size_t i) const { return entries_[i].revents != 0; }  // anything to report
  bool Readable(size_t i) const { return (entries_[i].revents & kIn) != 0; }
  bool Failed(size_t i) const;  // an error or an invalid handle

 private:
  static constexpr short kIn = 0x001;  // the system's POLLIN (checked where it is implemented)
  // Laid out as the system's pollfd (checked where it is implemented), so Wait passes it as is.
  struct Entry {
    int fd;
    short events;
    short revents;
  };
  std::vector<Entry> entries_;
};

}  // namespace ebb::platform
