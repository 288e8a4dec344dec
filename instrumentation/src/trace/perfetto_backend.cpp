// Perfetto back end (--grain:trace-format=perfetto: DIR/trace.pftrace): Perfetto's native
// protobuf trace, a stream of TracePackets (the message subset is perfetto_trace.proto, next to
// this file), streamed as the Chrome JSON is: the converter (chunk_converter.hpp) turns each
// worker's published chunks into slice begin/end events on that worker's own packet sequence,
// so that each sequence can use Perfetto's incremental state: task names are interned once per
// sequence (name_iid) and timestamps are deltas on a sequence-scoped incremental clock. Counter
// samples, knob values and decisions go to sequence 1 (absolute CLOCK_MONOTONIC timestamps)
// when they happen. Tracks: one process track per locality, a thread track per worker, the
// "policy engine" thread track for decisions and point events (instant events with their arguments
// as debug annotations), one counter track per counter and knob. A task's first phase starts a flow
// (flow_ids = its GUID); its children's first phases end it (legacy_event FLOW_IN with
// bind_id = parent GUID, which leaves the flow open for the next child), so Perfetto draws an
// arrow from the parent to every child. With several ranks (one file each) a "network" thread
// track holds each message as an instant event, a flow from its send in one rank's file to its
// receive in the other's (message_flows.hpp). docs/tracing.md shows the encoding and its size.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "chunk_converter.hpp"
#include "grain/instrumentation/counters.hpp"
#include "handover.hpp"
#include "message_flows.hpp"
#include "perfetto_annotations.hpp"
#include "perfetto_fields.hpp"
#include "perfetto_wire.hpp"
#include "session_core.hpp"
#include "trace_file.hpp"

namespace grain::instrumentation::trace_detail {
namespace {

using namespace perfetto;  // field numbers and enums (perfetto_fields.hpp)

class perfetto_backend final : public backend {
 public:
  explicit perfetto_backend(session_core& s)
      : nw_(s.cfg.workers),
        base_((static_cast<std::uint64_t>(s.cfg.locality) + 1) << 32),
        seq_base_(s.cfg.locality << 13),
        locality_(s.cfg.locality),
        flow_salt_(message_flows::task_flow_salt(s.cfg.locality)),
        file_(s.path, false),
        converter_([this](unsigned w, const rec* b, const rec* e) { convert(w, b, e); },
                   [this] { flush(); }) {}

  std::uint64_t process_track() const { return base_; }
  std::uint64_t worker_track(unsigned w) const { return base_ + 1 + w; }
  std::uint64_t policy_track() const { return base_ + 1 + nw_; }
  std::uint64_t network_track() const { return base_ + 2 + nw_; }
  // Made-up thread ids (Perfetto keys thread tracks on them; the real ones are not known to the
  // trace): above any real pid (Linux's pid_max is at most 2^22) and distinct for every rank,
  // so that the ranks' files concatenated into one have no thread in common.
  int made_up_tid(unsigned index) const {
    return static_cast<int>(0x40000000u + ((locality_ & 0x3fffu) << 16) + index + 1);
  }
  // Packet sequences: locality << 13 | index (max_workers + 2 indices fit), so that the traces
  // of several localities can be concatenated into one: 1 (+ the base) for the descriptors,
  // counters, knobs and decisions, 2 + W for worker W.
  static_assert(max_workers + 2 < (1u << 13));
  std::uint32_t aux_sequence() const { return seq_base_ + 1; }
  std::uint32_t worker_sequence(unsigned w) const { return seq_base_ + 2 + w; }

