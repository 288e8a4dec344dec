// The run summary (--grain:summary=FILE.json); schema: docs/summary-schema.json.
#include <errno.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "grain/knob.hpp"
#include "grain/options.hpp"
#include "json.hpp"
#include "run_info.hpp"
#include "summary.hpp"

namespace grain::instrumentation::detail {
namespace {

// A regular file (or a new one) is written under FILE.incomplete and renamed when complete,
// so that a full disk or a crash never leaves a truncated FILE; anything else (/dev/null, a
// pipe, /dev/stdout) is written in place.
bool written_via_rename(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return true;
  return S_ISREG(st.st_mode);
}

std::string incomplete_name(const std::string& path) {
  return path + ".incomplete";
}

// write(2) until done; false with errno set on an error (ENOSPC, EFBIG, EIO...).
bool write_all(int fd, const std::string& data) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

std::string summary_json(const counter_snapshot& snap, double wall_time_s, std::uint64_t start_ns,
                         const std::string& app, unsigned workers) {
  const run_info run = current_run_info(start_ns);
  std::string o;
  o.reserve(64 * snap.values.size() + 1024);
  o += "{\n  \"format\": \"grain-summary\",\n  \"version\": 1,\n";
  o += "  \"grain_version\": " + json_string(run.version) + ",\n";
  o += "  \"application\": " + json_string(app) + ",\n";
  o += "  \"command_line\": [";
  for (std::size_t i = 0; i < run.command_line.size(); ++i)
    o += (i ? ", " : "") + json_string(run.command_line[i]);
  o += "],\n";
  o += "  \"host\": " + json_string(run.host) + ",\n";
  o += "  \"start_time\": " + json_string(run.start_time) + ",\n";
  o += "  \"workers\": " + std::to_string(workers) + ",\n";
  o += "  \"wall_time_s\": " + json_number(wall_time_s) + ",\n";
  o += "  \"counters\": {";
  bool first = true;
  for (auto& v : snap.values) {
    o += first ? "\n" : ",\n";
    first = false;
    o += "    " + json_string(v.name) + ": " + (v.available ? json_number(v.value) : "null");
  }
  o += first ? "},\n" : "\n  },\n";

  o += "  \"knobs\": {";
  first = true;
  for (knob* k : knobs().all()) {
    o += first ? "\n" : ",\n";
    first = false;
    o += "    " + json_string(k->name()) + ": ";
    if (k->type() == knob_type::enumeration)
      o += json_string(k->enum_name());
    else
      o += json_number(k->value());
  }
  o += first ? "},\n" : "\n  },\n";

  o += "  \"decisions\": [";
  first = true;
  for (const decision_record& d : knobs().decisions()) {
    if (d.time_ns < start_ns) continue;  // an earlier runtime's in this process
    o += first ? "\n" : ",\n";
    first = false;
    const double t = static_cast<double>(d.time_ns - start_ns) * 1e-9;
    o += "    {\"time\": " + json_number(t) + ", \"rule\": " + json_string(d.rule) +
         ", \"knob\": " + json_string(d.knob) + ", \"old\": " + json_number(d.old_value) +
         ", \"new\": " + json_number(d.new_value) + ", \"requested\": " + json_number(d.requested) +
         ", \"clamped\": " + (d.clamped ? "true" : "false") +
         ", \"reason\": " + json_string(d.reason) + ", \"trigger\": {";
    for (std::size_t k = 0; k < d.trigger.size(); ++k) {
      if (k) o += ", ";
      o += json_string(d.trigger[k].first) + ": " + json_number(d.trigger[k].second);
    }
    o += "}}";
  }
  o += first ? "]\n" : "\n  ]\n";
  o += "}\n";
  return o;
}

}  // namespace

void check_summary_path(const std::string& path) {
  const bool rename = written_via_rename(path);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw option_error("--grain:summary=" + path + ": is a directory; give a file name");
  // Try what the end of the run will do, now rather than after the whole run.
  const std::string probe = rename ? incomplete_name(path) : path;
  const bool existed = ::access(probe.c_str(), F_OK) == 0;
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    throw option_error("--grain:summary=" + path + ": cannot write " + probe + ": " +
                       std::strerror(errno));
  ::close(fd);
  if (rename && !existed) ::unlink(probe.c_str());
}

void write_summary(const std::string& path, const counter_snapshot& snap, double wall_time_s,
                   std::uint64_t start_ns, const std::string& app, unsigned workers) {
  const std::string json = summary_json(snap, wall_time_s, start_ns, app, workers);
  const bool rename = written_via_rename(path);
  const std::string target = rename ? incomplete_name(path) : path;
  const int fd = ::open(target.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw std::runtime_error("--grain:summary=" + path + ": cannot write " + target + ": " +
                             std::strerror(errno));
  bool ok = write_all(fd, json);
  int err = ok ? 0 : errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok && rename && ::rename(target.c_str(), path.c_str()) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok)
    throw std::runtime_error("--grain:summary=" + path + ": " + std::strerror(err) +
                             (rename ? "; what could be written is in " + target + " (incomplete)"
                                     : std::string("; the summary is incomplete")));
}

}  // namespace grain::instrumentation::detail
