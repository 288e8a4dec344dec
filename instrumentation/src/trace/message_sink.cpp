// The process's trace group and the network layer's messages on their way into the recording
// trace session (grain/instrumentation/trace_group.hpp). The session attaches itself while it
// records; a message recorded in between goes nowhere.
#include "message_sink.hpp"

#include <atomic>
#include <mutex>

#include "grain/clock.hpp"
#include "grain/instrumentation/trace_group.hpp"

namespace grain::instrumentation {

namespace {
std::atomic<trace_group*> g_group{nullptr};
// The session that records messages: checked without a lock on the network's path, used
// under g_sink_mutex (so that detach waits for a message being written).
std::atomic<trace_detail::session_core*> g_sink{nullptr};
std::mutex g_sink_mutex;

// `at`: the event's time (0: now), no earlier than the location's last record.
template <class Write>
void record(std::uint64_t at, Write&& write) noexcept {
  if (!g_sink.load(std::memory_order_acquire)) return;
  std::lock_guard lk(g_sink_mutex);
  trace_detail::session_core* s = g_sink.load(std::memory_order_relaxed);
  if (!s) return;
  std::lock_guard al(s->aux_mutex);
  try {
    write(*s, s->clamp_aux(at ? at : now_ns()));
  } catch (...) {
    // A message that cannot be recorded is dropped; the network goes on.
  }
}
}  // namespace

void set_trace_group(trace_group* g) noexcept {
  g_group.store(g, std::memory_order_release);
}

trace_group* current_trace_group() noexcept {
  return g_group.load(std::memory_order_acquire);
}

std::uint64_t trace_message_clock() noexcept {
  return g_sink.load(std::memory_order_acquire) ? now_ns() : 0;
}

void trace_message_sent(unsigned dest, std::uint32_t tag, std::uint64_t bytes,
                        std::uint32_t parcels, std::uint64_t handed_at_ns) noexcept {
  record(handed_at_ns, [&](trace_detail::session_core& s, std::uint64_t ts) {
    s.be->message(s, trace_detail::message_record{true, dest, tag, bytes, parcels}, ts);
  });
}

void trace_message_received(unsigned source, std::uint32_t tag, std::uint64_t bytes) noexcept {
  record(0, [&](trace_detail::session_core& s, std::uint64_t ts) {
    s.be->message(s, trace_detail::message_record{false, source, tag, bytes, 0}, ts);
  });
}

namespace trace_detail {

void attach_message_sink(session_core& s) noexcept {
  std::lock_guard lk(g_sink_mutex);
  g_sink.store(&s, std::memory_order_release);
}

void detach_message_sink(session_core& s) noexcept {
  std::lock_guard lk(g_sink_mutex);
  if (g_sink.load(std::memory_order_relaxed) == &s) g_sink.store(nullptr);
}

}  // namespace trace_detail
}  // namespace grain::instrumentation