  // Called by start() once start_ns is known: the descriptors and each sequence's first packet
  // (its incremental state), then the converter.
  void open_workers(session_core& s) override {
    session_ = &s;
    workers_.resize(nw_);
    const int pid = static_cast<int>(::getpid());
    std::string out;
    {
      // Sequence 1: the trace's clock is CLOCK_MONOTONIC (grain::now_ns), and aux packets carry
      // absolute MONOTONIC timestamps.
      const auto p = begin_packet(out, aux_sequence());
      pb::put_uint(out, f::sequence_flags, incremental_state_cleared);
      auto cs = pb::open(out, f::clock_snapshot);
      clock(out, clock_monotonic, s.start_ns, false);
      pb::put_uint(out, f::primary_trace_clock, clock_monotonic);
      pb::close(out, cs);
      auto d = pb::open(out, f::packet_defaults);
      pb::put_uint(out, f::defaults_clock_id, clock_monotonic);
      pb::close(out, d);
      pb::close(out, p);
    }
    track(out, process_track(), 0, [&](std::string& o) {
      auto pr = pb::open(o, f::process);
      pb::put_int(o, f::pid, pid);
      pb::put_string(o, f::process_name, "grain locality " + std::to_string(s.cfg.locality));
      pb::close(o, pr);
    });
    // The policy engine (and the network) come after the workers.
    auto thread_track = [&](std::uint64_t uuid, unsigned index, const std::string& name) {
      track(out, uuid, process_track(), [&](std::string& o) {
        auto th = pb::open(o, f::thread);
        pb::put_int(o, f::pid, pid);
        pb::put_int(o, f::tid, made_up_tid(index));
        pb::put_string(o, f::thread_name, name);
        pb::close(o, th);
      });
    };
    for (unsigned w = 0; w < nw_; ++w)
      thread_track(worker_track(w), w, "worker " + std::to_string(w));
    thread_track(policy_track(), nw_, "policy engine");
    if (s.group) thread_track(network_track(), nw_ + 1, "network");
    for (unsigned w = 0; w < nw_; ++w) {
      workers_[w].last_ts = s.start_ns;
      const auto p = begin_packet(out, worker_sequence(w));
      pb::put_uint(out, f::sequence_flags, incremental_state_cleared);
      auto cs = pb::open(out, f::clock_snapshot);
      clock(out, clock_incremental, s.start_ns, true);
      clock(out, clock_monotonic, s.start_ns, false);
      pb::close(out, cs);
      auto d = pb::open(out, f::packet_defaults);
      pb::put_uint(out, f::defaults_clock_id, clock_incremental);
      auto te = pb::open(out, f::track_event_defaults);
      pb::put_uint(out, f::default_track, worker_track(w));
      pb::close(out, te);
      pb::close(out, d);
      pb::close(out, p);
    }
    file_.write(out);
    converter_.start(s);
  }

  static std::size_t begin_packet(std::string& out, std::uint32_t sequence) {
    const auto p = pb::open(out, f::trace_packet);
    pb::put_uint(out, f::sequence_id, sequence);
    return p;
  }

  static void clock(std::string& out, std::uint64_t id, std::uint64_t ts, bool incremental) {
    auto c = pb::open(out, f::clocks);
    pb::put_uint(out, f::clock_id, id);
    pb::put_uint(out, f::clock_timestamp, ts);
    if (incremental) pb::put_bool(out, f::clock_incremental, true);
    pb::close(out, c);
  }

  template <class Body>
  void track(std::string& out, std::uint64_t uuid, std::uint64_t parent, Body body) {
    const auto p = begin_packet(out, aux_sequence());
    auto t = pb::open(out, f::track_descriptor);
    pb::put_uint(out, f::uuid, uuid);
    if (parent) pb::put_uint(out, f::parent_uuid, parent);
    body(out);
    pb::close(out, t);
    pb::close(out, p);
  }

  // ---- the workers' sequences (the converter thread, then the stopping thread) ------------

  struct worker_state {
    std::uint64_t last_ts = 0;        // the incremental clock's value
    std::uint64_t child = 0;          // the next Enter re-enters an inline parent of this child
    std::uint64_t resumed = 0;        // this task's next Enter is a resumed phase
    std::vector<bool> interned;       // region ids whose name this sequence has
    std::vector<std::uint32_t> open;  // regions of the open slices (to close them at stop)
  };

  // The first phase of a task starts its flow and ends its parent's; a resumed phase (announced
  // by rec_resume) and a re-entered inline parent (announced by rec_note) do neither.
  static bool first_phase(worker_state& ws, std::uint64_t guid) {
    if (guid != ws.resumed) return true;
    ws.resumed = 0;
    return false;
  }

