#pragma once
// The directory a trace goes to (--grain:trace=DIR): checked and made ready when the session is
// made, at start-up; committed when the session has written its trace. A run refused in
// between (an extension configured or started after the trace rejects it: a missing policy
// file, a bad knob) gives the directory back as it found it: no empty archive in a new
// directory, and with --grain:trace-overwrite the earlier trace is still there.
#include <filesystem>
#include <string>

#include "grain/instrumentation/trace.hpp"

namespace grain::instrumentation::trace_detail {

class trace_directory {
 public:
  // Throws grain::option_error when the trace cannot go to cfg.dir: a file, an existing
  // directory without cfg.overwrite, a directory that cannot be created. With cfg.overwrite and
  // `keep_replaced`, an earlier trace in it is set aside (not deleted) until commit(); without
  // `keep_replaced` it is deleted now (several processes write the trace: one of them prepares
  // the directory and cannot know whether the others' runs go ahead).
  void prepare(const trace_config& cfg, bool keep_replaced);
  // The session has written its trace: the earlier one set aside is deleted.
  void commit() noexcept;
  // The run was refused: delete the files of this session's trace (nothing else), put the
  // earlier trace back, and remove the directory if prepare() created it and nothing else was
  // put in it. Only for a directory this process alone writes to.
  void abandon() noexcept;

 private:
  // Moves the earlier trace in dir into replaced_; throws option_error (having put back what
  // it moved) when it cannot.
  void set_aside(const std::filesystem::path& dir, const std::string& option);

  std::filesystem::path dir_;
  std::filesystem::path replaced_;  // where the earlier trace waits; empty: none set aside
  bool created_ = false;
};

}  // namespace grain::instrumentation::trace_detail
