#pragma once
// The dashboard's front door: the listening socket, and every connection until its request has
// arrived whole. Connections wait in one poll set on the accept thread, not on an HTTP thread,
// so an idle connection or a request sent halfway (a browser's preconnect, a stalled or hostile
// client) costs a slot in that set and starves nobody. A waiting connection is closed when its
// request has not arrived within request_deadline of connecting, when more than max_waiting
// wait (the oldest goes), and at stop(); a request is whole at the end of its header block
// (the dashboard serves GET only), or at max_head_bytes, which httplib then refuses.
#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

namespace grain::dashboard::detail {

class gate {
 public:
  static constexpr std::chrono::milliseconds request_deadline{5000};
  static constexpr std::size_t max_waiting = 64;
  static constexpr std::size_t max_head_bytes = 16 * 1024;

  gate();
  ~gate();
  gate(const gate&) = delete;
  gate& operator=(const gate&) = delete;

  // Listen on 127.0.0.1:port (0: a port the system chooses). Returns an empty string on
  // success, else why not.
  std::string listen(int port);
  int port() const noexcept { return port_; }

  // On the calling thread until stop(): each connection whose request has arrived goes to
  // `ready` with the bytes read so far; `ready` owns the socket from then on. Returns having
  // closed every connection it still held.
  void run(const std::function<void(int fd, std::string head)>& ready);
  // From any thread, before or during run().
  void stop() noexcept;

 private:
  int listen_fd_ = -1;
  int wake_fd_ = -1;
  int port_ = 0;
};

}  // namespace grain::dashboard::detail
