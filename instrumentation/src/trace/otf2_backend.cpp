// OTF2 back end: a converter thread turns the chunks the workers publish into OTF2 events, one
// event writer per worker location (OTF2 writes a chunk to its file when full); the METRIC location
// "runtime counters" and the "policy engine" location are written under the session's aux mutex;
// definitions are written once, at the end, by the stopping thread.
#include <pthread.h>
#include <stdlib.h>

#include <otf2/OTF2_Pthread_Locks.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "grain/clock.hpp"
#include "grain/instrumentation/counters.hpp"
#include "session.hpp"

namespace grain::instrumentation::trace_detail {
namespace {

namespace fs = std::filesystem;

OTF2_FlushType pre_flush(void*, OTF2_FileType, OTF2_LocationRef, void*, bool) {
  return OTF2_FLUSH;
}
OTF2_TimeStamp post_flush(void*, OTF2_FileType, OTF2_LocationRef) {
  return now_ns();
}
OTF2_FlushCallbacks flush_callbacks = {pre_flush, post_flush};

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
void pool_free_all(void*, OTF2_FileType, OTF2_LocationRef, void** data, bool final) {
  auto* p = static_cast<chunk_pool*>(*data);
  if (!p) return;
  if (!final) {
    p->used = 0;
    return;
  }
  for (void* m : p->chunks) std::free(m);
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
  explicit otf2_backend(session_core& s) {
    const fs::path dir = fs::path(s.path).parent_path();
    archive_ = OTF2_Archive_Open(dir.c_str(), "traces", OTF2_FILEMODE_WRITE, 1024 * 1024,
                                 4 * 1024 * 1024, OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
    if (!archive_) throw std::runtime_error("grain: cannot create the OTF2 archive " + s.path);
    OTF2_Archive_SetFlushCallbacks(archive_, &flush_callbacks, nullptr);
    OTF2_Archive_SetMemoryCallbacks(archive_, &memory_callbacks, nullptr);
    OTF2_Archive_SetSerialCollectiveCallbacks(archive_);
    OTF2_Pthread_Archive_SetLockingCallbacks(archive_, nullptr);
    OTF2_Archive_SetCreator(archive_, "grain");
    OTF2_Archive_SetDescription(archive_, "grain tasks, counters and policy decisions");
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
    if (archive_) OTF2_Archive_Close(archive_);
  }

  OTF2_LocationRef loc(std::uint64_t index) const {
    return (static_cast<std::uint64_t>(rank_) << 32) | index;
  }

  void open_workers(session_core& s) override {
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
      for (chunk* c = b.take_published(); c;) {
        chunk* next = c->next;
        convert(w, c->recs, c->recs + c->count);
        b.give_back(c);
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
        child = p->guid;
        continue;
      }
      if (rc != OTF2_SUCCESS) ++worker_errors_;
    }
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
    if (OTF2_EvtWriter_Metric(evt, nullptr, ts, metric, 1, &type, &value) != OTF2_SUCCESS)
      ++aux_errors_;
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

  void decision(session_core& s, const decision_record& r, bool integer_knob,
                std::uint64_t ts) override {
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
    if (integer_knob) {
      bad += OTF2_EvtWriter_ParameterInt(policy_evt_, nullptr, ts, 2,
                                         static_cast<std::int64_t>(r.old_value)) != OTF2_SUCCESS;
      bad += OTF2_EvtWriter_ParameterInt(policy_evt_, nullptr, ts, 3,
                                         static_cast<std::int64_t>(r.new_value)) != OTF2_SUCCESS;
    }
    knob_metric(r.knob, r.new_value, ts);
    bad += OTF2_EvtWriter_Leave(policy_evt_, nullptr, ts, region) != OTF2_SUCCESS;
    aux_errors_ += static_cast<std::uint64_t>(bad);
  }

  void finalize(session_core& s, std::uint64_t t_end, trace_stats& st) override {
    if (!archive_) return;
    // The rest of the workers' records: published chunks, then the chunks being written.
    stop_converter_.store(true, std::memory_order_release);
    if (converter_.joinable()) converter_.join();
    drain();
    for (unsigned w = 0; w < nw_; ++w) {
      auto& b = s.workers[w];
      if (b.current) {
        convert(w, b.current->recs, b.cur);
        b.cur = b.current->recs;
      }
      // Close what is still open (idle workers at stop; everything on a signal).
      for (std::size_t j = b.stack.size(); j-- > 0;) {
        ++b.events;
        if (OTF2_EvtWriter_Leave(writers_[w], nullptr, t_end, b.stack[j].region) != OTF2_SUCCESS)
          ++worker_errors_;
      }
      b.stack.clear();
    }
    std::vector<std::uint64_t> nevents(nw_ + 2, 0);
    for (unsigned w = 0; w < nw_; ++w) {
      OTF2_EvtWriter_GetNumberOfEvents(writers_[w], &nevents[w]);
      OTF2_Archive_CloseEvtWriter(archive_, writers_[w]);
      OTF2_AttributeList_Delete(attrs_[w]);
    }
    writers_.clear();
    attrs_.clear();
    OTF2_EvtWriter_GetNumberOfEvents(metric_evt_, &nevents[nw_]);
    OTF2_EvtWriter_GetNumberOfEvents(policy_evt_, &nevents[nw_ + 1]);
    OTF2_Archive_CloseEvtWriter(archive_, metric_evt_);
    OTF2_Archive_CloseEvtWriter(archive_, policy_evt_);
    OTF2_AttributeList_Delete(policy_attrs_);
    OTF2_Archive_CloseEvtFiles(archive_);

    // Local definition files (empty: our ids are global already).
    OTF2_Archive_OpenDefFiles(archive_);
    for (unsigned i = 0; i < nw_ + 2; ++i) {
      OTF2_DefWriter* dw = OTF2_Archive_GetDefWriter(archive_, loc(i));
      OTF2_Archive_CloseDefWriter(archive_, dw);
    }
    OTF2_Archive_CloseDefFiles(archive_);

    write_global_defs(s, t_end, nevents);
    OTF2_Archive_Close(archive_);
    archive_ = nullptr;

    std::error_code ec;
    const fs::path dir = fs::path(s.path).parent_path() / "traces";
    for (auto& e : fs::directory_iterator(dir, ec))
      if (e.path().extension() == ".evt") st.bytes += e.file_size(ec);
    st.errors += aux_errors_ + worker_errors_;
  }

  void write_global_defs(session_core& s, std::uint64_t t_end,
                         const std::vector<std::uint64_t>& nevents) {
    const auto regions = s.regions.all();
    char host[256] = "localhost";
    ::gethostname(host, sizeof host - 1);

    // Make every string first, then write strings before what refers to them.
    const OTF2_StringRef s_empty = str("");
    std::vector<OTF2_StringRef> region_names;
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
    for (auto& [n, d] : fixed_attrs) attr_strings.emplace_back(str(n), str(d));
    std::vector<OTF2_StringRef> trigger_names;
    for (auto& t : trigger_list_) trigger_names.push_back(str("trigger:" + t));
    const OTF2_StringRef s_trigger_desc = str("counter value behind the decision");
    const OTF2_StringRef s_host = str(host);
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
    OTF2_Archive_CloseGlobalDefWriter(archive_, g);
  }

 private:
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
