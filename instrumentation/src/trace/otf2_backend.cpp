// OTF2 back end: a converter thread turns the chunks the workers publish into OTF2 events, one
// event writer per worker location (OTF2 writes a chunk to its file when full); the METRIC location
// "runtime counters" and the "policy engine" location are written under the session's aux mutex;
// definitions are written once, at the end, by the stopping thread.
#include <pthread.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <otf2/OTF2_Pthread_Locks.h>
#include <otf2/otf2.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "../run_info.hpp"
#include "grain/clock.hpp"
#include "grain/instrumentation/counters.hpp"
#include "grain/options.hpp"
#include "session_core.hpp"

namespace grain::instrumentation::trace_detail {
namespace {

namespace fs = std::filesystem;

// Attribute ids (OTF2 AttributeRef); "trigger:<counter>" attributes follow fixed_attributes.
enum attribute_id : std::uint32_t {
  attr_guid = 0,
  attr_parent = 1,
  attr_resumed_child = 2,
  attr_rule = 3,
  attr_knob = 4,
  attr_old = 5,
  attr_new = 6,
  attr_requested = 7,
  attr_clamped = 8,
  attr_reason = 9,
  fixed_attributes = 10
};

// userData: the writer's "failed" flag. After a failed write OTF2's buffers are not to be
// trusted (flushing them again at close crashes in OTF2_File_Write): they are dropped.
OTF2_FlushType pre_flush(void* failed, OTF2_FileType, OTF2_LocationRef, void*, bool) {
  return static_cast<std::atomic<bool>*>(failed)->load() ? OTF2_NO_FLUSH : OTF2_FLUSH;
}
OTF2_TimeStamp post_flush(void*, OTF2_FileType, OTF2_LocationRef) {
  return now_ns();
}
OTF2_FlushCallbacks flush_callbacks = {pre_flush, post_flush};

// OTF2 reports a failed write (a full disk) on stderr once per buffer flush and per file, and
// then returns an error code. While we write an archive its messages are kept (the first one
// names the cause) and we report once; otherwise (reading a trace) they are printed as usual.
std::mutex g_error_mutex;
std::string g_first_error;
std::atomic<int> g_writing{0};
std::atomic<bool> g_error_seen{false};
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

struct otf2_error_capture {
  otf2_error_capture() {
    std::lock_guard lk(g_error_mutex);
    if (g_writing.fetch_add(1) == 0) {
      g_first_error.clear();
      g_error_seen.store(false);
      g_previous_error_callback = OTF2_Error_RegisterCallback(on_otf2_error, nullptr);
    }
  }
  ~otf2_error_capture() {
    std::lock_guard lk(g_error_mutex);
    if (g_writing.fetch_sub(1) == 1)
      OTF2_Error_RegisterCallback(g_previous_error_callback, nullptr);
  }
  static std::string first_error() {
    std::lock_guard lk(g_error_mutex);
    return g_first_error;
  }
};

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
// After a failed write OTF2's file layer still points into the chunks it could not write, and
// writes them again when it closes the file, after it freed the chunks: a full disk ended in
// SIGSEGV. Then the chunks are kept until the archive is closed (userData: this list).
struct chunk_graveyard {
  const std::atomic<bool>* failed = nullptr;
  std::mutex m;
  std::vector<void*> chunks;
  ~chunk_graveyard() {
    for (void* c : chunks) std::free(c);
  }
};
void pool_free_all(void* user, OTF2_FileType, OTF2_LocationRef, void** data, bool final) {
  auto* p = static_cast<chunk_pool*>(*data);
  if (!p) return;
  if (!final) {
    p->used = 0;
    return;
  }
  auto* grave = static_cast<chunk_graveyard*>(user);
  if (grave && grave->failed->load()) {
    std::lock_guard lk(grave->m);
    grave->chunks.insert(grave->chunks.end(), p->chunks.begin(), p->chunks.end());
  } else {
    for (void* m : p->chunks) std::free(m);
  }
  delete p;
  *data = nullptr;
}
OTF2_MemoryCallbacks memory_callbacks = {pool_allocate, pool_free_all};

struct metric_def {
  std::string name;
  std::string unit;
  std::string description;
  OTF2_MetricMode mode;
};

class otf2_backend final : public backend {
 public:
  explicit otf2_backend(session_core& s) : path_(s.path) {
    const fs::path dir = fs::path(s.path).parent_path();
    archive_ =
        OTF2_Archive_Open(dir.c_str(), "traces", OTF2_FILEMODE_WRITE, std::uint64_t{1} << 20,
                          std::uint64_t{4} << 20, OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
    if (!archive_) throw std::runtime_error("grain: cannot create the OTF2 archive " + s.path);
    OTF2_Archive_SetFlushCallbacks(archive_, &flush_callbacks, &failed_);
    grave_.failed = &failed_;
    OTF2_Archive_SetMemoryCallbacks(archive_, &memory_callbacks, &grave_);
    OTF2_Archive_SetSerialCollectiveCallbacks(archive_);
    OTF2_Pthread_Archive_SetLockingCallbacks(archive_, nullptr);
    OTF2_Archive_SetCreator(archive_, (std::string("grain ") + options::version()).c_str());
    OTF2_Archive_SetDescription(archive_, "grain tasks, counters and policy decisions");
    // What identifies the run (otf2-print -A shows them); the start time is set in open_workers.
    run_ = detail::current_run_info(now_ns());
    OTF2_Archive_SetMachineName(archive_, run_.host.c_str());
    OTF2_Archive_SetProperty(archive_, "GRAIN::VERSION", run_.version.c_str(), true);
    OTF2_Archive_SetProperty(archive_, "GRAIN::COMMAND_LINE",
                             detail::shell_quoted(run_.command_line).c_str(), true);
    if (OTF2_Archive_OpenEvtFiles(archive_) != OTF2_SUCCESS) {
      OTF2_Archive_Close(archive_);
      archive_ = nullptr;
      throw std::runtime_error("grain: cannot open the OTF2 event files in " + dir.string());
    }
    rank_ = s.cfg.locality;
    nw_ = s.cfg.workers;
    str("");  // string 0: the empty string
  }

  ~otf2_backend() override {
    stop_converter_.store(true);
    if (converter_.joinable()) converter_.join();
    if (archive_ && !failed()) OTF2_Archive_Close(archive_);  // see finalize
  }

  OTF2_LocationRef loc(std::uint64_t index) const {
    return (static_cast<std::uint64_t>(rank_) << 32) | index;
  }

  void open_workers(session_core& s) override {
    OTF2_Archive_SetProperty(archive_, "GRAIN::START_TIME",
                             detail::iso_utc(s.realtime_at_start).c_str(), true);
    for (unsigned w = 0; w < nw_; ++w) {
      writers_.push_back(OTF2_Archive_GetEvtWriter(archive_, loc(w)));
      attrs_.push_back(OTF2_AttributeList_New());
      if (!writers_.back() || !attrs_.back())
        throw std::runtime_error("grain: cannot create OTF2 event writers");
    }
    pending_child_.assign(nw_, 0);
    metric_evt_ = OTF2_Archive_GetEvtWriter(archive_, loc(nw_));
    policy_evt_ = OTF2_Archive_GetEvtWriter(archive_, loc(nw_ + 1));
    policy_attrs_ = OTF2_AttributeList_New();
    if (!metric_evt_ || !policy_evt_ || !policy_attrs_)
      throw std::runtime_error("grain: cannot create OTF2 event writers");
    session_ = &s;
    converter_ = std::thread([this] { convert_loop(); });
  }

  // The converter: turns the workers' published chunks into OTF2 events (OTF2 writes a chunk
  // of its own to the file when it is full) and gives the chunks back.
  void convert_loop() {
    while (!stop_converter_.load(std::memory_order_acquire)) {
      if (!drain()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  bool drain() {
    bool did = false;
    for (unsigned w = 0; w < nw_; ++w) {
      worker_buf& b = session_->workers[w];
      for (chunk* c = b.out.take_published(); c;) {
        chunk* next = c->next;
        if (!failed()) convert(w, c->recs, c->recs + c->count);
        b.out.give_back(c);
        c = next;
        did = true;
      }
    }
    return did;
  }

  void convert(unsigned w, const rec* p, const rec* e) {
    OTF2_EvtWriter* evt = writers_[w];
    OTF2_AttributeList* a = attrs_[w];
    std::uint64_t& child = pending_child_[w];
    for (; p < e; ++p) {
      OTF2_ErrorCode rc;
      if (p->kind == rec_enter) {
        if (p->region == idle_region) {
          rc = OTF2_EvtWriter_Enter(evt, nullptr, p->ts, p->region);
        } else {
          OTF2_AttributeList_AddUint64(a, attr_guid, p->guid);
          OTF2_AttributeList_AddUint64(a, attr_parent, p->parent);
          if (child) OTF2_AttributeList_AddUint64(a, attr_resumed_child, child);
          child = 0;
          rc = OTF2_EvtWriter_Enter(evt, a, p->ts, p->region);
        }
      } else if (p->kind == rec_leave) {
        rc = OTF2_EvtWriter_Leave(evt, nullptr, p->ts, p->region);
      } else {
        if (p->kind == rec_note) child = p->guid;
        continue;
      }
      if (rc != OTF2_SUCCESS) {
        ++worker_errors_;
        fail();
        return;
      }
    }
  }

  // The first failed write ends the recording (a full disk does not get emptier): from then on
  // records are dropped, once, with one message; the program goes on.
  bool failed() {
    if (!failed_.load(std::memory_order_relaxed) && g_error_seen.load(std::memory_order_relaxed))
      fail();
    return failed_.load(std::memory_order_relaxed);
  }
  void fail() {
    if (failed_.exchange(true)) return;
    std::string why = otf2_error_capture::first_error();
    if (why.empty()) why = "OTF2 refused a record";
    {
      std::lock_guard lk(error_mutex_);
      error_ = why;
    }
    spdlog::error(
        "grain: trace {}: cannot write ({}); tracing stops here, the program goes on, and the "
        "archive is left incomplete ({}.incomplete)",
        path_, why, path_);
  }

  // String table (aux mutex held, or single-threaded at finalize).
  OTF2_StringRef str(const std::string& s) {
    auto it = strings_.find(s);
    if (it != strings_.end()) return it->second;
    const auto id = static_cast<OTF2_StringRef>(string_list_.size());
    strings_.emplace(s, id);
    string_list_.push_back(s);
    return id;
  }

  std::uint32_t metric_of(const std::string& name, const std::string& unit,
                          const std::string& description, OTF2_MetricMode mode) {
    auto it = metric_ids_.find(name);
    if (it != metric_ids_.end()) return it->second;
    const auto id = static_cast<std::uint32_t>(metrics_.size());
    metric_ids_.emplace(name, id);
    metrics_.push_back({name, unit, description, mode});
    return id;
  }

  void write_metric(OTF2_EvtWriter* evt, std::uint64_t ts, std::uint32_t metric, double v) {
    OTF2_Type type = OTF2_TYPE_DOUBLE;
    OTF2_MetricValue value;
    value.floating_point = v;
    if (failed()) return;
    if (OTF2_EvtWriter_Metric(evt, nullptr, ts, metric, 1, &type, &value) != OTF2_SUCCESS) {
      ++aux_errors_;
      fail();
    }
  }

  void sample(session_core& s, const counter_snapshot& snap) override {
    const auto& wanted = s.wanted_counters(snap);
    if (snap.layout_generation != layout_ || index_.size() != snap.values.size()) {
      layout_ = snap.layout_generation;
      std::map<std::string, counter_info> infos;
      for (auto& c : registry().list("*")) infos.emplace(c.name, c);
      index_.assign(snap.values.size(), 0);
      for (std::uint32_t i : wanted) {
        const auto& v = snap.values[i];
        auto it = infos.find(v.name);
        const bool total = v.kind == counter_kind::monotonic;
        index_[i] = metric_of(v.name, it != infos.end() ? it->second.unit : std::string(),
                              it != infos.end() ? it->second.description : std::string(),
                              total ? OTF2_METRIC_ACCUMULATED_START : OTF2_METRIC_ABSOLUTE_POINT);
      }
    }
    const std::uint64_t ts = s.clamp_aux(snap.time_ns);
    for (std::uint32_t i : wanted)
      if (snap.values[i].available) write_metric(metric_evt_, ts, index_[i], snap.values[i].value);
  }

  void knob_value(session_core& s, const std::string& knob, double value,
                  std::uint64_t ts) override {
    knob_metric(knob, value, s.clamp_aux(ts));
  }

  void knob_metric(const std::string& knob, double value, std::uint64_t ts) {
    const std::string name = "knob:" + knob;
    const bool known = metric_ids_.count(name) != 0;
    std::string description = "value of the knob " + knob + " (a step: valid until the next)";
    const auto id = metric_of(name, "", description, OTF2_METRIC_ABSOLUTE_NEXT);
    (void)known;
    write_metric(policy_evt_, ts, id, value);
    knob_values_[knob] = value;
  }

  std::uint32_t attribute(const std::string& name) {
    auto it = trigger_attrs_.find(name);
    if (it != trigger_attrs_.end()) return it->second;
    const auto id = static_cast<std::uint32_t>(fixed_attributes + trigger_list_.size());
    trigger_attrs_.emplace(name, id);
    trigger_list_.push_back(name);
    return id;
  }

  void decision(session_core& s, const decision_record& r, std::uint64_t ts) override {
    if (failed()) return;
    if (!knob_values_.count(r.knob)) knob_metric(r.knob, r.old_value, ts);
    const std::uint32_t region = s.regions.get("policy:" + r.rule, region_kind::policy);
    OTF2_AttributeList* a = policy_attrs_;
    OTF2_AttributeValue v;
    v.stringRef = str(r.rule);
    OTF2_AttributeList_AddAttribute(a, attr_rule, OTF2_TYPE_STRING, v);
    v.stringRef = str(r.knob);
    OTF2_AttributeList_AddAttribute(a, attr_knob, OTF2_TYPE_STRING, v);
    OTF2_AttributeList_AddDouble(a, attr_old, r.old_value);
    OTF2_AttributeList_AddDouble(a, attr_new, r.new_value);
    OTF2_AttributeList_AddDouble(a, attr_requested, r.requested);
    OTF2_AttributeList_AddUint8(a, attr_clamped, r.clamped ? 1 : 0);
    v.stringRef = str(r.reason);
    OTF2_AttributeList_AddAttribute(a, attr_reason, OTF2_TYPE_STRING, v);
    for (auto& [name, value] : r.trigger) OTF2_AttributeList_AddDouble(a, attribute(name), value);
    int bad = 0;
    bad += OTF2_EvtWriter_Enter(policy_evt_, a, ts, region) != OTF2_SUCCESS;
    bad +=
        OTF2_EvtWriter_ParameterString(policy_evt_, nullptr, ts, 0, str(r.reason)) != OTF2_SUCCESS;
    bad += OTF2_EvtWriter_ParameterString(policy_evt_, nullptr, ts, 1, str(r.knob)) != OTF2_SUCCESS;
    if (r.type != knob_type::real) {  // integer and enumeration knobs
      bad += OTF2_EvtWriter_ParameterInt(policy_evt_, nullptr, ts, 2,
                                         static_cast<std::int64_t>(r.old_value)) != OTF2_SUCCESS;
      bad += OTF2_EvtWriter_ParameterInt(policy_evt_, nullptr, ts, 3,
                                         static_cast<std::int64_t>(r.new_value)) != OTF2_SUCCESS;
    }
    knob_metric(r.knob, r.new_value, ts);
    bad += OTF2_EvtWriter_Leave(policy_evt_, nullptr, ts, region) != OTF2_SUCCESS;
    aux_errors_ += static_cast<std::uint64_t>(bad);
    if (bad) fail();
  }

  void finalize(session_core& s, std::uint64_t t_end, trace_stats& st) override {
    if (!archive_) return;
    // The rest of the workers' records: published chunks, then the chunks being written.
    stop_converter_.store(true, std::memory_order_release);
    if (converter_.joinable()) converter_.join();
    drain();
    for (unsigned w = 0; w < nw_; ++w) {
      auto& b = s.workers[w];
      if (b.out.current) {
        if (!failed()) convert(w, b.out.current->recs, b.out.cur);
        b.out.cur = b.out.current->recs;
      }
      // Close what is still open (idle workers at stop; everything on a signal).
      for (std::size_t j = b.stack.size(); j-- > 0 && !failed();) {
        ++b.events;
        if (OTF2_EvtWriter_Leave(writers_[w], nullptr, t_end, b.stack[j].region) != OTF2_SUCCESS) {
          ++worker_errors_;
          fail();
        }
      }
      b.stack.clear();
    }
    std::vector<std::uint64_t> nevents(nw_ + 2, 0);
    auto check = [this](OTF2_ErrorCode rc) {
      if (rc != OTF2_SUCCESS) fail();
    };
    // Each step only while nothing failed: after a failed write OTF2 crashes closing what it
    // could not write (its file layer writes a buffer again after it was freed), so a failed
    // archive is abandoned, not closed. That leaks its buffers (at most 8 MiB per location)
    // and a few file descriptors, once, in a run that can no longer write anyway.
    for (unsigned w = 0; w < nw_ && !failed(); ++w) {
      OTF2_EvtWriter_GetNumberOfEvents(writers_[w], &nevents[w]);
      check(OTF2_Archive_CloseEvtWriter(archive_, writers_[w]));
    }
    for (auto* a : attrs_) OTF2_AttributeList_Delete(a);
    writers_.clear();
    attrs_.clear();
    OTF2_EvtWriter_GetNumberOfEvents(metric_evt_, &nevents[nw_]);
    OTF2_EvtWriter_GetNumberOfEvents(policy_evt_, &nevents[nw_ + 1]);
    if (!failed()) check(OTF2_Archive_CloseEvtWriter(archive_, metric_evt_));
    if (!failed()) check(OTF2_Archive_CloseEvtWriter(archive_, policy_evt_));
    OTF2_AttributeList_Delete(policy_attrs_);
    if (!failed()) check(OTF2_Archive_CloseEvtFiles(archive_));
    if (!failed()) {
      // Local definition files (empty: our ids are global already).
      check(OTF2_Archive_OpenDefFiles(archive_));
      for (unsigned i = 0; i < nw_ + 2 && !failed(); ++i) {
        OTF2_DefWriter* dw = OTF2_Archive_GetDefWriter(archive_, loc(i));
        check(OTF2_Archive_CloseDefWriter(archive_, dw));
      }
      if (!failed()) check(OTF2_Archive_CloseDefFiles(archive_));
    }
    if (!failed()) write_global_defs(s, t_end, nevents);
    if (!failed()) check(OTF2_Archive_Close(archive_));
    archive_ = nullptr;
    failed();  // an error OTF2 only reported to the callback

    std::error_code ec;
    const fs::path dir = fs::path(s.path).parent_path();
    for (auto& e : fs::directory_iterator(dir / "traces", ec))
      if (e.path().extension() == ".evt") st.bytes += e.file_size(ec);
    st.errors += aux_errors_ + worker_errors_;
    if (failed()) {
      // Whatever made it to the disk stays, under names no viewer takes for a whole trace.
      for (const char* n : {"traces.otf2", "traces.def", "traces"})
        if (fs::exists(dir / n, ec))
          fs::rename(dir / n, dir / (std::string(n) + ".incomplete"), ec);
      st.complete = false;
      st.path = s.path + ".incomplete";
      std::lock_guard lk(error_mutex_);
      st.error = error_;
    }
  }

  void write_global_defs(session_core& s, std::uint64_t t_end,
                         const std::vector<std::uint64_t>& nevents) {
    auto check = [this](OTF2_ErrorCode rc) {
      if (rc != OTF2_SUCCESS) fail();
    };
    const auto regions = s.regions.all();

    // Make every string first, then write strings before what refers to them.
    const OTF2_StringRef s_empty = str("");
    std::vector<OTF2_StringRef> region_names;
    region_names.reserve(regions.size());
    for (auto& r : regions) region_names.push_back(str(r.first));
    const std::vector<std::pair<std::string, std::string>> fixed_attrs = {
        {"GUID", "task GUID"},
        {"Parent GUID", "GUID of the task that spawned it (0: main thread)"},
        {"Resumed inline child",
         "this Enter continues an inline parent whose child (this GUID) resumed here; not a "
         "phase of its own"},
        {"rule", "policy rule that took the decision"},
        {"knob", "knob changed"},
        {"old_value", "knob value before"},
        {"new_value", "knob value after"},
        {"requested", "value asked for before clamping"},
        {"clamped", "1 if the request was clamped to the knob's range"},
        {"reason", "why the rule changed the knob"}};
    std::vector<std::pair<OTF2_StringRef, OTF2_StringRef>> attr_strings;
    attr_strings.reserve(fixed_attrs.size());
    for (auto& [n, d] : fixed_attrs) attr_strings.emplace_back(str(n), str(d));
    std::vector<OTF2_StringRef> trigger_names;
    for (auto& t : trigger_list_) trigger_names.push_back(str("trigger:" + t));
    const OTF2_StringRef s_trigger_desc = str("counter value behind the decision");
    const OTF2_StringRef s_host = str(run_.host);
    const OTF2_StringRef s_node = str("node");
    const OTF2_StringRef s_group = str("locality " + std::to_string(rank_));
    std::vector<OTF2_StringRef> loc_names;
    for (unsigned w = 0; w < nw_; ++w) loc_names.push_back(str("worker " + std::to_string(w)));
    loc_names.push_back(str("runtime counters"));
    loc_names.push_back(str("policy engine"));
    const OTF2_StringRef p_reason = str("reason"), p_knob = str("knob"),
                         p_old = str("old_value (int)"), p_new = str("new_value (int)");
    std::vector<std::array<OTF2_StringRef, 3>> metric_strings;
    for (auto& m : metrics_)
      metric_strings.push_back({str(m.name), str(m.description), str(m.unit)});

    OTF2_GlobalDefWriter* g = OTF2_Archive_GetGlobalDefWriter(archive_);
    OTF2_GlobalDefWriter_WriteClockProperties(g, 1'000'000'000ull, s.start_ns, t_end - s.start_ns,
                                              s.realtime_at_start);
    for (std::size_t i = 0; i < string_list_.size(); ++i)
      OTF2_GlobalDefWriter_WriteString(g, static_cast<OTF2_StringRef>(i), string_list_[i].c_str());
    OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, s_host, s_node, OTF2_UNDEFINED_SYSTEM_TREE_NODE);
    OTF2_GlobalDefWriter_WriteLocationGroup(g, rank_, s_group, OTF2_LOCATION_GROUP_TYPE_PROCESS, 0,
                                            OTF2_UNDEFINED_LOCATION_GROUP);
    for (unsigned i = 0; i < nw_ + 2; ++i)
      OTF2_GlobalDefWriter_WriteLocation(
          g, loc(i), loc_names[i],
          i == nw_ ? OTF2_LOCATION_TYPE_METRIC : OTF2_LOCATION_TYPE_CPU_THREAD, nevents[i], rank_);
    for (std::size_t i = 0; i < regions.size(); ++i) {
      const auto kind = regions[i].second;
      const OTF2_RegionRole role = kind == region_kind::task   ? OTF2_REGION_ROLE_TASK
                                   : kind == region_kind::idle ? OTF2_REGION_ROLE_ARTIFICIAL
                                                               : OTF2_REGION_ROLE_FUNCTION;
      OTF2_GlobalDefWriter_WriteRegion(g, static_cast<OTF2_RegionRef>(i), region_names[i],
                                       region_names[i], s_empty, role, OTF2_PARADIGM_USER,
                                       OTF2_REGION_FLAG_NONE, s_empty, 0, 0);
    }
    const OTF2_Type attr_types[fixed_attributes] = {
        OTF2_TYPE_UINT64, OTF2_TYPE_UINT64, OTF2_TYPE_UINT64, OTF2_TYPE_STRING, OTF2_TYPE_STRING,
        OTF2_TYPE_DOUBLE, OTF2_TYPE_DOUBLE, OTF2_TYPE_DOUBLE, OTF2_TYPE_UINT8,  OTF2_TYPE_STRING};
    for (std::uint32_t i = 0; i < fixed_attributes; ++i)
      OTF2_GlobalDefWriter_WriteAttribute(g, i, attr_strings[i].first, attr_strings[i].second,
                                          attr_types[i]);
    for (std::size_t i = 0; i < trigger_names.size(); ++i)
      OTF2_GlobalDefWriter_WriteAttribute(g, static_cast<OTF2_AttributeRef>(fixed_attributes + i),
                                          trigger_names[i], s_trigger_desc, OTF2_TYPE_DOUBLE);
    OTF2_GlobalDefWriter_WriteParameter(g, 0, p_reason, OTF2_PARAMETER_TYPE_STRING);
    OTF2_GlobalDefWriter_WriteParameter(g, 1, p_knob, OTF2_PARAMETER_TYPE_STRING);
    OTF2_GlobalDefWriter_WriteParameter(g, 2, p_old, OTF2_PARAMETER_TYPE_INT64);
    OTF2_GlobalDefWriter_WriteParameter(g, 3, p_new, OTF2_PARAMETER_TYPE_INT64);
    for (std::size_t i = 0; i < metrics_.size(); ++i) {
      const auto id = static_cast<std::uint32_t>(i);
      OTF2_GlobalDefWriter_WriteMetricMember(
          g, id, metric_strings[i][0], metric_strings[i][1], OTF2_METRIC_TYPE_USER,
          metrics_[i].mode, OTF2_TYPE_DOUBLE, OTF2_BASE_DECIMAL, 0, metric_strings[i][2]);
      OTF2_MetricMemberRef member = id;
      OTF2_GlobalDefWriter_WriteMetricClass(g, id, 1, &member, OTF2_METRIC_ASYNCHRONOUS,
                                            OTF2_RECORDER_KIND_ABSTRACT);
    }
    check(OTF2_Archive_CloseGlobalDefWriter(archive_, g));
  }

 private:
  otf2_error_capture capture_;  // first: OTF2's messages are ours while the archive lives
  std::string path_;
  detail::run_info run_;
  std::atomic<bool> failed_{false};
  chunk_graveyard grave_;  // outlives archive_ (declared before it, closed in the destructor)
  std::mutex error_mutex_;
  std::string error_;
  OTF2_Archive* archive_ = nullptr;
  unsigned rank_ = 0;
  unsigned nw_ = 0;
  session_core* session_ = nullptr;
  std::vector<OTF2_EvtWriter*> writers_;      // per worker, used by the converter only
  std::vector<OTF2_AttributeList*> attrs_;    // per worker, used by the converter only
  std::vector<std::uint64_t> pending_child_;  // a note's child guid for the next Enter
  std::thread converter_;
  std::atomic<bool> stop_converter_{false};
  std::uint64_t worker_errors_ = 0;
  OTF2_EvtWriter* metric_evt_ = nullptr;
  OTF2_EvtWriter* policy_evt_ = nullptr;
  OTF2_AttributeList* policy_attrs_ = nullptr;
  std::map<std::string, OTF2_StringRef> strings_;
  std::vector<std::string> string_list_;
  std::map<std::string, std::uint32_t> metric_ids_;
  std::vector<metric_def> metrics_;
  std::map<std::string, double> knob_values_;
  std::map<std::string, std::uint32_t> trigger_attrs_;
  std::vector<std::string> trigger_list_;
  std::uint64_t layout_ = ~0ull;
  std::vector<std::uint32_t> index_;
  std::uint64_t aux_errors_ = 0;
};

}  // namespace

std::unique_ptr<backend> make_otf2_backend(session_core& s) {
  return std::make_unique<otf2_backend>(s);
}

}  // namespace grain::instrumentation::trace_detail
