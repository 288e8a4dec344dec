#pragma once
// What a trace format implements: the interface between the session and the OTF2, Perfetto
// and Chrome JSON back ends, kept apart so that a back end depends on the session's data, never on
// its hooks.
#include <cstdint>
#include <memory>
#include <string>

#include "event_kinds.hpp"
#include "grain/instrumentation/counters.hpp"
#include "grain/instrumentation/trace.hpp"
#include "grain/knob.hpp"

namespace grain::instrumentation::trace_detail {

struct session_core;

// A message of the network layer (grain/instrumentation/trace_group.hpp).
struct message_record {
  bool sent = true;           // false: received
  unsigned peer = 0;          // destination or source rank
  std::uint32_t tag = 0;      // the network's tag (parcels, control)
  std::uint64_t bytes = 0;    // the message's size
  std::uint32_t parcels = 0;  // parcels in a sent message (0: not known)
};

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
  // r.type says how to write the values (integer knobs as integers).
  virtual void decision(session_core& s, const decision_record& r, std::uint64_t ts) = 0;
  // A message sent or received by this process (aux mutex held; in the network's order).
  virtual void message(session_core&, const message_record&, std::uint64_t /*ts*/) {}
  // A point event of any kind in event_kinds.hpp, written from its row (aux mutex held).
  virtual void event(session_core& s, const event_record& r, std::uint64_t ts) = 0;
  // Every worker left its hooks: convert what is left (published chunks and the current ones),
  // close the open regions of every worker at t_end, write everything, close the files.
  virtual void finalize(session_core& s, std::uint64_t t_end, trace_stats& st) = 0;
};

std::unique_ptr<backend> make_otf2_backend(session_core& s);
std::unique_ptr<backend> make_perfetto_backend(session_core& s);           // protobuf TracePackets
std::unique_ptr<backend> make_chrome_backend(session_core& s, bool gzip);  // trace-event JSON

}  // namespace grain::instrumentation::trace_detail