  void convert(unsigned w, const rec* p, const rec* e) {
    worker_state& ws = workers_[w];
    for (; p < e; ++p) {
      if (p->kind == rec_note) {
        ws.child = p->guid;
        continue;
      }
      if (p->kind == rec_resume) {
        ws.resumed = p->guid;
        continue;
      }
      const bool enter = p->kind == rec_enter;
      if (!enter && ws.open.empty()) continue;  // (cannot happen: every Leave has its Enter)
      const std::uint64_t ts = p->ts > ws.last_ts ? p->ts : ws.last_ts;
      const std::uint64_t delta = ts - ws.last_ts;
      ws.last_ts = ts;
      if (enter) {
        const bool fresh = p->region >= ws.interned.size() || !ws.interned[p->region];
        if (fresh || ws.child)
          slow_enter(w, ws, *p, delta);
        else
          fast_event(w, ws, p, delta);
        ws.open.push_back(p->region);
      } else {
        fast_event(w, ws, p, delta);
        ws.open.pop_back();
      }
    }
    if (used_ > (1u << 20)) flush();
  }

  // Almost every event: a slice begin of a name the sequence has, or a slice end. Written byte by
  // byte (the same bytes as the pb:: string functions would write: the decoder test reads both
  // kinds): Trace.packet { timestamp, sequence id, track_event { type, name_iid, flow_ids,
  // legacy_event { bind_id, flow_direction } } }, each body shorter than 128 bytes.
  void fast_event(unsigned w, worker_state& ws, const rec* p, std::uint64_t delta) {
    char* const pk = reserve(64);  // the largest: 2 + 11 + 2 + 2 + 34
    char* r = pk + 2;              // room for Trace.packet's tag and length
    *r++ = 0x40;                   // timestamp (8, varint)
    r = pb::put_varint(r, delta);
    *r++ = 0x50;  // trusted_packet_sequence_id (10, varint)
    r = pb::put_varint(r, worker_sequence(w));
    *r++ = 0x5A;  // track_event (11, bytes)
    char* const te = r++;
    *r++ = 0x48;  // type (9, varint)
    if (p->kind == rec_enter) {
      *r++ = static_cast<char>(slice_begin);
      *r++ = 0x50;  // name_iid (10, varint)
      r = pb::put_varint(r, p->region + 1);
      if (p->region != idle_region && first_phase(ws, p->guid)) {
        *r++ = static_cast<char>(0xF9);  // flow_ids (47, fixed64)
        *r++ = 0x02;
        r = pb::put_fixed64(r, p->guid ^ flow_salt_);
        if (p->parent) {
          *r++ = 0x32;  // legacy_event (6, bytes)
          char* const le = r++;
          *r++ = 0x40;  // bind_id (8, varint)
          r = pb::put_varint(r, p->parent ^ flow_salt_);
          *r++ = 0x68;  // flow_direction (13, varint)
          *r++ = static_cast<char>(flow_in);
          *le = static_cast<char>(r - le - 1);
        }
      }
    } else {
      *r++ = static_cast<char>(slice_end);
    }
    *te = static_cast<char>(r - te - 1);
    pk[0] = 0x0A;  // Trace.packet (1, bytes)
    pk[1] = static_cast<char>(r - pk - 2);
    used_ += static_cast<std::size_t>(r - pk);
  }

  // Room for n more bytes at the end of the converter's buffer (flushed at 1 MiB).
  char* reserve(std::size_t n) {
    if (used_ + n > buf_.size()) buf_.resize(std::max(buf_.size() * 2, used_ + n + (1u << 20)));
    return buf_.data() + used_;
  }

  // A name new to the sequence (interned in the same packet), or an inline parent re-entered
  // after its resumed child (annotated with the child's GUID): through the general encoder.
  void slow_enter(unsigned w, worker_state& ws, const rec& r, std::uint64_t delta) {
    std::string& out = slow_;
    out.clear();
    const auto pk = begin_packet(out, worker_sequence(w));
    pb::put_uint(out, f::timestamp, delta);
    if (r.region >= ws.interned.size() || !ws.interned[r.region]) {
      if (r.region >= ws.interned.size()) ws.interned.resize(r.region + 1, false);
      ws.interned[r.region] = true;
      auto in = pb::open(out, f::interned_data);
      auto en = pb::open(out, f::event_names);
      pb::put_uint(out, f::iid, r.region + 1);
      pb::put_string(out, f::interned_name, region_name(r.region));
      pb::close(out, en);
      pb::close(out, in);
    }
    auto te = pb::open(out, f::track_event);
    pb::put_uint(out, f::type, slice_begin);
    pb::put_uint(out, f::name_iid, r.region + 1);
    if (r.region != idle_region) {
      if (ws.child) {
        annotation_uint(out, "resumed_child", ws.child);
        ws.child = 0;
      } else if (first_phase(ws, r.guid)) {
        pb::put_fixed64(out, f::flow_ids, r.guid ^ flow_salt_);
        if (r.parent) {
          auto le = pb::open(out, f::legacy_event);
          pb::put_uint(out, f::bind_id, r.parent ^ flow_salt_);
          pb::put_uint(out, f::flow_direction, flow_in);
          pb::close(out, le);
        }
      }
    }
    pb::close(out, te);
    pb::close(out, pk);
    std::memcpy(reserve(out.size()), out.data(), out.size());
    used_ += out.size();
  }

