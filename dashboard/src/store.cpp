// The dashboard's data: samples and decisions in bounded rings, and their JSON for the page.
#include "store.hpp"

#include <time.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

namespace grain::dashboard::detail {
namespace {

std::uint64_t thread_cpu_now() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ull +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

// Adds the calling thread's CPU time between construction and destruction to `sum`.
class cpu_meter {
 public:
  explicit cpu_meter(std::uint64_t& sum) : sum_(sum), start_(thread_cpu_now()) {}
  ~cpu_meter() { sum_ += thread_cpu_now() - start_; }
  cpu_meter(const cpu_meter&) = delete;
  cpu_meter& operator=(const cpu_meter&) = delete;

 private:
  std::uint64_t& sum_;
  std::uint64_t start_;
};

void put_string(std::string& out, std::string_view s) {
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

// Seven significant digits for values; times (seconds since start) get ten, so that 10 ms
// samples stay apart after hours.
void put_number(std::string& out, double v, int digits = 7) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  char buf[32];
  // to_chars: several times faster than snprintf("%.7g"), which dominated a poll's cost.
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, digits);
  out.append(buf, r.ptr);
}

void put_uint(std::string& out, std::uint64_t v) {
  out += std::to_string(v);
}

}  // namespace

store::store(std::vector<instrumentation::counter_pattern> patterns, run_info info,
             std::size_t capacity, std::size_t decision_capacity,
             std::vector<instrumentation::counter_pattern> helpers)
    : patterns_(std::move(patterns)),
      helpers_(std::move(helpers)),
      info_(std::move(info)),
      capacity_(capacity),
      decision_capacity_(decision_capacity) {}

void store::map_counters(const instrumentation::counter_snapshot& s) {
  picks_.clear();
  for (std::size_t i = 0; i < s.values.size(); ++i) {
    const auto& v = s.values[i];
    bool wanted = false, helper = false;
    for (const auto& p : patterns_) wanted = wanted || p.matches(v.name);
    for (const auto& p : helpers_) helper = helper || (!wanted && p.matches(v.name));
    if (!wanted && !helper) continue;
    auto it = by_name_.find(v.name);
    if (it == by_name_.end()) {
      column c;
      c.name = v.name;
      // The unit, once per column (the registry takes its lock).
      const auto infos = instrumentation::registry().list(v.name);
      if (!infos.empty()) c.unit = infos.front().unit;
      c.rate = v.kind == instrumentation::counter_kind::monotonic;
      c.hidden = !wanted;
      it = by_name_.emplace(v.name, columns_.size()).first;
      columns_.push_back(std::move(c));
    }
    picks_.emplace_back(i, it->second);
  }
  layout_generation_ = s.layout_generation;
}

std::size_t store::column_of_knob(knob* k) {
  const std::string key = "knob:" + k->name();
  auto it = by_name_.find(key);
  if (it != by_name_.end()) return it->second;
  column c;
  c.name = k->name();
  c.knob = true;
  c.k = k;
  columns_.push_back(std::move(c));
  return by_name_.emplace(key, columns_.size() - 1).first->second;
}

void store::on_sample(const instrumentation::counter_snapshot& s) {
  // The knob list takes the knob registry's lock: read it before ours.
  const std::vector<knob*> all = knobs().all();
  std::lock_guard lk(m_);
  cpu_meter meter(cpu_ns_);
  if (s.layout_generation != layout_generation_) map_counters(s);
  row r;
  r.seq = next_seq_++;
  r.t = static_cast<double>(s.time_ns - std::min(s.time_ns, info_.start_ns)) * 1e-9;
  std::vector<std::pair<std::size_t, double>> knob_values;
  knob_values.reserve(all.size());
  for (knob* k : all) knob_values.emplace_back(column_of_knob(k), k->value());
  r.values.assign(columns_.size(), std::numeric_limits<double>::quiet_NaN());
  for (auto [i, c] : picks_)
    if (s.values[i].available) r.values[c] = s.values[i].value;
  for (auto [c, v] : knob_values) r.values[c] = v;
  if (rows_.size() == capacity_) {
    // Reuse the oldest row's storage: no allocation per sample once the ring is full.
    row old = std::move(rows_.front());
    rows_.pop_front();
    old.seq = r.seq;
    old.t = r.t;
    old.values.assign(r.values.begin(), r.values.end());
    rows_.push_back(std::move(old));
  } else {
    rows_.push_back(std::move(r));
  }
}

