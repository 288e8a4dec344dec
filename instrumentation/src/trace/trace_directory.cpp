#include "trace_directory.hpp"

#include <spdlog/spdlog.h>

#include <system_error>
#include <vector>

#include "grain/options.hpp"

namespace grain::instrumentation::trace_detail {

namespace fs = std::filesystem;

namespace {

// A trace's own names: the OTF2 archive (anchor, definitions, event files), the single-file
// formats, their ".incomplete" names while being written, and the per-rank files
// (trace.rankR.*) of a Perfetto or Chrome trace of several processes.
bool is_trace_file(const std::string& n) {
  for (const char* own :
       {"traces.otf2", "traces.def", "traces", "trace.pftrace", "trace.json", "trace.json.gz"})
    if (n == own || n == std::string(own) + ".incomplete") return true;
  return n.rfind("trace.rank", 0) == 0;
}

// Set aside in the directory itself, so that a rename moves it (same file system).
constexpr const char* replaced_name = ".grain-replaced-trace";

// The entries of dir that are a trace's (collected first: they are renamed or removed next).
std::vector<fs::path> trace_files_in(const fs::path& dir) {
  std::vector<fs::path> found;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(dir, ec))
    if (is_trace_file(e.path().filename().string())) found.push_back(e.path());
  return found;
}

// Deletes what a trace consists of in dir (every format, every rank), nothing else.
void remove_trace_files(const fs::path& dir) {
  for (const fs::path& p : trace_files_in(dir)) {
    std::error_code ec;
    fs::remove_all(p, ec);
  }
}

}  // namespace

void trace_directory::prepare(const trace_config& cfg, bool keep_replaced) {
  const fs::path dir = cfg.dir;
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    // A file (or /dev/null) is no place for a trace, with or without --grain:trace-overwrite.
    if (!fs::is_directory(dir, ec))
      throw option_error("--grain:trace=" + cfg.dir + ": is " +
                         (fs::is_regular_file(dir, ec) ? "a file" : "not a directory") +
                         "; the trace is a directory: give a new path (it is created)");
    if (!cfg.overwrite)
      throw option_error("--grain:trace=" + cfg.dir +
                         ": the directory exists; choose a new one or add "
                         "--grain:trace-overwrite to replace the trace in it");
    if (keep_replaced)
      set_aside(dir, cfg.dir);
    else
      remove_trace_files(dir);
    dir_ = dir;  // from here on, abandon() may delete trace files in it: they are this run's
    return;
  }
  created_ = fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    created_ = false;
    throw option_error("--grain:trace=" + cfg.dir + ": cannot create the directory: " +
                       (ec ? ec.message() : std::string("not a directory")));
  }
  dir_ = dir;
}

void trace_directory::set_aside(const fs::path& dir, const std::string& option) {
  const std::vector<fs::path> old = trace_files_in(dir);
  if (old.empty()) return;
  // One that an earlier run set aside and never got back to (it was killed before its trace
  // was written) is older than the trace it is about to replace.
  const fs::path aside = dir / replaced_name;
  std::error_code ec;
  fs::remove_all(aside, ec);
  if (!fs::create_directory(aside, ec) || ec)
    throw option_error("--grain:trace=" + option +
                       ": cannot set the earlier trace aside: " + ec.message());
  for (std::size_t i = 0; i < old.size(); ++i) {
    fs::rename(old[i], aside / old[i].filename(), ec);
    if (!ec) continue;
    const std::string why = ec.message();
    for (std::size_t j = 0; j < i; ++j) fs::rename(aside / old[j].filename(), old[j], ec);
    fs::remove(aside, ec);
    throw option_error("--grain:trace=" + option + ": cannot set the earlier trace's " +
                       old[i].filename().string() + " aside: " + why);
  }
  replaced_ = aside;
}

void trace_directory::commit() noexcept {
  if (!replaced_.empty()) {
    std::error_code ec;
    fs::remove_all(replaced_, ec);
    replaced_.clear();
  }
  // The trace is written: from now on abandon() has nothing to give back (and must not delete
  // it).
  dir_.clear();
  created_ = false;
}

void trace_directory::abandon() noexcept {
  if (dir_.empty()) return;
  remove_trace_files(dir_);
  std::error_code ec;
  if (!replaced_.empty()) {
    std::vector<fs::path> old;
    for (auto& e : fs::directory_iterator(replaced_, ec)) old.push_back(e.path());
    for (const fs::path& p : old) {
      std::error_code moved;
      fs::rename(p, dir_ / p.filename(), moved);
      if (moved)
        spdlog::warn("grain: cannot put the earlier trace's {} back into {}: {}; it is in {}",
                     p.filename().string(), dir_.string(), moved.message(), replaced_.string());
    }
    fs::remove(replaced_, ec);  // only if everything went back
    replaced_.clear();
  }
  if (created_) fs::remove(dir_, ec);  // only if empty: whatever else was put there stays
  created_ = false;
  dir_.clear();
}

}  // namespace grain::instrumentation::trace_detail
