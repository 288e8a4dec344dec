#pragma once
// OTF2's error messages while grain writes an archive, the writer's state after a failed write,
// and the flush and memory callbacks that keep a failed write (a full disk) from crashing OTF2
// at close (otf2_io.cpp).
#include <otf2/otf2.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace grain::instrumentation::trace_detail {

// OTF2 reports a failed write on stderr once per buffer flush and per file, then returns an
// error code. While one of these lives, its messages are kept instead: the first one names the
// cause, and the writer reports once.
struct otf2_error_capture {
  otf2_error_capture();
  ~otf2_error_capture();
  otf2_error_capture(const otf2_error_capture&) = delete;
  otf2_error_capture& operator=(const otf2_error_capture&) = delete;
  static std::string first_error();
  // A failed flush does not always reach the caller as an error code (a short write at close
  // is only reported to the callback): the writer looks at this as well.
  static bool error_seen() noexcept;
};

// The writer's state after a failed write: the first failure ends the recording (a full disk
// does not get emptier); from then on records are dropped, with one message, and the program
// goes on.
class otf2_failure {
 public:
  explicit otf2_failure(std::string path) : path_(std::move(path)) {}
  // Also notices an error OTF2 reported only to its callback (otf2_error_capture).
  bool failed();
  // A write failed: OTF2's first message says why.
  void fail();
  // The archive cannot be completed for another reason (a signal, another rank).
  void fail_because(const std::string& why);
  std::string error();
  // The flag the flush callbacks and the graveyard read.
  std::atomic<bool>* flag() noexcept { return &failed_; }

 private:
  std::string path_;
  std::atomic<bool> failed_{false};
  std::mutex m_;
  std::string error_;
};

// After a failed write OTF2's file layer still points into the chunks it could not write, and
// writes them again when it closes the file, after it freed the chunks: a full disk ended in
// SIGSEGV. Then the chunks are kept until the archive is closed (userData: this list).
struct chunk_graveyard {
  const std::atomic<bool>* failed = nullptr;
  std::mutex m;
  std::vector<void*> chunks;
  ~chunk_graveyard();
};

// userData: the writer's "failed" flag (std::atomic<bool>*): after a failed write OTF2's
// buffers are dropped instead of flushed again.
const OTF2_FlushCallbacks* otf2_flush_callbacks();
// userData: the archive's chunk_graveyard. Each OTF2 buffer reuses up to 8 chunks.
const OTF2_MemoryCallbacks* otf2_memory_callbacks();

// The bytes of the event files of the archive in DIR.
std::uint64_t otf2_event_bytes(const std::filesystem::path& dir);
// A failed archive: whatever made it to the disk stays, under names no viewer takes for a whole
// trace (traces.otf2.incomplete, ...).
void mark_otf2_incomplete(const std::filesystem::path& dir);

}  // namespace grain::instrumentation::trace_detail