void store::on_decision(const decision_record& r) {
  std::lock_guard lk(m_);
  cpu_meter meter(cpu_ns_);
  decision d;
  d.id = next_decision_++;
  d.t = static_cast<double>(r.time_ns - std::min(r.time_ns, info_.start_ns)) * 1e-9;
  d.r = r;
  if (decisions_.size() == decision_capacity_) decisions_.pop_front();
  decisions_.push_back(std::move(d));
}

void store::set_ended() {
  std::lock_guard lk(m_);
  ended_ = true;
}

std::uint64_t store::cpu_ns() const {
  std::lock_guard lk(m_);
  return cpu_ns_;
}

std::string store::json(std::uint64_t since_row, std::uint64_t since_decision) const {
  std::string out;
  std::lock_guard lk(m_);
  std::size_t newer = 0;
  for (auto it = rows_.rbegin(); it != rows_.rend() && it->seq > since_row; ++it) ++newer;
  out.reserve(256 + 64 * columns_.size() + newer * (16 + 10 * columns_.size()));
  out += "{\"info\":{\"program\":";
  put_string(out, info_.program);
  out += ",\"locality\":";
  put_uint(out, info_.locality);
  out += ",\"workers\":";
  put_uint(out, info_.workers);
  out += ",\"sample_interval_ms\":";
  put_uint(out, info_.sample_interval_ms);
  out += "},\"ended\":";
  out += ended_ ? "true" : "false";
  out += ",\"columns\":[";
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    const column& c = columns_[i];
    if (i) out += ',';
    out += "{\"name\":";
    put_string(out, c.name);
    out += ",\"unit\":";
    put_string(out, c.unit);
    out += ",\"knob\":";
    out += c.knob ? "true" : "false";
    out += ",\"rate\":";
    out += c.rate ? "true" : "false";
    if (c.hidden) out += ",\"hidden\":true";
    if (c.k && c.k->type() == knob_type::enumeration) {
      out += ",\"enum\":[";
      for (std::size_t e = 0; e < c.k->enum_values().size(); ++e) {
        if (e) out += ',';
        put_string(out, c.k->enum_values()[e]);
      }
      out += ']';
    }
    out += '}';
  }
  out += "],\"rows\":[";
  bool first = true;
  for (const row& r : rows_) {
    if (r.seq <= since_row) continue;
    if (!first) out += ',';
    first = false;
    out += '[';
    put_uint(out, r.seq);
    out += ',';
    put_number(out, r.t, 10);
    for (double v : r.values) {
      out += ',';
      put_number(out, v);
    }
    out += ']';
  }
  out += "],\"decisions\":[";
  first = true;
  for (const decision& d : decisions_) {
    if (d.id <= since_decision) continue;
    if (!first) out += ',';
    first = false;
    out += "{\"id\":";
    put_uint(out, d.id);
    out += ",\"t\":";
    put_number(out, d.t, 10);
    out += ",\"knob\":";
    put_string(out, d.r.knob);
    out += ",\"rule\":";
    put_string(out, d.r.rule);
    out += ",\"old\":";
    put_number(out, d.r.old_value);
    out += ",\"new\":";
    put_number(out, d.r.new_value);
    out += ",\"clamped\":";
    out += d.r.clamped ? "true" : "false";
    out += ",\"reason\":";
    put_string(out, d.r.reason);
    out += '}';
  }
  out += "]}";
  return out;
}

}  // namespace grain::dashboard::detail
