// OTF2 back end: a converter thread turns the chunks the workers publish into OTF2 events (when
// a core is spare: convert_pacing.hpp), one event writer per worker location (OTF2 writes a
// chunk to its file when full); the METRIC location
// "runtime counters" and the "policy engine" location are written under the session's aux mutex;
// definitions are written once, at the end, by the stopping thread. With several ranks (an
// MPI job) every rank writes its own locations into one archive through OTF2's collective
// callbacks; rank 0 unifies the definitions (definitions_exchange.hpp) and the ranks' clocks
// are tied to rank 0's by offsets measured at the start and at the end.
#include <pthread.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <otf2/OTF2_Pthread_Locks.h>
#include <otf2/otf2.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "../run_info.hpp"
#include "convert_pacing.hpp"
#include "definitions_exchange.hpp"
#include "grain/clock.hpp"
#include "grain/instrumentation/counters.hpp"
#include "grain/options.hpp"
#include "otf2_collectives.hpp"
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
  attr_parcels = 10,
  fixed_attributes = 11
};

// Location indices after the workers' (0..workers-1).
enum aux_location : unsigned { metric_location = 0, policy_location = 1, network_location = 2 };

// The communicator of the parcels' MpiSend/MpiRecv records, and its groups.
constexpr OTF2_CommRef parcels_comm = 0;
constexpr OTF2_GroupRef comm_locations_group = 0, comm_ranks_group = 1;

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
    group_ = s.group && s.group->size() > 1 ? s.group : nullptr;
    rank_ = s.cfg.locality;
    if (group_) {
      rank_ = group_->rank();
      OTF2_Archive_SetCollectiveCallbacks(archive_, otf2_group_callbacks(), group_, nullptr,
                                          nullptr);
    } else {
      OTF2_Archive_SetSerialCollectiveCallbacks(archive_);
    }
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
    nw_ = s.cfg.workers;
    str("");  // string 0: the empty string
  }

  ~otf2_backend() override {
    stop_converter_.store(true);
    if (converter_.joinable()) converter_.join();
    if (archive_ && !failed()) OTF2_Archive_Close(archive_);  // see finalize
  }

  OTF2_LocationRef loc(std::uint64_t index) const { return loc_of(rank_, index); }
  static OTF2_LocationRef loc_of(std::uint64_t rank, std::uint64_t index) {
    return (rank << 32) | index;
  }
  // Workers, counters, policy engine, and with several ranks the network.
  unsigned locations() const { return nw_ + (group_ ? 3 : 2); }

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
    metric_evt_ = OTF2_Archive_GetEvtWriter(archive_, loc(nw_ + metric_location));
    policy_evt_ = OTF2_Archive_GetEvtWriter(archive_, loc(nw_ + policy_location));
    policy_attrs_ = OTF2_AttributeList_New();
    if (!metric_evt_ || !policy_evt_ || !policy_attrs_)
      throw std::runtime_error("grain: cannot create OTF2 event writers");
    if (group_) {
      network_evt_ = OTF2_Archive_GetEvtWriter(archive_, loc(nw_ + network_location));
      network_attrs_ = OTF2_AttributeList_New();
      if (!network_evt_ || !network_attrs_)
        throw std::runtime_error("grain: cannot create OTF2 event writers");
      // Every rank at the same point of its start: rank 0's clock is the trace's.
      start_local_ns_ = now_ns();
      start_offset_ = group_->measure_clock_offset(&now_ns);
    }
    session_ = &s;
    converter_ = std::thread([this] { convert_loop(); });
  }

  // The converter: turns the workers' published chunks into OTF2 events (OTF2 writes a chunk
  // of its own to the file when it is full) and gives the chunks back, while a core is spare
  // (convert_pacing.hpp).
  void convert_loop() {
    while (!stop_converter_.load(std::memory_order_acquire)) {
      if (!drain(false)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  bool drain(bool all) {
    return drain_published(*session_, all, [&](unsigned w, chunk* c) {
      if (!failed()) convert_units(w, c->units, c->units + c->count);
    });
  }

  void convert_units(unsigned w, const unit* p, const unit* e) {
    session_->workers[w].decoder.decode_batches(p, e, [&](const rec* b, const rec* f) {
      if (!failed()) convert(w, b, f);
    });
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

  void message(session_core&, const message_record& m, std::uint64_t ts) override {
    if (!network_evt_ || failed()) return;
    OTF2_ErrorCode rc;
    if (m.sent) {
      OTF2_AttributeList_AddUint32(network_attrs_, attr_parcels, m.parcels);
      rc = OTF2_EvtWriter_MpiSend(network_evt_, network_attrs_, ts, m.peer, parcels_comm, m.tag,
                                  m.bytes);
    } else {
      rc = OTF2_EvtWriter_MpiRecv(network_evt_, nullptr, ts, m.peer, parcels_comm, m.tag, m.bytes);
    }
    if (rc != OTF2_SUCCESS) {
      ++aux_errors_;
      fail();
    }
  }

  void finalize(session_core& s, std::uint64_t t_end, trace_stats& st) override {
    if (!archive_) return;
    // The rest of the workers' records: published chunks, then the chunks being written.
    stop_converter_.store(true, std::memory_order_release);
    if (converter_.joinable()) converter_.join();
    drain(true);
    for (unsigned w = 0; w < nw_; ++w) {
      auto& b = s.workers[w];
      if (b.out.current) {
        if (!failed()) convert_units(w, b.out.current->units, b.out.cur);
        b.out.cur = b.out.current->units;
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
    std::vector<std::uint64_t> nevents(locations(), 0);
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
    OTF2_EvtWriter* aux[] = {metric_evt_, policy_evt_, network_evt_};
    for (unsigned i = 0; i < locations() - nw_; ++i) {
      OTF2_EvtWriter_GetNumberOfEvents(aux[i], &nevents[nw_ + i]);
      if (!failed()) check(OTF2_Archive_CloseEvtWriter(archive_, aux[i]));
    }
    OTF2_AttributeList_Delete(policy_attrs_);
    if (network_attrs_) OTF2_AttributeList_Delete(network_attrs_);
    network_evt_ = nullptr;

    if (group_ && s.emergency) {
      // A signal on this rank: the others are not at their end, so nothing collective can
      // run. The events written so far stay, without definitions.
      fail_because(
          "stopped by a signal; a multi-rank archive is completed only when every "
          "rank ends normally");
    } else if (group_) {
      end_local_ns_ = now_ns();
      end_offset_ = group_->measure_clock_offset(&now_ns);
      // All ranks go on, or all give up: a rank that cannot write must not leave the others
      // waiting in OTF2's collectives.
      const bool everyone_ok = agree(!failed());
      if (!everyone_ok && !failed()) fail_because("another rank could not write its part");
      if (everyone_ok) finish_archive(s, t_end, nevents);
    } else if (!failed()) {
      finish_archive(s, t_end, nevents);
    }
    failed();  // an error OTF2 only reported to the callback

    std::error_code ec;
    const fs::path dir = fs::path(s.path).parent_path();
    for (auto& e : fs::directory_iterator(dir / "traces", ec))
      if (e.path().extension() == ".evt") st.bytes += e.file_size(ec);
    st.errors += aux_errors_ + worker_errors_;
    if (failed()) {
      // Whatever made it to the disk stays, under names no viewer takes for a whole trace.
      // (Rank 0 renames the archive the ranks share.)
      if (!group_ || rank_ == 0)
        for (const char* n : {"traces.otf2", "traces.def", "traces"})
          if (fs::exists(dir / n, ec))
            fs::rename(dir / n, dir / (std::string(n) + ".incomplete"), ec);
      st.complete = false;
      st.path = s.path + ".incomplete";
      std::lock_guard lk(error_mutex_);
      st.error = error_;
    }
  }

  // With several ranks: true when `mine` is true on every rank (collective).
  bool agree(bool mine) {
    const unsigned n = group_->size();
    std::vector<unsigned char> all(n, 0);
    const unsigned char me = mine ? 1 : 0;
    const std::vector<std::size_t> counts(n, 1);
    group_->gatherv(&me, 1, all.data(), counts.data(), 0);
    unsigned char verdict = 1;
    for (unsigned char a : all) verdict &= a;
    group_->broadcast(&verdict, 1, 0);
    return verdict != 0;
  }

  void fail_because(const std::string& why) {
    if (failed_.exchange(true)) return;
    {
      std::lock_guard lk(error_mutex_);
      error_ = why;
    }
    spdlog::error("grain: trace {}: {}; the archive is left incomplete ({}.incomplete)", path_, why,
                  path_);
  }

  // This rank's definitions in its own ids, timestamps on rank 0's clock.
  local_definitions local_defs(session_core& s, std::uint64_t t_end,
                               const std::vector<std::uint64_t>& nevents) const {
    local_definitions d;
    d.rank = rank_;
    d.host = run_.host;
    d.workers = nw_;
    d.start_ns =
        static_cast<std::uint64_t>(static_cast<std::int64_t>(s.start_ns) + start_offset_.offset_ns);
    d.end_ns = static_cast<std::uint64_t>(static_cast<std::int64_t>(t_end) + end_offset_.offset_ns);
    d.strings = string_list_;
    for (auto& [name, kind] : s.regions.all())
      d.regions.push_back({name, static_cast<std::uint8_t>(kind)});
    for (auto& m : metrics_)
      d.metrics.push_back({m.name, m.unit, m.description, static_cast<std::uint8_t>(m.mode)});
    d.triggers = trigger_list_;
    d.events = nevents;
    return d;
  }

  // Close the event files, exchange and unify the definitions, write the mapping tables and
  // clock offsets (local definitions) and the global definitions (rank 0), close the archive.
  // Collective with several ranks; from here on every rank makes the same OTF2 calls.
  void finish_archive(session_core& s, std::uint64_t t_end,
                      const std::vector<std::uint64_t>& nevents) {
    auto check = [this](OTF2_ErrorCode rc) {
      if (rc != OTF2_SUCCESS) fail();
    };
    // One rank alone stops at the first failure (see above); several go on together.
    const auto stop_here = [this] { return !group_ && failed(); };
    check(OTF2_Archive_CloseEvtFiles(archive_));
    if (stop_here()) return;
    const local_definitions mine = local_defs(s, t_end, nevents);
    std::vector<local_definitions> ranks;
    id_mappings my_mappings;
    unified_definitions unified;
    if (group_) {
      exchange(mine, ranks, unified, my_mappings);
    } else {
      ranks.push_back(mine);
      unified = unify(ranks, fixed_attributes);
    }
    check(OTF2_Archive_OpenDefFiles(archive_));
    for (unsigned i = 0; i < locations(); ++i) {
      OTF2_DefWriter* dw = OTF2_Archive_GetDefWriter(archive_, loc(i));
      if (!dw) {
        fail();
        continue;
      }
      // Rank 0's ids are the global ones (unify numbers them first) and its clock is the
      // reference: only the other ranks need mappings and offsets.
      if (group_ && rank_ != 0) {
        write_mapping(dw, OTF2_MAPPING_STRING, my_mappings.strings);
        write_mapping(dw, OTF2_MAPPING_REGION, my_mappings.regions);
        write_mapping(dw, OTF2_MAPPING_METRIC, my_mappings.metrics);
        write_mapping(dw, OTF2_MAPPING_ATTRIBUTE, my_mappings.attributes);
        check(OTF2_DefWriter_WriteClockOffset(dw, start_local_ns_, start_offset_.offset_ns,
                                              start_offset_.uncertainty_ns));
        check(OTF2_DefWriter_WriteClockOffset(dw, end_local_ns_, end_offset_.offset_ns,
                                              end_offset_.uncertainty_ns));
      }
      check(OTF2_Archive_CloseDefWriter(archive_, dw));
    }
    check(OTF2_Archive_CloseDefFiles(archive_));
    if (stop_here()) return;
    if (rank_ == 0 || !group_) write_global_defs(s, unified, ranks);
    if (stop_here()) return;
    check(OTF2_Archive_Close(archive_));
    archive_ = nullptr;
  }

  void write_mapping(OTF2_DefWriter* dw, OTF2_MappingType type,
                     const std::vector<std::uint64_t>& map) {
    bool identity = true;
    for (std::size_t i = 0; i < map.size() && identity; ++i) identity = map[i] == i;
    if (identity) return;  // (OTF2 would return no map for it)
    OTF2_IdMap* m = OTF2_IdMap_CreateFromUint64Array(map.size(), map.data(), true);
    if (!m) {
      fail();
      return;
    }
    if (OTF2_DefWriter_WriteMappingTable(dw, type, m) != OTF2_SUCCESS) fail();
    OTF2_IdMap_Free(m);
  }

  // Every rank's definitions to rank 0, which unifies them; each rank's mappings back.
  void exchange(const local_definitions& mine, std::vector<local_definitions>& ranks,
                unified_definitions& unified, id_mappings& my_mappings) {
    const unsigned n = group_->size();
    const bool root = rank_ == 0;
    const std::vector<char> blob = encode(mine);
    std::vector<std::uint64_t> sizes(n, 0);
    const std::uint64_t my_size = blob.size();
    const std::vector<std::size_t> eight(n, sizeof(std::uint64_t));
    group_->gatherv(&my_size, sizeof my_size, sizes.data(), eight.data(), 0);
    std::vector<std::size_t> counts(sizes.begin(), sizes.end());
    std::vector<char> all;
    if (root) all.resize(std::accumulate(counts.begin(), counts.end(), std::size_t{0}));
    group_->gatherv(blob.data(), blob.size(), all.data(), counts.data(), 0);

    std::vector<char> maps_out;
    std::vector<std::uint64_t> map_sizes(n, 0);
    if (root) {
      std::size_t at = 0;
      for (unsigned r = 0; r < n; ++r) {
        ranks.push_back(decode_definitions(all.data() + at, counts[r]));
        at += counts[r];
      }
      unified = unify(ranks, fixed_attributes);
      for (unsigned r = 0; r < n; ++r) {
        const std::vector<char> m = encode(unified.per_rank[r]);
        map_sizes[r] = m.size();
        maps_out.insert(maps_out.end(), m.begin(), m.end());
      }
    }
    std::uint64_t my_map_size = 0;
    group_->scatterv(map_sizes.data(), eight.data(), &my_map_size, sizeof my_map_size, 0);
    std::vector<std::size_t> map_counts(map_sizes.begin(), map_sizes.end());
    std::vector<char> my_maps(static_cast<std::size_t>(my_map_size));
    group_->scatterv(maps_out.data(), map_counts.data(), my_maps.data(), my_maps.size(), 0);
    my_mappings = decode_mappings(my_maps.data(), my_maps.size());
  }

  // Rank 0 (or the only rank): the global definitions of every rank's locations.
  void write_global_defs(session_core& s, unified_definitions& u,
                         const std::vector<local_definitions>& ranks) {
    auto check = [this](OTF2_ErrorCode rc) {
      if (rc != OTF2_SUCCESS) fail();
    };
    // Make every string first, then write strings before what refers to them.
    const OTF2_StringRef s_empty = u.string_id("");
    std::vector<OTF2_StringRef> region_names;
    region_names.reserve(u.regions.size());
    for (auto& r : u.regions) region_names.push_back(u.string_id(r.name));
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
        {"reason", "why the rule changed the knob"},
        {"parcels", "parcels carried by the message (more than 1: coalesced)"}};
    std::vector<std::pair<OTF2_StringRef, OTF2_StringRef>> attr_strings;
    attr_strings.reserve(fixed_attrs.size());
    for (auto& [n, d] : fixed_attrs) attr_strings.emplace_back(u.string_id(n), u.string_id(d));
    std::vector<OTF2_StringRef> trigger_names;
    for (auto& t : u.triggers) trigger_names.push_back(u.string_id("trigger:" + t));
    const OTF2_StringRef s_trigger_desc = u.string_id("counter value behind the decision");
    // One system tree node per host, under a "job" node when the ranks run on several.
    std::vector<std::string> hosts;
    for (auto& d : ranks)
      if (std::find(hosts.begin(), hosts.end(), d.host) == hosts.end()) hosts.push_back(d.host);
    const bool several_hosts = hosts.size() > 1;
    const OTF2_StringRef s_node = u.string_id("node"), s_job = u.string_id("grain job"),
                         s_machine = u.string_id("machine");
    std::vector<OTF2_StringRef> host_names;
    host_names.reserve(hosts.size());
    for (auto& h : hosts) host_names.push_back(u.string_id(h));
    std::vector<OTF2_StringRef> group_names;
    std::vector<std::vector<OTF2_StringRef>> loc_names;
    for (auto& d : ranks) {
      group_names.push_back(u.string_id("locality " + std::to_string(d.rank)));
      std::vector<OTF2_StringRef> names;
      for (unsigned w = 0; w < d.workers; ++w)
        names.push_back(u.string_id("worker " + std::to_string(w)));
      names.push_back(u.string_id("runtime counters"));
      names.push_back(u.string_id("policy engine"));
      if (ranks.size() > 1) names.push_back(u.string_id("network"));
      loc_names.push_back(std::move(names));
    }
    const OTF2_StringRef p_reason = u.string_id("reason"), p_knob = u.string_id("knob"),
                         p_old = u.string_id("old_value (int)"),
                         p_new = u.string_id("new_value (int)");
    const OTF2_StringRef s_comm = u.string_id("grain parcels (MPI_COMM_WORLD duplicate)"),
                         s_comm_locations = u.string_id("network locations"),
                         s_comm_ranks = u.string_id("ranks");
    std::vector<std::array<OTF2_StringRef, 3>> metric_strings;
    for (auto& m : u.metrics)
      metric_strings.push_back(
          {u.string_id(m.name), u.string_id(m.description), u.string_id(m.unit)});

    OTF2_GlobalDefWriter* g = OTF2_Archive_GetGlobalDefWriter(archive_);
    if (!g) {
      fail();
      return;
    }
    // Rank 0's realtime at its start, moved to the earliest start of any rank.
    const std::uint64_t realtime = s.realtime_at_start - (s.start_ns - u.start_ns);
    OTF2_GlobalDefWriter_WriteClockProperties(g, 1'000'000'000ull, u.start_ns,
                                              u.end_ns - u.start_ns, realtime);
    for (std::size_t i = 0; i < u.strings.size(); ++i)
      OTF2_GlobalDefWriter_WriteString(g, static_cast<OTF2_StringRef>(i), u.strings[i].c_str());
    const OTF2_SystemTreeNodeRef first_host = several_hosts ? 1 : 0;
    if (several_hosts)
      OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, s_job, s_machine,
                                               OTF2_UNDEFINED_SYSTEM_TREE_NODE);
    for (std::size_t h = 0; h < hosts.size(); ++h)
      OTF2_GlobalDefWriter_WriteSystemTreeNode(
          g, static_cast<OTF2_SystemTreeNodeRef>(first_host + h), host_names[h], s_node,
          several_hosts ? 0 : OTF2_UNDEFINED_SYSTEM_TREE_NODE);
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      const local_definitions& d = ranks[r];
      const auto host = static_cast<OTF2_SystemTreeNodeRef>(
          first_host + (std::find(hosts.begin(), hosts.end(), d.host) - hosts.begin()));
      OTF2_GlobalDefWriter_WriteLocationGroup(g, d.rank, group_names[r],
                                              OTF2_LOCATION_GROUP_TYPE_PROCESS, host,
                                              OTF2_UNDEFINED_LOCATION_GROUP);
      for (std::size_t i = 0; i < loc_names[r].size(); ++i) {
        const bool metric = i == d.workers + metric_location;
        OTF2_GlobalDefWriter_WriteLocation(
            g, loc_of(d.rank, i), loc_names[r][i],
            metric ? OTF2_LOCATION_TYPE_METRIC : OTF2_LOCATION_TYPE_CPU_THREAD,
            i < d.events.size() ? d.events[i] : 0, d.rank);
      }
    }
    for (std::size_t i = 0; i < u.regions.size(); ++i) {
      const auto kind = static_cast<region_kind>(u.regions[i].kind);
      const OTF2_RegionRole role = kind == region_kind::task   ? OTF2_REGION_ROLE_TASK
                                   : kind == region_kind::idle ? OTF2_REGION_ROLE_ARTIFICIAL
                                                               : OTF2_REGION_ROLE_FUNCTION;
      OTF2_GlobalDefWriter_WriteRegion(g, static_cast<OTF2_RegionRef>(i), region_names[i],
                                       region_names[i], s_empty, role, OTF2_PARADIGM_USER,
                                       OTF2_REGION_FLAG_NONE, s_empty, 0, 0);
    }
    const OTF2_Type attr_types[fixed_attributes] = {
        OTF2_TYPE_UINT64, OTF2_TYPE_UINT64, OTF2_TYPE_UINT64, OTF2_TYPE_STRING,
        OTF2_TYPE_STRING, OTF2_TYPE_DOUBLE, OTF2_TYPE_DOUBLE, OTF2_TYPE_DOUBLE,
        OTF2_TYPE_UINT8,  OTF2_TYPE_STRING, OTF2_TYPE_UINT32};
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
    for (std::size_t i = 0; i < u.metrics.size(); ++i) {
      const auto id = static_cast<std::uint32_t>(i);
      OTF2_GlobalDefWriter_WriteMetricMember(
          g, id, metric_strings[i][0], metric_strings[i][1], OTF2_METRIC_TYPE_USER,
          static_cast<OTF2_MetricMode>(u.metrics[i].mode), OTF2_TYPE_DOUBLE, OTF2_BASE_DECIMAL, 0,
          metric_strings[i][2]);
      OTF2_MetricMemberRef member = id;
      OTF2_GlobalDefWriter_WriteMetricClass(g, id, 1, &member, OTF2_METRIC_ASYNCHRONOUS,
                                            OTF2_RECORDER_KIND_ABSTRACT);
    }
    if (ranks.size() > 1) {
      // The parcels' communicator: rank r of it is rank r's network location.
      std::vector<std::uint64_t> network_locations, rank_ids;
      for (auto& d : ranks) {
        network_locations.push_back(loc_of(d.rank, d.workers + network_location));
        rank_ids.push_back(rank_ids.size());
      }
      OTF2_GlobalDefWriter_WriteGroup(
          g, comm_locations_group, s_comm_locations, OTF2_GROUP_TYPE_COMM_LOCATIONS,
          OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE,
          static_cast<std::uint32_t>(network_locations.size()), network_locations.data());
      OTF2_GlobalDefWriter_WriteGroup(g, comm_ranks_group, s_comm_ranks, OTF2_GROUP_TYPE_COMM_GROUP,
                                      OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE,
                                      static_cast<std::uint32_t>(rank_ids.size()), rank_ids.data());
      OTF2_GlobalDefWriter_WriteComm(g, parcels_comm, s_comm, comm_ranks_group, OTF2_UNDEFINED_COMM,
                                     OTF2_COMM_FLAG_NONE);
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
  trace_group* group_ = nullptr;           // several ranks write this archive
  OTF2_EvtWriter* network_evt_ = nullptr;  // MpiSend/MpiRecv of this rank (several ranks)
  OTF2_AttributeList* network_attrs_ = nullptr;
  std::uint64_t start_local_ns_ = 0, end_local_ns_ = 0;
  clock_offset start_offset_, end_offset_;  // to rank 0's clock
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
