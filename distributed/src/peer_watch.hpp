#pragma once
// Noticing that another rank died. MPI (without ULFM, which Debian's Open MPI 4.1 does not
// enable) never says so: a call to a dead rank just waits. mpirun notices and ends the job a
// second or two later, but the futures waiting on the dead rank would never learn why. The
// watch knows every rank's process (pid, start time, host; exchanged once when the job starts)
// and looks at the ranks on its own host every period through /proc: a process that is gone,
// a zombie, or another process under the same pid is dead. Ranks on other hosts are not
// watched (that needs heartbeats; mpirun still ends the job).
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace grain::distributed {

// One rank's process, as the ranks exchange it at start-up (transport::identities()).
struct process_identity {
  std::uint64_t pid = 0;
  std::uint64_t start_ticks = 0;  // /proc/PID/stat field 22: tells a reused pid apart
  char host[64] = {};
  // Not the process's but its program's: the fingerprint of its action table
  // (detail::freeze_wire_indices), which the ranks compare before they send compact parcels.
  std::uint64_t actions = 0;
};

// This process's identity (pid, start time, host name).
process_identity this_process();

// Whether the process is still running here: false when /proc has no such pid, when it is a
// zombie or dead, or when its start time is not the one recorded (the pid was reused).
bool process_alive(const process_identity& p);

class peer_watch {
 public:
  // on_dead(rank) runs on the watch's thread, once per rank found dead; `grace_ms` after the
  // first death, on_grace_over() runs there (unless the watch is destroyed first): the job
  // cannot go on without a rank, and the program had that long to react to the errors.
  peer_watch(std::uint32_t self, std::vector<process_identity> peers,
             std::function<void(std::uint32_t rank)> on_dead, std::function<void()> on_grace_over,
             std::uint64_t period_ms = 50, std::uint64_t grace_ms = 2000);
  ~peer_watch();
  peer_watch(const peer_watch&) = delete;
  peer_watch& operator=(const peer_watch&) = delete;

  // Ranks on this host (other than this one): those that are watched.
  const std::vector<std::uint32_t>& watched() const noexcept { return watched_; }

 private:
  void run();

  std::vector<process_identity> peers_;
  std::vector<std::uint32_t> watched_;
  std::function<void(std::uint32_t)> on_dead_;
  std::function<void()> on_grace_over_;
  std::uint64_t period_ms_, grace_ms_;
  std::mutex m_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace grain::distributed
