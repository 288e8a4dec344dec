// Chrome trace-event JSON back end (--grain:trace-format=chrome: DIR/trace.json; chrome.gz:
// DIR/trace.json.gz), streamed: the converter (chunk_converter.hpp) turns the chunks the workers
// publish into X (complete) events as they come (the open slices of each worker are its only
// state); counters become C events, decisions and point events (event_kinds.hpp) i (instant)
// events when they happen; M metadata naming the threads and the closing bracket are written at
// the end. Loads in ui.perfetto.dev and chrome://tracing; kept beside the native Perfetto format
// for tools that read only JSON. With several ranks (one file each) times are CLOCK_MONOTONIC
// itself, not time since this rank's start, so that the files merged into one line up, and each
// message is an event on the "network" thread: its send binds a flow (bind_id, message_flows.hpp)
// that its receive, in the peer's file, ends.
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "../json.hpp"
#include "chunk_converter.hpp"
#include "message_flows.hpp"
#include "session_core.hpp"
#include "trace_file.hpp"

namespace grain::instrumentation::trace_detail {
namespace {

using detail::json_string;

class chrome_backend final : public backend {
 public:
  chrome_backend(session_core& s, bool gzip)
      : nw_(s.cfg.workers),
        pid_(s.cfg.locality),
        file_(s.path, gzip),
        converter_([this](unsigned w, const rec* b, const rec* e) { convert(w, b, e); },
                   [this] { flush(); }) {}

  // Called by start() once start_ns is known: the header, then the converter.
  void open_workers(session_core& s) override {
    start_ = s.group ? 0 : s.start_ns;
    several_ = s.group != nullptr;
    session_ = &s;
    open_.resize(nw_);
    file_.write(fmt_header(s.start_ns));
    converter_.start(s);
  }

  std::string fmt_header(std::uint64_t start_ns) const {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"grain\","
                  "\"clock\":\"CLOCK_MONOTONIC\",\"start_ns\":%" PRIu64
                  "},\n\"traceEvents\":[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%u,"
                  "\"tid\":0,\"args\":{\"name\":\"grain locality %u\"}}",
                  start_ns, pid_, pid_);
    return buf;
  }

  // Every event after the header starts with ",\n": the file is a JSON array being appended to.
  void write(const std::string& text) { file_.write(text); }

  // The converter's buffer to the file (the converter thread, or the stopping thread).
  void flush() {
    file_.write(buf_);
    buf_.clear();
  }

  const std::string& region_name(std::uint32_t r) {
    if (r >= rnames_.size()) {  // a task kind seen for the first time
      rnames_.clear();
      for (auto& x : session_->regions.all()) rnames_.push_back(json_string(x.first));
    }
    static const std::string unknown = "\"?\"";
    return r < rnames_.size() ? rnames_[r] : unknown;
  }

  void close_slice(unsigned w, std::uint64_t ts) {
    auto& st = open_[w].stack;
    const open_slice o = st.back();
    st.pop_back();
    const bool idle = o.region == idle_region;
    char head[160];
    std::snprintf(head, sizeof head,
                  ",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%s,\"dur\":%s,\"pid\":%u,\"tid\":%u",
                  idle ? "idle" : "task", us(o.ts).c_str(), dur(ts - o.ts).c_str(), pid_, w);
    buf_ += ",\n{\"name\":";
    buf_ += region_name(o.region);
    buf_ += head;
    if (!idle) {
      // Ids as decimal strings: GUIDs use all 64 bits, and JavaScript's JSON.parse (the
      // Perfetto UI, chrome://tracing) rounds numbers above 2^53 to the nearest double.
      char ids[120];
      std::snprintf(ids, sizeof ids,
                    ",\"args\":{\"guid\":\"%" PRIu64 "\",\"parent\":\"%" PRIu64 "\"", o.guid,
                    o.parent);
      buf_ += ids;
      if (o.child) {
        std::snprintf(ids, sizeof ids, ",\"resumed_child\":\"%" PRIu64 "\"", o.child);
        buf_ += ids;
      }
      buf_ += '}';
    }
    buf_ += '}';
    if (buf_.size() > (1u << 20)) flush();
  }

