// t_d1 calibration files (docs/counters.md, "Obtaining t_d1"): the average task duration of an
// application on one worker, saved by --grain:save-calibration=FILE and read by
// --grain:calibration=FILE.
//
//   {"format": "grain-calibration", "version": 1,
//    "applications": {"APP": {"t_d1_ns": 1234.5, "tasks": 100000, "workers": 1}}}
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "calibration.hpp"
#include "json.hpp"

namespace grain::instrumentation::detail {
namespace {

bool read_file(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

const json_value& check_format(const json_value& v, const std::string& path) {
  const json_value* f = v.get("format");
  const json_value* apps = v.get("applications");
  if (!f || f->t != json_value::string || f->s != "grain-calibration" || !apps ||
      apps->t != json_value::object)
    throw std::runtime_error(path +
                             ": not a grain calibration file (expected "
                             "{\"format\": \"grain-calibration\", \"applications\": {...}})");
  return *apps;
}

std::string temp_name(const std::string& path) {
  return path + ".tmp";
}

[[noreturn]] void cannot_write(const std::string& path, const std::string& what, int err) {
  throw std::runtime_error(path + ": cannot write " + what + " (" + std::strerror(err) + ")");
}

}  // namespace

void check_calibration_path(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw std::runtime_error(path + ": is a directory; give a file name");
  // What save_calibration will do first: create FILE.tmp next to it.
  const std::string tmp = temp_name(path);
  const bool existed = ::access(tmp.c_str(), F_OK) == 0;
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) cannot_write(path, tmp, errno);
  ::close(fd);
  if (!existed) ::unlink(tmp.c_str());
}

std::optional<double> load_calibration(const std::string& path, const std::string& app) {
  std::string text;
  if (!read_file(path, text)) throw std::runtime_error(path + ": cannot read the file");
  json_value v;
  try {
    v = json_parse(text);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
  const json_value& apps = check_format(v, path);
  const json_value* entry = apps.get(app);
  if (!entry) return std::nullopt;
  const json_value* t = entry->get("t_d1_ns");
  if (!t || t->t != json_value::number || !(t->n >= 0))
    throw std::runtime_error(path + ": the entry of '" + app + "' has no valid t_d1_ns");
  return t->n;
}

void save_calibration(const std::string& path, const std::string& app, double t_d1_ns,
                      std::uint64_t tasks, unsigned workers) {
  // Keep the other applications' entries.
  std::vector<std::pair<std::string, std::string>> entries;  // name -> JSON object text
  std::string text;
  if (read_file(path, text)) {
    try {
      json_value v = json_parse(text);
      const json_value& apps = check_format(v, path);
      for (auto& [name, e] : apps.o) {
        if (name == app) continue;
        const json_value* t = e.get("t_d1_ns");
        const json_value* n = e.get("tasks");
        const json_value* w = e.get("workers");
        if (!t || t->t != json_value::number) continue;
        entries.emplace_back(name, "{\"t_d1_ns\": " + json_number(t->n) +
                                       ", \"tasks\": " + json_number(n ? n->n : 0) +
                                       ", \"workers\": " + json_number(w ? w->n : 1) + "}");
      }
    } catch (const std::runtime_error&) {
      // Not ours or damaged: replaced below.
    }
  }
  entries.emplace_back(app, "{\"t_d1_ns\": " + json_number(t_d1_ns) +
                                ", \"tasks\": " + std::to_string(tasks) +
                                ", \"workers\": " + std::to_string(workers) + "}");
  std::string out =
      "{\n  \"format\": \"grain-calibration\",\n  \"version\": 1,\n"
      "  \"applications\": {\n";
  for (std::size_t k = 0; k < entries.size(); ++k) {
    out += "    " + json_string(entries[k].first) + ": " + entries[k].second;
    out += k + 1 < entries.size() ? ",\n" : "\n";
  }
  out += "  }\n}\n";
  const std::string tmp = temp_name(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) cannot_write(path, tmp, errno);
  for (std::size_t done = 0; done < out.size();) {
    const ssize_t n = ::write(fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      ::close(fd);
      ::unlink(tmp.c_str());
      cannot_write(path, tmp, err);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    cannot_write(path, tmp, err);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    cannot_write(path, "it (renaming " + tmp + ")", err);
  }
}

}  // namespace grain::instrumentation::detail
