// Perfetto / Chrome trace-event JSON back end (DIR/trace.json): the chunks the workers publish
// are kept in memory (32 bytes per event); at the end the records become X (complete) events,
// counters C events, decisions i (instant) events, plus M metadata naming the threads. Loads in
// ui.perfetto.dev and chrome://tracing.
#include <spdlog/spdlog.h>
#include <stdio.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "../internal.hpp"
#include "session_core.hpp"

namespace grain::instrumentation::trace_detail {
namespace {

namespace fs = std::filesystem;
using detail::json_string;

struct file_closer {
  void operator()(std::FILE* f) const {
    if (f) std::fclose(f);
  }
};

class perfetto_backend final : public backend {
 public:
  explicit perfetto_backend(session_core& s)
      : nw_(s.cfg.workers), pid_(s.cfg.locality), writing_(s.path + ".incomplete") {
    // Create the file now so that an unwritable DIR is reported at start-up. It has its name
    // only once it is complete: a full disk or a crash leaves DIR/trace.json.incomplete.
    out_.reset(std::fopen(writing_.c_str(), "w"));
    if (!out_) throw std::runtime_error("grain: cannot create " + writing_);
  }

  void open_workers(session_core&) override {}

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
    aux_.push_back("{\"name\":" + json_string(name) + ",\"ph\":\"C\",\"ts\":" + us(ts) +
                   ",\"pid\":" + std::to_string(pid_) + ",\"tid\":" + std::to_string(tid) +
                   ",\"args\":{\"value\":" + num(v) + "}}");
  }

  void sample(session_core& s, const counter_snapshot& snap) override {
    start_ = s.start_ns;
    const std::uint64_t ts = s.clamp_aux(snap.time_ns);
    for (std::uint32_t i : s.wanted_counters(snap))
      if (snap.values[i].available)
        counter_event(snap.values[i].name, ts, nw_, snap.values[i].value);
  }

  void knob_value(session_core& s, const std::string& knob, double value,
                  std::uint64_t ts) override {
    start_ = s.start_ns;
    counter_event("knob:" + knob, s.clamp_aux(ts), nw_ + 1, value);
  }

  void decision(session_core& s, const decision_record& r, std::uint64_t ts) override {
    start_ = s.start_ns;
    std::string e = "{\"name\":" + json_string("policy:" + r.rule) +
                    ",\"cat\":\"decision\",\"ph\":\"i\",\"s\":\"t\",\"ts\":" + us(ts) +
                    ",\"pid\":" + std::to_string(pid_) + ",\"tid\":" + std::to_string(nw_ + 1) +
                    ",\"args\":{\"rule\":" + json_string(r.rule) +
                    ",\"knob\":" + json_string(r.knob) + ",\"old_value\":" + num(r.old_value) +
                    ",\"new_value\":" + num(r.new_value) + ",\"requested\":" + num(r.requested) +
                    ",\"clamped\":" + (r.clamped ? "true" : "false") +
                    ",\"reason\":" + json_string(r.reason);
    for (auto& [n, v] : r.trigger) e += "," + json_string("trigger:" + n) + ":" + num(v);
    e += "}}";
    aux_.push_back(std::move(e));
    counter_event("knob:" + r.knob, ts, nw_ + 1, r.new_value);
  }