  void convert(unsigned w, const rec* p, const rec* e) {
    worker_state& ws = open_[w];
    for (; p < e; ++p) {
      if (p->kind == rec_enter) {
        ws.stack.push_back({p->ts, p->guid, p->parent, ws.child, p->region});
        ws.child = 0;
      } else if (p->kind == rec_note) {
        ws.child = p->guid;
      } else if (p->kind == rec_resume) {
        continue;  // (the Perfetto back end's flows need it, slices do not)
      } else if (!ws.stack.empty()) {
        close_slice(w, p->ts);
      }
    }
  }

  std::string us(std::uint64_t ts) const {
    char buf[40];
    const std::uint64_t d = ts - start_;
    std::snprintf(buf, sizeof buf, "%" PRIu64 ".%03u", d / 1000, static_cast<unsigned>(d % 1000));
    return buf;
  }

  static std::string num(double v) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    std::string s = buf;
    if (s == "nan" || s == "-nan" || s == "inf" || s == "-inf") return "null";
    return s;
  }

  void counter_event(const std::string& name, std::uint64_t ts, unsigned tid, double v) {
    write(",\n{\"name\":" + json_string(name) + ",\"ph\":\"C\",\"ts\":" + us(ts) +
          ",\"pid\":" + std::to_string(pid_) + ",\"tid\":" + std::to_string(tid) +
          ",\"args\":{\"value\":" + num(v) + "}}");
  }

  void sample(session_core& s, const counter_snapshot& snap) override {
    const std::uint64_t ts = s.clamp_aux(snap.time_ns);
    for (std::uint32_t i : s.wanted_counters(snap))
      if (snap.values[i].available)
        counter_event(snap.values[i].name, ts, nw_, snap.values[i].value);
  }

  void knob_value(session_core& s, const std::string& knob, double value,
                  std::uint64_t ts) override {
    counter_event("knob:" + knob, s.clamp_aux(ts), nw_ + 1, value);
  }

  void decision(session_core&, const decision_record& r, std::uint64_t ts) override {
    std::string e = ",\n{\"name\":" + json_string("policy:" + r.rule) +
                    ",\"cat\":\"decision\",\"ph\":\"i\",\"s\":\"t\",\"ts\":" + us(ts) +
                    ",\"pid\":" + std::to_string(pid_) + ",\"tid\":" + std::to_string(nw_ + 1) +
                    ",\"args\":{\"rule\":" + json_string(r.rule) +
                    ",\"knob\":" + json_string(r.knob) + ",\"old_value\":" + num(r.old_value) +
                    ",\"new_value\":" + num(r.new_value) + ",\"requested\":" + num(r.requested) +
                    ",\"clamped\":" + (r.clamped ? "true" : "false") +
                    ",\"reason\":" + json_string(r.reason);
    for (auto& [n, v] : r.trigger) e += "," + json_string("trigger:" + n) + ":" + num(v);
    e += "}}";
    write(e);
    counter_event("knob:" + r.knob, ts, nw_ + 1, r.new_value);
  }

  // A point event (event_kinds.hpp): an instant on the policy engine's thread, of the kind's
  // category, its fields as args.
  void event(session_core&, const event_record& r, std::uint64_t ts) override {
    std::string e = ",\n{\"name\":" + json_string(r.full_name()) +
                    ",\"cat\":" + json_string(row_of(r.kind).prefix) +
                    ",\"ph\":\"i\",\"s\":\"t\",\"ts\":" + us(ts) +
                    ",\"pid\":" + std::to_string(pid_) + ",\"tid\":" + std::to_string(nw_ + 1) +
                    ",\"args\":{";
    const char* sep = "";
    for (auto& [n, v] : r.fields) {
      e += sep + json_string(n) + ":" + num(v);
      sep = ",";
    }
    write(e + "}}");
  }

