// OTF2's error messages while grain writes an archive, the writer's state after a failed write,
// and the flush and memory callbacks that keep a failed write (a full disk) from crashing OTF2
// at close.
#if GRAIN_WITH_OTF2  // CMake GRAIN_WITH_OTF2; without it nothing here is built
#include "otf2_io.hpp"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include <spdlog/spdlog.h>

#include "grain/clock.hpp"

namespace grain::instrumentation::trace_detail {
namespace {

std::atomic<bool> g_error_seen{false};

// After a failed write: the writer's "failed" flag, or an error OTF2 has reported to our
// callback in the middle of one of its calls, before the writer could look at it (a flush
// that fails while an event writer closes, several ranks each closing theirs).
bool write_failed(const std::atomic<bool>* failed) noexcept {
  return failed->load() || g_error_seen.load();
}

// userData: the writer's "failed" flag. After a failed write OTF2's buffers are not to be
// trusted (flushing them again at close crashes in OTF2_File_Write): they are dropped.
OTF2_FlushType pre_flush(void* failed, OTF2_FileType, OTF2_LocationRef, void*, bool) {
  return write_failed(static_cast<std::atomic<bool>*>(failed)) ? OTF2_NO_FLUSH : OTF2_FLUSH;
}
OTF2_TimeStamp post_flush(void*, OTF2_FileType, OTF2_LocationRef) {
  return now_ns();
}
const OTF2_FlushCallbacks flush_callbacks = {pre_flush, post_flush};

// OTF2 reports a failed write (a full disk) on stderr once per buffer flush and per file, and
// then returns an error code. While we write an archive its messages are kept (the first one
// names the cause) and we report once; otherwise (reading a trace) they are printed as usual.
std::mutex g_error_mutex;
std::string g_first_error;
std::atomic<int> g_writing{0};
OTF2_ErrorCallback g_previous_error_callback = nullptr;

OTF2_ErrorCode on_otf2_error(void*, const char* file, uint64_t line, const char* function,
                             OTF2_ErrorCode code, const char* fmt, va_list va) {
  char msg[512];
  std::vsnprintf(msg, sizeof msg, fmt, va);
  if (g_writing.load() == 0) {
    std::fprintf(stderr, "[OTF2] %s:%llu: %s: %s: %s\n", file,
                 static_cast<unsigned long long>(line), function, OTF2_Error_GetDescription(code),
                 msg);
    return code;
  }
  std::lock_guard lk(g_error_mutex);
  if (g_first_error.empty())
    g_first_error = std::string(OTF2_Error_GetDescription(code)) + (*msg ? ": " : "") + msg;
  // A failed flush does not always reach the caller as an error code (a short write at
  // close is only reported here): the writer looks at this flag as well.
  g_error_seen.store(true);
  return code;
}

// Chunk memory: each OTF2 buffer keeps up to chunks_per_buffer chunks; when they are full OTF2
// flushes them to the file and they are reused (already mapped: no page faults, no munmap), so
// a location costs at most chunks_per_buffer * chunk size of memory.
constexpr std::size_t chunks_per_buffer = 8;
struct chunk_pool {
  std::vector<void*> chunks;
  std::size_t used = 0;
};
void* pool_allocate(void*, OTF2_FileType, OTF2_LocationRef, void** data, uint64_t size) {
  auto* p = static_cast<chunk_pool*>(*data);
  if (!p) *data = p = new chunk_pool;
  if (p->used < p->chunks.size()) return p->chunks[p->used++];
  if (p->chunks.size() >= chunks_per_buffer) return nullptr;  // OTF2 flushes, then frees
  void* m = std::malloc(size);
  if (!m) return nullptr;
  p->chunks.push_back(m);
  ++p->used;
  return m;
}
void pool_free_all(void* user, OTF2_FileType, OTF2_LocationRef, void** data, bool final) {
  auto* p = static_cast<chunk_pool*>(*data);
  if (!p) return;
  if (!final) {
    p->used = 0;
    return;
  }
  auto* grave = static_cast<chunk_graveyard*>(user);
  if (grave && write_failed(grave->failed)) {
    std::lock_guard lk(grave->m);
    grave->chunks.insert(grave->chunks.end(), p->chunks.begin(), p->chunks.end());
  } else {
    for (void* m : p->chunks) std::free(m);
  }
  delete p;
  *data = nullptr;
}
const OTF2_MemoryCallbacks memory_callbacks = {pool_allocate, pool_free_all};

}  // namespace

otf2_error_capture::otf2_error_capture() {
  std::lock_guard lk(g_error_mutex);
  if (g_writing.fetch_add(1) == 0) {
    g_first_error.clear();
    g_error_seen.store(false);
    g_previous_error_callback = OTF2_Error_RegisterCallback(on_otf2_error, nullptr);
  }
}

otf2_error_capture::~otf2_error_capture() {
  std::lock_guard lk(g_error_mutex);
  if (g_writing.fetch_sub(1) == 1) OTF2_Error_RegisterCallback(g_previous_error_callback, nullptr);
}

std::string otf2_error_capture::first_error() {
  std::lock_guard lk(g_error_mutex);
  return g_first_error;
}

bool otf2_error_capture::error_seen() noexcept {
  return g_error_seen.load(std::memory_order_relaxed);
}

bool otf2_failure::failed() {
  if (!failed_.load(std::memory_order_relaxed) && otf2_error_capture::error_seen()) fail();
  return failed_.load(std::memory_order_relaxed);
}

void otf2_failure::fail() {
  if (failed_.exchange(true)) return;
  std::string why = otf2_error_capture::first_error();
  if (why.empty()) why = "OTF2 refused a record";
  {
    std::lock_guard lk(m_);
    error_ = why;
  }
  spdlog::error(
      "grain: trace {}: cannot write ({}); tracing stops here, the program goes on, and the "
      "archive is left incomplete ({}.incomplete)",
      path_, why, path_);
}

void otf2_failure::fail_because(const std::string& why) {
  if (failed_.exchange(true)) return;
  {
    std::lock_guard lk(m_);
    error_ = why;
  }
  spdlog::error("grain: trace {}: {}; the archive is left incomplete ({}.incomplete)", path_, why,
                path_);
}

std::string otf2_failure::error() {
  std::lock_guard lk(m_);
  return error_;
}

chunk_graveyard::~chunk_graveyard() {
  for (void* c : chunks) std::free(c);
}

const OTF2_FlushCallbacks* otf2_flush_callbacks() {
  return &flush_callbacks;
}

const OTF2_MemoryCallbacks* otf2_memory_callbacks() {
  return &memory_callbacks;
}

std::uint64_t otf2_event_bytes(const std::filesystem::path& dir) {
  std::error_code ec;
  std::uint64_t bytes = 0;
  for (auto& e : std::filesystem::directory_iterator(dir / "traces", ec))
    if (e.path().extension() == ".evt") bytes += e.file_size(ec);
  return bytes;
}

void mark_otf2_incomplete(const std::filesystem::path& dir) {
  std::error_code ec;
  for (const char* n : {"traces.otf2", "traces.def", "traces"})
    if (std::filesystem::exists(dir / n, ec))
      std::filesystem::rename(dir / n, dir / (std::string(n) + ".incomplete"), ec);
}

}  // namespace grain::instrumentation::trace_detail

#endif  // GRAIN_WITH_OTF2