  void finalize(session_core& s, std::uint64_t t_end, trace_stats& st) override {
    if (!out_) return;
    start_ = s.start_ns;
    std::FILE* f = out_.get();
    const auto regions = s.regions.all();
    std::vector<std::string> rnames;
    rnames.reserve(regions.size());
    for (auto& r : regions) rnames.push_back(json_string(r.first));
    std::fprintf(f,
                 "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"grain\","
                 "\"clock\":\"CLOCK_MONOTONIC\",\"start_ns\":%" PRIu64 "},\n\"traceEvents\":[\n",
                 s.start_ns);
    std::fprintf(f,
                 "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%u,\"tid\":0,\"args\":{\"name\":"
                 "\"grain locality %u\"}}",
                 pid_, pid_);
    auto thread_name = [&](unsigned tid, const std::string& name, unsigned order) {
      std::fprintf(f,
                   ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%u,\"tid\":%u,\"args\":{"
                   "\"name\":\"%s\"}}",
                   pid_, tid, name.c_str());
      std::fprintf(f,
                   ",\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":%u,\"tid\":%u,"
                   "\"args\":{\"sort_index\":%u}}",
                   pid_, tid, order);
    };
    for (unsigned w = 0; w < nw_; ++w) thread_name(w, "worker " + std::to_string(w), w);
    thread_name(nw_, "runtime counters", nw_);
    thread_name(nw_ + 1, "policy engine", nw_ + 1);

    struct open_slice {
      std::uint64_t ts, guid, parent, child;
      std::uint32_t region;
    };
    for (unsigned w = 0; w < nw_; ++w) {
      auto& b = s.workers[w];
      std::vector<open_slice> stack;
      auto close = [&](std::uint64_t ts) {
        const open_slice o = stack.back();
        stack.pop_back();
        const bool idle = o.region == idle_region;
        std::fprintf(f,
                     ",\n{\"name\":%s,\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%s,\"dur\":%s,"
                     "\"pid\":%u,\"tid\":%u",
                     o.region < rnames.size() ? rnames[o.region].c_str() : "\"?\"",
                     idle ? "idle" : "task", us(o.ts).c_str(), dur(ts - o.ts).c_str(), pid_, w);
        if (!idle) {
          // Ids as decimal strings: GUIDs use all 64 bits, and JavaScript's JSON.parse (the
          // Perfetto UI, chrome://tracing) rounds numbers above 2^53 to the nearest double.
          std::fprintf(f, ",\"args\":{\"guid\":\"%" PRIu64 "\",\"parent\":\"%" PRIu64 "\"", o.guid,
                       o.parent);
          if (o.child) std::fprintf(f, ",\"resumed_child\":\"%" PRIu64 "\"", o.child);
          std::fputc('}', f);
        }
        std::fputc('}', f);
      };
      std::uint64_t child = 0;
      auto convert = [&](const rec* p, const rec* e) {
        for (; p < e; ++p) {
          if (p->kind == rec_enter) {
            stack.push_back({p->ts, p->guid, p->parent, child, p->region});
            child = 0;
          } else if (p->kind == rec_note) {
            child = p->guid;
          } else if (!stack.empty()) {
            close(p->ts);
          }
        }
      };
      for (chunk* c = b.out.take_published(); c;) {
        chunk* next = c->next;
        convert(c->recs, c->recs + c->count);
        b.out.give_back(c);
        c = next;
      }
      if (b.out.current) {
        convert(b.out.current->recs, b.out.cur);
        b.out.cur = b.out.current->recs;
      }
      while (!stack.empty()) close(t_end);
      b.stack.clear();
    }
    for (auto& e : aux_) {
      std::fputs(",\n", f);
      std::fputs(e.c_str(), f);
    }
    aux_.clear();
    std::fputs("\n]}\n", f);
    int err = std::ferror(f) ? (errno ? errno : EIO) : 0;
    if (std::fclose(out_.release()) != 0 && !err) err = errno ? errno : EIO;
    std::error_code ec;
    if (!err && ::rename(writing_.c_str(), s.path.c_str()) != 0) err = errno;
    if (err) {
      st.complete = false;
      st.path = writing_;
      st.error = std::strerror(err);
      spdlog::error("grain: trace {}: cannot write ({}); what was written is in {}", s.path,
                    st.error, writing_);
    }
    st.bytes = fs::file_size(st.path, ec);
  }

  static std::string dur(std::uint64_t d) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%" PRIu64 ".%03u", d / 1000, static_cast<unsigned>(d % 1000));
    return buf;
  }

 private:
  unsigned nw_;
  unsigned pid_;
  std::string writing_;
  std::uint64_t start_ = 0;
  std::unique_ptr<std::FILE, file_closer> out_;
  std::vector<std::string> aux_;
};

}  // namespace

std::unique_ptr<backend> make_perfetto_backend(session_core& s) {
  return std::make_unique<perfetto_backend>(s);
}

}  // namespace grain::instrumentation::trace_detail