  // A message (several ranks): a zero-length slice on the network thread, the start of a flow
  // (a send) or its end (a receive), with what it carried.
  void message(session_core& s, const message_record& m, std::uint64_t ts) override {
    if (!s.group) return;
    const unsigned me = s.cfg.locality;
    const std::uint64_t flow = m.sent ? flows_.next(me, m.peer) : flows_.next(m.peer, me);
    char e[400];
    std::snprintf(e, sizeof e,
                  ",\n{\"name\":\"%s\",\"cat\":\"message\",\"ph\":\"X\",\"ts\":%s,\"dur\":0,"
                  "\"pid\":%u,\"tid\":%u,\"bind_id\":\"0x%016" PRIx64
                  "\",\"%s\":true,\"args\":{"
                  "\"%s\":%u,\"tag\":%" PRIu32 ",\"bytes\":%" PRIu64 "%s}}",
                  m.sent ? "MpiSend" : "MpiRecv", us(ts).c_str(), pid_, nw_ + 2, flow,
                  m.sent ? "flow_out" : "flow_in", m.sent ? "to" : "from", m.peer, m.tag, m.bytes,
                  m.sent && m.parcels ? (",\"parcels\":" + std::to_string(m.parcels)).c_str() : "");
    write(e);
  }

  void finalize(session_core& s, std::uint64_t t_end, trace_stats& st) override {
    // (start_, session_ and open_ were set by open_workers: finalize follows a start.)
    converter_.finish();
    for (unsigned w = 0; w < nw_; ++w) {
      while (!open_[w].stack.empty()) close_slice(w, t_end);  // idle at stop; all on a signal
      s.workers[w].stack.clear();
    }
    std::string meta = std::move(buf_);
    buf_.clear();
    auto thread_name = [&](unsigned tid, const std::string& name, unsigned order) {
      char line[256];
      std::snprintf(line, sizeof line,
                    ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%u,\"tid\":%u,\"args\":{"
                    "\"name\":\"%s\"}},\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":%u,"
                    "\"tid\":%u,\"args\":{\"sort_index\":%u}}",
                    pid_, tid, name.c_str(), pid_, tid, order);
      meta += line;
    };
    for (unsigned w = 0; w < nw_; ++w) thread_name(w, "worker " + std::to_string(w), w);
    thread_name(nw_, "runtime counters", nw_);
    thread_name(nw_ + 1, "policy engine", nw_ + 1);
    if (several_) thread_name(nw_ + 2, "network", nw_ + 2);
    meta += "\n]}\n";
    file_.write(meta);
    file_.finish(st);
  }

  static std::string dur(std::uint64_t d) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%" PRIu64 ".%03u", d / 1000, static_cast<unsigned>(d % 1000));
    return buf;
  }

 private:
  unsigned nw_;
  unsigned pid_;
  std::uint64_t start_ = 0;  // times are since this (0 with several ranks)
  bool several_ = false;
  message_flows flows_;  // aux_mutex
  trace_file file_;      // the converter, the sampler and decisions write to it
  struct open_slice {
    std::uint64_t ts, guid, parent, child;
    std::uint32_t region;
  };
  struct worker_state {
    std::vector<open_slice> stack;
    std::uint64_t child = 0;  // the next Enter re-enters an inline parent of this child
  };
  // Converter state (the converter thread, then the stopping thread).
  session_core* session_ = nullptr;
  std::vector<worker_state> open_;
  std::vector<std::string> rnames_;  // JSON-quoted region names by id
  std::string buf_;
  chunk_converter converter_;  // last: its thread uses the members above
};

}  // namespace

std::unique_ptr<backend> make_chrome_backend(session_core& s, bool gzip) {
  return std::make_unique<chrome_backend>(s, gzip);
}

}  // namespace grain::instrumentation::trace_detail