  // Slices still open at stop (idle, or every open region on a signal) end at t_end.
  void close_open(unsigned w, std::uint64_t t_end) {
    worker_state& ws = workers_[w];
    while (!ws.open.empty()) {
      rec r{};
      r.ts = t_end;
      r.kind = rec_leave;
      r.region = ws.open.back();
      convert(w, &r, &r + 1);
    }
  }

  const std::string& region_name(std::uint32_t r) {
    if (r >= names_.size()) {  // a task kind seen for the first time
      names_.clear();
      for (auto& x : session_->regions.all()) names_.push_back(x.first);
    }
    static const std::string unknown = "?";
    return r < names_.size() ? names_[r] : unknown;
  }

  void flush() {
    file_.write(std::string_view(buf_.data(), used_));
    used_ = 0;
  }

  // ---- sequence 1 (aux_mutex held) --------------------------------------------------------

  // A counter track per counter or knob, described the first time it has a value.
  std::uint64_t counter_track(std::string& out, const std::string& name, const std::string& unit) {
    auto it = counters_.find(name);
    if (it != counters_.end()) return it->second;
    const std::uint64_t uuid = base_ + 0x100000 + counters_.size();
    counters_.emplace(name, uuid);
    track(out, uuid, process_track(), [&](std::string& o) {
      pb::put_string(o, f::track_name, name);
      auto c = pb::open(o, f::counter);
      if (!unit.empty()) pb::put_string(o, f::unit_name, unit);
      pb::close(o, c);
    });
    return uuid;
  }

  void counter_value(std::string& out, std::uint64_t uuid, std::uint64_t ts, double v) {
    const auto p = begin_packet(out, aux_sequence());
    pb::put_uint(out, f::timestamp, ts);
    auto te = pb::open(out, f::track_event);
    pb::put_uint(out, f::type, counter_event);
    pb::put_uint(out, f::track_uuid, uuid);
    pb::put_double(out, f::double_counter_value, v);
    pb::close(out, te);
    pb::close(out, p);
  }

  void sample(session_core& s, const counter_snapshot& snap) override {
    const auto& wanted = s.wanted_counters(snap);
    if (snap.layout_generation != layout_) {
      layout_ = snap.layout_generation;
      units_.clear();
      for (auto& c : registry().list("*")) units_.emplace(c.name, c.unit);
    }
    const std::uint64_t ts = s.clamp_aux(snap.time_ns);
    std::string out;
    for (std::uint32_t i : wanted) {
      const auto& v = snap.values[i];
      if (!v.available) continue;
      auto u = units_.find(v.name);
      const std::uint64_t t = counter_track(out, v.name, u != units_.end() ? u->second : "");
      counter_value(out, t, ts, v.value);
    }
    file_.write(out);
  }

  void knob_value(session_core& s, const std::string& knob, double value,
                  std::uint64_t ts) override {
    std::string out;
    counter_value(out, counter_track(out, "knob:" + knob, ""), s.clamp_aux(ts), value);
    file_.write(out);
  }

  // An instant on the policy engine's track: the packet and track event to close after the
  // arguments.
  std::pair<std::size_t, std::size_t> policy_instant(std::string& out, std::uint64_t ts,
                                                     const std::string& name) {
    const auto p = begin_packet(out, aux_sequence());
    pb::put_uint(out, f::timestamp, ts);
    auto te = pb::open(out, f::track_event);
    pb::put_uint(out, f::type, instant);
    pb::put_uint(out, f::track_uuid, policy_track());
    pb::put_string(out, f::name, name);
    return {p, te};
  }

