#pragma once
// The dashboard's HTTP server on 127.0.0.1: GET / (the page) and GET /data.json (the store's
// JSON from ?rows=SEQ&decisions=ID on). Its threads are its own and named grain-dash-*, so
// that their CPU time is counted (/dashboard/time/cpu) and visible in top -H. Clients that
// connect and send nothing, or half a request, hold no thread and are closed after a deadline
// (gate.hpp); stop() is immediate whatever the clients do.
#include <cstdint>
#include <memory>
#include <string>

namespace grain::dashboard::detail {

class store;

class server {
 public:
  explicit server(const store& s);
  ~server();
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  // Bind 127.0.0.1:port (0: a port the system chooses). Returns an empty string on success,
  // else why it failed (the port is in use, ...).
  std::string bind(int port);
  void start();  // serve on a thread of its own
  void stop();   // stop serving, join the threads
  int port() const noexcept;
  // CPU time of the server's threads so far, and requests answered.
  std::uint64_t cpu_ns() const;
  std::uint64_t requests() const noexcept;

  struct impl;

 private:
  std::unique_ptr<impl> impl_;
};

}  // namespace grain::dashboard::detail
