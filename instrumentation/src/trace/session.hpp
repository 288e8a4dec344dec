#pragma once
// Internals of the trace writer: the per-worker recording state, the region table, the chains
// of inline parents that suspend together with a child, and the two back ends (OTF2, Perfetto
// JSON). See docs/tracing.md for the encoding.
#include <otf2/otf2.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grain/ext/hooks.hpp"
#include "grain/instrumentation/counters.hpp"
#include "grain/instrumentation/listener.hpp"
#include "grain/instrumentation/trace.hpp"
#include "grain/knob.hpp"

namespace grain::instrumentation::trace_detail {

// Region 0 is "Idle"; task regions ("task:<name>") and policy regions ("policy:<rule>") follow.
inline constexpr std::uint32_t idle_region = 0;
enum class region_kind : std::uint8_t { idle, task, policy };

// Attribute ids (OTF2 AttributeRef); "trigger:<counter>" attributes follow fixed_attributes.
enum attribute_id : std::uint32_t {
  attr_guid = 0,
  attr_parent = 1,
  attr_resumed_child = 2,
  attr_rule = 3,
  attr_knob = 4,
  attr_old = 5,
  attr_new = 6,
  attr_requested = 7,
  attr_clamped = 8,
  attr_reason = 9,
  fixed_attributes = 10
};

// One open region on a worker: a task phase (guid != 0) or idle (guid == 0).
struct frame {
  std::uint64_t guid;
  std::uint64_t parent;
  std::uint32_t region;
};

// What a worker records: compact fixed-size records in chunks that only it writes. Full
// chunks are published (a lock-free stack per worker) to the back end: the OTF2 back end's
// converter thread turns them into OTF2 events and gives the chunks back; the Perfetto back end
// keeps them until the end.
struct rec {
  std::uint64_t ts;
  std::uint64_t guid;    // enter: task guid (0: idle); note: the resumed child's guid
  std::uint64_t parent;  // enter: parent guid
  std::uint32_t region;
  std::uint32_t kind;  // rec_enter, rec_leave, rec_note (precedes the enter it belongs to)
};
enum : std::uint32_t { rec_enter = 0, rec_leave = 1, rec_note = 2 };
inline constexpr std::size_t chunk_records = 8192;  // 256 KiB

struct chunk {
  chunk* next = nullptr;
  std::uint32_t count = 0;
  rec recs[chunk_records];
};

struct alignas(64) worker_buf {
  struct cache_entry {
    const char* key = nullptr;
    std::uint32_t region = 0;
  };
  static constexpr unsigned cache_size = 256;  // power of two
  std::array<cache_entry, cache_size> cache{};
  unsigned cache_used = 0;
  std::vector<frame> stack;
  std::uint64_t last_ts = 0;
  std::uint64_t enters = 0;
  std::uint64_t reentries = 0;
  std::uint64_t events = 0;
  std::uint64_t errors = 0;
  // The chunk being written ([cur, end) free), its owner, spare chunks.
  rec* cur = nullptr;
  rec* end = nullptr;
  chunk* current = nullptr;
  chunk* spare = nullptr;  // the worker's own free list (taken from `returned`)
  std::uint64_t chunks_allocated = 0;
  alignas(64) std::atomic<chunk*> published{nullptr};  // full chunks, newest first
  alignas(64) std::atomic<chunk*> returned{nullptr};   // chunks given back by the consumer

  ~worker_buf();
  // Take all published chunks, oldest first (consumer side).
  chunk* take_published() noexcept;
  // Give a chunk back to the worker (consumer side).
  void give_back(chunk* c) noexcept;
};

class region_table {
 public:
  region_table();
  std::uint32_t get(std::string_view name, region_kind kind);
  // Snapshot for the definition writers.
  std::vector<std::pair<std::string, region_kind>> all() const;

 private:
  mutable std::mutex m_;
  std::unordered_map<std::string, std::uint32_t> ids_;
  std::vector<std::pair<std::string, region_kind>> names_;
};

// Ancestors (inline parents) that were open under a task when it suspended; they are entered
// again on the worker that resumes it. A counting filter keeps the lookup off the hot path.
class chain_store {
 public:
  bool maybe(std::uint64_t guid) const noexcept {
    return filter_[slot(guid)].load(std::memory_order_relaxed) != 0;
  }
  void save(std::uint64_t guid, const frame* first, std::size_t n);
  bool take(std::uint64_t guid, std::vector<frame>& out);

 private:
  static std::size_t slot(std::uint64_t g) noexcept {
    return static_cast<std::size_t>(((g ^ (g >> 29)) * 0x9E3779B97F4A7C15ull) >> 52);
  }
  std::array<std::atomic<std::uint32_t>, 4096> filter_{};
  std::mutex m_;
  std::unordered_map<std::uint64_t, std::vector<frame>> map_;
};

struct session_core;

// The parts of a back end that are not on the task path (all called with aux_mutex held,
// except finalize, which runs after every worker left its hooks).
class backend {
 public:
  virtual ~backend() = default;
  virtual void open_workers(session_core& s) = 0;
  // Called by a worker that published a chunk (lock-free; may do nothing).
  virtual void chunk_published() noexcept {}
  virtual void sample(session_core& s, const counter_snapshot& snap) = 0;
  virtual void knob_value(session_core& s, const std::string& knob, double value,
                          std::uint64_t ts) = 0;
  virtual void decision(session_core& s, const decision_record& r, bool integer_knob,
                        std::uint64_t ts) = 0;
  // Every worker left its hooks: convert what is left (published chunks and the current ones),
  // close the open regions of every worker at t_end, write everything, close the files.
  virtual void finalize(session_core& s, std::uint64_t t_end, trace_stats& st) = 0;
};

std::unique_ptr<backend> make_otf2_backend(session_core& s);
std::unique_ptr<backend> make_perfetto_backend(session_core& s);

struct session_core {
  trace_config cfg;
  std::string path;            // the archive / JSON file
  std::uint64_t start_ns = 0;  // every timestamp is clamped to >= start_ns
  std::uint64_t realtime_at_start = 0;
  std::vector<worker_buf> workers;
  region_table regions;
  chain_store chains;
  std::unique_ptr<backend> be;

  std::mutex aux_mutex;  // metric and policy locations, string table
  std::uint64_t aux_last_ts = 0;
  std::uint64_t samples = 0;
  std::uint64_t decisions = 0;

  // Counters to record: the snapshot indices, recomputed when the layout changes.
  std::vector<counter_pattern> patterns;
  std::uint64_t wanted_layout = ~0ull;
  std::vector<std::uint32_t> wanted;  // indices into counter_snapshot::values
  const std::vector<std::uint32_t>& wanted_counters(const counter_snapshot& snap);

  std::uint64_t clamp_aux(std::uint64_t ts) noexcept {
    if (ts < aux_last_ts) ts = aux_last_ts;
    aux_last_ts = ts;
    return ts;
  }
};

// Escape a string for JSON.
std::string json_escape(std::string_view s);

}  // namespace grain::instrumentation::trace_detail