  void decision(session_core&, const decision_record& r, std::uint64_t ts) override {
    std::string out;
    const auto [p, te] = policy_instant(out, ts, "policy:" + r.rule);
    annotation(out, "rule", r.rule);
    annotation(out, "knob", r.knob);
    if (r.type != knob_type::real) {  // integer and enumeration knobs: exact integers
      annotation_int(out, "old_value", static_cast<std::int64_t>(r.old_value));
      annotation_int(out, "new_value", static_cast<std::int64_t>(r.new_value));
    } else {
      annotation(out, "old_value", r.old_value);
      annotation(out, "new_value", r.new_value);
    }
    annotation(out, "requested", r.requested);
    annotation_bool(out, "clamped", r.clamped);
    annotation(out, "reason", r.reason);
    for (auto& [n, v] : r.trigger) annotation(out, "trigger:" + n, v);
    pb::close(out, te);
    pb::close(out, p);
    counter_value(out, counter_track(out, "knob:" + r.knob, ""), ts, r.new_value);
    file_.write(out);
  }

  // A point event (event_kinds.hpp): an instant on the policy engine's track, its fields as
  // annotations.
  void event(session_core&, const event_record& r, std::uint64_t ts) override {
    std::string out;
    const auto [p, te] = policy_instant(out, ts, r.full_name());
    for (auto& [n, v] : r.fields) annotation(out, n, v);
    pb::close(out, te);
    pb::close(out, p);
    file_.write(out);
  }

  // A message as an instant on the network track: a send starts the flow its receive, in the
  // peer's file, ends.
  void message(session_core& s, const message_record& m, std::uint64_t ts) override {
    if (!s.group) return;
    const std::uint64_t flow =
        m.sent ? flows_.next(locality_, m.peer) : flows_.next(m.peer, locality_);
    std::string out;
    const auto p = begin_packet(out, aux_sequence());
    pb::put_uint(out, f::timestamp, ts);
    auto te = pb::open(out, f::track_event);
    pb::put_uint(out, f::type, instant);
    pb::put_uint(out, f::track_uuid, network_track());
    pb::put_string(out, f::name, m.sent ? "MpiSend" : "MpiRecv");
    annotation_uint(out, m.sent ? "to" : "from", m.peer);
    annotation_uint(out, "tag", m.tag);
    annotation_uint(out, "bytes", m.bytes);
    if (m.sent && m.parcels) annotation_uint(out, "parcels", m.parcels);
    pb::put_fixed64(out, m.sent ? f::flow_ids : f::terminating_flow_ids, flow);
    pb::close(out, te);
    pb::close(out, p);
    file_.write(out);
  }

  void finalize(session_core& s, std::uint64_t t_end, trace_stats& st) override {
    // (session_ and workers_ were set by open_workers: finalize follows a start.)
    converter_.finish();
    for (unsigned w = 0; w < nw_; ++w) {
      close_open(w, t_end);
      s.workers[w].stack.clear();
    }
    flush();
    file_.finish(st);
  }

 private:
  unsigned nw_;
  std::uint64_t base_;  // track uuids: (locality + 1) << 32 | index
  std::uint32_t seq_base_;
  unsigned locality_;
  std::uint64_t flow_salt_;  // task flow ids: GUID ^ this (message_flows.hpp)
  trace_file file_;
  // Converter state.
  session_core* session_ = nullptr;
  std::vector<worker_state> workers_;
  std::vector<std::string> names_;  // region names by id
  std::string buf_;                 // [0, used_): packets not yet written
  std::size_t used_ = 0;
  std::string slow_;  // slow_enter's packet
  // Aux state (aux_mutex).
  std::map<std::string, std::uint64_t> counters_;  // counter or knob -> track uuid
  std::unordered_map<std::string, std::string> units_;
  std::uint64_t layout_ = ~0ull;
  message_flows flows_;
  chunk_converter converter_;  // last: its thread uses the members above
};

}  // namespace

std::unique_ptr<backend> make_perfetto_backend(session_core& s) {
  return std::make_unique<perfetto_backend>(s);
}

}  // namespace grain::instrumentation::trace_detail
