// --grain:print-counter output: CSV (long format: time_s,counter,value), a table, or HPX's
// print-counter lines (NAME,N,T,[s],VALUE[,[UNIT]]) for scripts written for HPX.
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <string_view>

#include "print_listener.hpp"

namespace grain::instrumentation::detail {
namespace {

// Shortest text that reads back as the same double; integers print without exponent up
// to 2^53.
std::size_t format_value(char* buf, std::size_t size, double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9007199254740992.0) {
    auto [p, ec] = std::to_chars(buf, buf + size, static_cast<long long>(v));
    return ec == std::errc() ? static_cast<std::size_t>(p - buf) : 0;
  }
  auto [p, ec] = std::to_chars(buf, buf + size, v);
  return ec == std::errc() ? static_cast<std::size_t>(p - buf) : 0;
}

}  // namespace

print_listener::print_listener(std::vector<counter_pattern> patterns, print_schedule when,
                               print_format fmt, std::FILE* out, std::uint64_t start_ns,
                               std::string destination)
    : patterns_(std::move(patterns)),
      matched_(patterns_.size(), false),
      when_(when),
      interval_ns_(when.interval_ms * 1'000'000ull),
      fmt_(fmt),
      out_(out),
      destination_(std::move(destination)),
      start_ns_(start_ns),
      last_print_ns_(start_ns) {}

print_listener::~print_listener() {
  if (!out_) return;
  errno = 0;
  const bool owned = out_ != stdout && out_ != stderr;
  const bool ok = owned ? std::fclose(out_) == 0 : std::fflush(out_) == 0;
  if (owned) out_ = nullptr;
  if (!ok) fail(errno, last_written_s_);
}

void print_listener::fail(int err, double t_s) {
  if (out_ && out_ != stdout && out_ != stderr) std::fclose(out_);
  out_ = nullptr;
  const char* why = std::strerror(err != 0 ? err : EIO);
  const std::string when =
      t_s >= 0 ? "the last whole print is of t = " + std::to_string(t_s) + " s" : "no whole print";
  if (destination_.empty()) {
    spdlog::error(
        "grain: --grain:print-counter: cannot write to standard output ({}); counter "
        "printing stops here ({})",
        why, when);
    return;
  }
  struct stat st {};
  std::string kept = destination_;
  if (::stat(destination_.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    const std::string incomplete = destination_ + ".incomplete";
    if (std::rename(destination_.c_str(), incomplete.c_str()) == 0) kept = incomplete;
  }
  spdlog::error(
      "grain: --grain:print-counter-destination={}: cannot write ({}); counter "
      "printing stops here, {} ({})",
      destination_, why,
      kept == destination_ ? "the file is incomplete" : "what was printed is in " + kept, when);
}

void print_listener::on_sample(const counter_snapshot& s) {
  if (s.final) {
    if (when_.at_stop) print(s, " (final)");
    return;
  }
  if (interval_ns_ > 0 && s.time_ns >= last_print_ns_ + interval_ns_) {
    // Keep the print times on the interval grid even if a sample comes late.
    last_print_ns_ += ((s.time_ns - last_print_ns_) / interval_ns_) * interval_ns_;
    print(s, "");
  }
}

void print_listener::print_start() {
  if (!when_.at_start) return;
  counter_snapshot s;
  registry().sample(s);
  print(s, " (start)");
}

std::vector<std::string> print_listener::unmatched() const {
  std::vector<std::string> out;
  for (std::size_t k = 0; k < patterns_.size(); ++k)
    if (!matched_[k]) out.push_back(patterns_[k].text());
  return out;
}

void print_listener::print(const counter_snapshot& s, const char* label) {
  if (!out_) return;
  errno = 0;  // what a failed write below leaves here is the reason fail() reports
  if (layout_ != s.layout_generation) {
    // The set of counters changed: match the patterns again (only then).
    selected_.clear();
    for (std::size_t i = 0; i < s.values.size(); ++i) {
      auto n = parse_counter_name(s.values[i].name);
      if (!n) continue;
      bool any = false;
      for (std::size_t k = 0; k < patterns_.size(); ++k)
        if (patterns_[k].matches(*n)) {
          matched_[k] = true;
          any = true;
        }
      if (any) selected_.push_back(i);
    }
    units_.clear();
    if (fmt_ == print_format::hpx)
      for (std::size_t i : selected_) {
        auto info = registry().list(s.values[i].name);
        units_.push_back(info.empty() ? std::string() : info.front().unit);
      }
    layout_ = s.layout_generation;
  }
  ++prints_;
  const double t = s.time_ns >= start_ns_ ? static_cast<double>(s.time_ns - start_ns_) * 1e-9 : 0;
  char tbuf[32];
  std::snprintf(tbuf, sizeof tbuf, "%.6f", t);
  char vbuf[40];
  if (fmt_ == print_format::csv) {
    if (!header_done_) {
      std::fputs("time_s,counter,value\n", out_);
      header_done_ = true;
    }
    for (std::size_t i : selected_) {
      const counter_value& v = s.values[i];
      std::size_t n = v.available ? format_value(vbuf, sizeof vbuf, v.value) : 0;
      // Counter names contain no comma, quote or newline (see parse_counter_name), but quote
      // them anyway so any CSV reader takes them as one field.
      std::fprintf(out_, "%s,\"%s\",%.*s\n", tbuf, v.name.c_str(), static_cast<int>(n), vbuf);
    }
  } else if (fmt_ == print_format::hpx) {
    // HPX's line: name, the how-many-th evaluation, the time in s with 6 decimals, "[s]", the
    // value, and the unit in brackets when there is one (HPX writes none for counts). A counter
    // that cannot be read gives "invalid" as its value (HPX prints the word alone).
    for (std::size_t k = 0; k < selected_.size(); ++k) {
      const counter_value& v = s.values[selected_[k]];
      const std::string& unit = units_[k];
      std::string_view value = "invalid";
      if (v.available) value = {vbuf, format_value(vbuf, sizeof vbuf, v.value)};
      std::fprintf(out_, "%s,%llu,%s,[s],%.*s", v.name.c_str(),
                   static_cast<unsigned long long>(prints_), tbuf, static_cast<int>(value.size()),
                   value.data());
      if (!unit.empty() && unit != "count") std::fprintf(out_, ",[%s]", unit.c_str());
      std::fputc('\n', out_);
    }
  } else {
    std::size_t width = 0;
    for (std::size_t i : selected_) width = std::max(width, s.values[i].name.size());
    std::fprintf(out_, "# t = %s s%s\n", tbuf, label);
    for (std::size_t i : selected_) {
      const counter_value& v = s.values[i];
      if (v.available) {
        std::size_t n = format_value(vbuf, sizeof vbuf, v.value);
        std::fprintf(out_, "%-*s  %.*s\n", static_cast<int>(width), v.name.c_str(),
                     static_cast<int>(n), vbuf);
      } else {
        std::fprintf(out_, "%-*s  unavailable\n", static_cast<int>(width), v.name.c_str());
      }
    }
  }
  if (std::fflush(out_) != 0 || std::ferror(out_)) {
    fail(errno, last_written_s_);
    return;
  }
  last_written_s_ = t;
  // Like HPX's --hpx:reset-counters, but for every counter: the /threads counters of pools and
  // the locality are sums over workers, which a partial reset would make inconsistent. As of
  // this snapshot, so that the printed intervals add up to the whole run.
  if (when_.reset && !s.final) registry().reset(s);
}

}  // namespace grain::instrumentation::detail
