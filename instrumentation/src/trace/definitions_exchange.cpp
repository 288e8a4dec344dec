// Encoding and unification of the ranks' definitions (definitions_exchange.hpp). The encoding
// is little more than lengths and bytes: both ends are the same program on the same machine
// class, but a truncated buffer must still be an error, not a crash.
#include "definitions_exchange.hpp"

#include <cstring>
#include <map>
#include <stdexcept>
#include <tuple>

namespace grain::instrumentation::trace_detail {

namespace {

class writer {
 public:
  void u64(std::uint64_t v) { raw(&v, sizeof v); }
  void str(const std::string& s) {
    u64(s.size());
    raw(s.data(), s.size());
  }
  void u64s(const std::vector<std::uint64_t>& v) {
    u64(v.size());
    for (auto x : v) u64(x);
  }
  std::vector<char> take() { return std::move(out_); }

 private:
  void raw(const void* p, std::size_t n) {
    const auto* c = static_cast<const char*>(p);
    out_.insert(out_.end(), c, c + n);
  }
  std::vector<char> out_;
};

class reader {
 public:
  reader(const char* p, std::size_t n) : p_(p), end_(p + n) {}
  std::uint64_t u64() {
    std::uint64_t v;
    need(sizeof v);
    std::memcpy(&v, p_, sizeof v);
    p_ += sizeof v;
    return v;
  }
  std::string str() {
    const std::uint64_t n = u64();
    need(n);
    std::string s(p_, static_cast<std::size_t>(n));
    p_ += n;
    return s;
  }
  // A count of items that take at least `min_bytes` each: bounded by what is left.
  std::size_t count(std::size_t min_bytes) {
    const std::uint64_t n = u64();
    if (n > static_cast<std::uint64_t>(end_ - p_) / min_bytes) bad();
    return static_cast<std::size_t>(n);
  }
  std::vector<std::uint64_t> u64s() {
    std::vector<std::uint64_t> v(count(8));
    for (auto& x : v) x = u64();
    return v;
  }
  void finish() const {
    if (p_ != end_) bad();
  }

 private:
  void need(std::uint64_t n) const {
    if (n > static_cast<std::uint64_t>(end_ - p_)) bad();
  }
  [[noreturn]] static void bad() {
    throw std::runtime_error("grain: malformed trace definitions from another rank");
  }
  const char* p_;
  const char* end_;
};

constexpr std::uint64_t definitions_magic = 0x67726169'6e646566ull;  // "graindef"

}  // namespace

std::vector<char> encode(const local_definitions& d) {
  writer w;
  w.u64(definitions_magic);
  w.u64(d.rank);
  w.str(d.host);
  w.u64(d.workers);
  w.u64(d.start_ns);
  w.u64(d.end_ns);
  w.u64(d.strings.size());
  for (auto& s : d.strings) w.str(s);
  w.u64(d.regions.size());
  for (auto& r : d.regions) {
    w.str(r.name);
    w.u64(r.kind);
  }
  w.u64(d.metrics.size());
  for (auto& m : d.metrics) {
    w.str(m.name);
    w.str(m.unit);
    w.str(m.description);
    w.u64(m.mode);
  }
  w.u64(d.triggers.size());
  for (auto& t : d.triggers) w.str(t);
  w.u64s(d.events);
  return w.take();
}

local_definitions decode_definitions(const char* data, std::size_t size) {
  reader r(data, size);
  if (r.u64() != definitions_magic)
    throw std::runtime_error("grain: the trace definitions from another rank are not ours");
  local_definitions d;
  d.rank = static_cast<std::uint32_t>(r.u64());
  d.host = r.str();
  d.workers = static_cast<std::uint32_t>(r.u64());
  d.start_ns = r.u64();
  d.end_ns = r.u64();
  d.strings.resize(r.count(8));
  for (auto& s : d.strings) s = r.str();
  d.regions.resize(r.count(16));
  for (auto& g : d.regions) {
    g.name = r.str();
    g.kind = static_cast<std::uint8_t>(r.u64());
  }
  d.metrics.resize(r.count(32));
  for (auto& m : d.metrics) {
    m.name = r.str();
    m.unit = r.str();
    m.description = r.str();
    m.mode = static_cast<std::uint8_t>(r.u64());
  }
  d.triggers.resize(r.count(8));
  for (auto& t : d.triggers) t = r.str();
  d.events = r.u64s();
  r.finish();
  return d;
}

std::vector<char> encode(const id_mappings& m) {
  writer w;
  w.u64s(m.strings);
  w.u64s(m.regions);
  w.u64s(m.metrics);
  w.u64s(m.attributes);
  return w.take();
}

id_mappings decode_mappings(const char* data, std::size_t size) {
  reader r(data, size);
  id_mappings m;
  m.strings = r.u64s();
  m.regions = r.u64s();
  m.metrics = r.u64s();
  m.attributes = r.u64s();
  r.finish();
  return m;
}

std::uint32_t unified_definitions::string_id(const std::string& s) {
  auto [it, fresh] = string_index.emplace(s, static_cast<std::uint32_t>(strings.size()));
  if (fresh) strings.push_back(s);
  return it->second;
}

unified_definitions unify(const std::vector<local_definitions>& ranks,
                          std::uint32_t fixed_attributes) {
  unified_definitions u;
  std::map<std::pair<std::string, std::uint8_t>, std::uint64_t> regions;
  std::map<std::string, std::uint64_t> metrics;
  std::map<std::string, std::uint64_t> triggers;
  auto string_of = [&](const std::string& s) { return u.string_id(s); };
  string_of("");
  bool first = true;
  for (const local_definitions& d : ranks) {
    id_mappings m;
    for (auto& s : d.strings) m.strings.push_back(string_of(s));
    for (auto& r : d.regions) {
      auto [it, fresh] = regions.emplace(std::make_pair(r.name, r.kind), u.regions.size());
      if (fresh) u.regions.push_back(r);
      m.regions.push_back(it->second);
    }
    for (auto& x : d.metrics) {
      // The first rank's unit and description stand for all (the same program wrote them).
      auto [it, fresh] = metrics.emplace(x.name, u.metrics.size());
      if (fresh) u.metrics.push_back(x);
      m.metrics.push_back(it->second);
    }
    for (std::uint32_t a = 0; a < fixed_attributes; ++a) m.attributes.push_back(a);
    for (auto& t : d.triggers) {
      auto [it, fresh] = triggers.emplace(t, fixed_attributes + u.triggers.size());
      if (fresh) u.triggers.push_back(t);
      m.attributes.push_back(it->second);
    }
    u.start_ns = first ? d.start_ns : std::min(u.start_ns, d.start_ns);
    u.end_ns = first ? d.end_ns : std::max(u.end_ns, d.end_ns);
    first = false;
    u.per_rank.push_back(std::move(m));
  }
  return u;
}

}  // namespace grain::instrumentation::trace_detail
