#pragma once
// The state of one recording that the hooks, the listeners and the back ends share: the
// configuration, one worker_buf per worker, the region table, the suspended tasks' chains, the
// back end, and the aux state (counter and policy locations) behind aux_mutex.
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend.hpp"
#include "chain_store.hpp"
#include "grain/instrumentation/counters.hpp"
#include "grain/instrumentation/trace.hpp"
#include "grain/instrumentation/trace_group.hpp"
#include "region_table.hpp"
#include "worker_buf.hpp"

namespace grain::instrumentation::trace_detail {

struct session_core {
  trace_config cfg;
  std::string path;            // the archive / JSON file
  std::uint64_t start_ns = 0;  // every timestamp is clamped to >= start_ns
  std::uint64_t realtime_at_start = 0;
  std::vector<worker_buf> workers;
  // The same, as the hooks read it (no size division on the task path); set with `workers`.
  worker_buf* worker_bufs = nullptr;
  std::size_t worker_count = 0;
  region_table regions;
  chain_store chains;
  std::unique_ptr<backend> be;
  // The processes writing this trace together (null: this one alone); see trace_group.hpp.
  trace_group* group = nullptr;
  bool emergency = false;  // finishing from a signal: no collective steps
  // When the converter runs during the program (convert_pacing.hpp).
  bool spare_cores = false;
  std::uint32_t backlog_chunks = 0;

  std::mutex aux_mutex;  // metric and policy locations, string table
  std::uint64_t aux_last_ts = 0;
  std::uint64_t samples = 0;
  std::uint64_t decisions = 0;
  std::uint64_t events = 0;  // point events (event_kinds.hpp)

  // Counters to record: the snapshot indices, recomputed when the layout changes
  // (session_listeners.cpp).
  std::vector<counter_pattern> patterns;
  std::uint64_t wanted_layout = ~0ull;
  std::vector<std::uint32_t> wanted;  // indices into counter_snapshot::values
  const std::vector<std::uint32_t>& wanted_counters(const counter_snapshot& snap);

  std::uint64_t clamp_aux(std::uint64_t ts) noexcept {
    if (ts < aux_last_ts) ts = aux_last_ts;
    aux_last_ts = ts;
    return ts;
  }

  // A point event (event_kinds.hpp) at `ts`, aux_mutex held, while the session records (its
  // caller stops calling before the back end finalizes: session_listeners.cpp's sampler_sink).
  void record_event_locked(const event_record& r, std::uint64_t ts) {
    be->event(*this, r, clamp_aux(ts));
    ++events;
  }
};

}  // namespace grain::instrumentation::trace_detail
