// grain-trace-read's JSON output (see json_output.hpp).
#include "json_output.hpp"

#include <cinttypes>
#include <cmath>
#include <cstring>
#include <optional>
#include <variant>

namespace grain::trace_read {

void put_string(std::FILE* f, const std::string& v) {
  std::fputc('"', f);
  for (const unsigned char c : v) {
    if (c == '"' || c == '\\')
      std::fprintf(f, "\\%c", c);
    else if (c < 0x20)
      std::fprintf(f, "\\u%04x", c);
    else
      std::fputc(c, f);
  }
  std::fputc('"', f);
}

void put_double(std::FILE* f, double v) {
  if (std::isnan(v)) {
    std::fputs("NaN", f);
  } else if (std::isinf(v)) {
    std::fputs(v > 0 ? "Infinity" : "-Infinity", f);
  } else {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    std::fputs(buf, f);
    if (!std::strpbrk(buf, ".eE")) std::fputs(".0", f);
  }
}

void put_value(std::FILE* f, const value& v) {
  if (auto* x = std::get_if<std::uint64_t>(&v))
    std::fprintf(f, "%" PRIu64, *x);
  else if (auto* y = std::get_if<std::int64_t>(&v))
    std::fprintf(f, "%" PRId64, *y);
  else if (auto* d = std::get_if<double>(&v))
    put_double(f, *d);
  else
    put_string(f, std::get<std::string>(v));
}

void put_decisions(std::FILE* f, const state& s, bool lines) {
  std::fputs("\"decisions\":[", f);
  const char* sep = "";
  for (auto& d : s.decisions) {
    std::fprintf(f, "%s%s{\"time\":%" PRIu64 ",\"location\":%u,\"rule\":", sep, lines ? "\n" : "",
                 d.time, d.location);
    put_string(f, d.rule);
    std::fputs(",\"attributes\":{", f);
    const char* asep = "";
    for (auto& [n, v] : d.attrs) {
      std::fputs(asep, f);
      put_string(f, n);
      std::fputc(':', f);
      put_value(f, v);
      asep = ",";
    }
    std::fputs("},\"parameters\":{", f);
    asep = "";
    auto param = [&](const char* n, const std::optional<value>& v) {
      if (!v) return;
      std::fprintf(f, "%s\"%s\":", asep, n);
      put_value(f, *v);
      asep = ",";
    };
    param("reason", d.reason.empty() ? std::nullopt : std::optional<value>(d.reason));
    param("knob", d.knob.empty() ? std::nullopt : std::optional<value>(d.knob));
    param("old_value", d.old_v);
    param("new_value", d.new_v);
    std::fputs("}}", f);
    sep = ",";
  }
  std::fputs("]", f);
}

void put_units(std::FILE* f, const state& s) {
  std::fputs("\"units\":{", f);
  const char* sep = "";
  for (auto& [ref, m] : s.members) {
    std::fputs(sep, f);
    put_string(f, m.first);
    std::fputc(':', f);
    put_string(f, m.second);
    sep = ",";
  }
  std::fputs("}", f);
}

void print_aggregate(const state& s, std::FILE* f) {
  std::fprintf(
      f, "{\"resolution\":%" PRIu64 ",\"offset\":%" PRIu64 ",\"length\":%" PRIu64 ",\"command\":",
      s.resolution, s.offset, s.length);
  put_string(f, s.command);
  std::fputs(",\"start_time\":", f);
  put_string(f, s.start_time);
  std::fputs(",\n\"locations\":[", f);
  const char* sep = "";
  for (auto& l : s.locations) {
    std::fprintf(f, "%s\n{\"ref\":%" PRIu64 ",\"name\":", sep, l.ref);
    put_string(f, l.name);
    std::fprintf(f, ",\"type\":\"%s\",\"events\":%" PRIu64, l.type.c_str(), l.events);
    if (l.seen)
      std::fprintf(f, ",\"first\":%" PRIu64 ",\"last\":%" PRIu64, l.first, l.last);
    else
      std::fputs(",\"first\":null,\"last\":null", f);
    std::fprintf(f,
                 ",\"busy\":%" PRIu64 ",\"idle\":%" PRIu64 ",\"phases\":%" PRIu64
                 ",\"sent\":%" PRIu64 ",\"received\":%" PRIu64 ",\"sent_bytes\":%" PRIu64
                 ",\"received_bytes\":%" PRIu64 "}",
                 l.busy, l.idle, l.phases, l.sent, l.received, l.sent_bytes, l.received_bytes);
    sep = ",";
  }
  std::fputs("],\n\"regions\":[", f);
  sep = "";
  for (auto& r : s.regions) {
    std::fprintf(f, "%s\n{\"name\":", sep);
    put_string(f, r.name);
    std::fprintf(
        f, ",\"count\":%" PRIu64 ",\"tasks\":%zu,\"total\":%" PRIu64 ",\"exclusive\":%" PRIu64 "}",
        r.count, r.tasks.size(), r.total, r.exclusive);
    sep = ",";
  }
  std::fputs("],\n", f);
  put_decisions(f, s, true);
  std::fputs(",\n", f);
  put_units(f, s);
  std::fputs(",\n\"metrics\":{", f);
  sep = "";
  for (std::size_t i = 0; i < s.samples.size(); ++i) {
    std::fputs(sep, f);
    put_string(f, s.metric_names[i]);
    std::fputs(":[", f);
    const char* ssep = "";
    for (auto& x : s.samples[i]) {
      std::fprintf(f, "%s[%u,%" PRIu64 ",", ssep, x.loc, x.t);
      put_double(f, x.v);
      std::fputc(']', f);
      ssep = ",";
    }
    std::fputs("]\n", f);
    sep = ",";
  }
  std::fputs("}}\n", f);
}

}  // namespace grain::trace_read
