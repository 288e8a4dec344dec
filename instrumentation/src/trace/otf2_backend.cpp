// OTF2 back end: a converter thread turns the chunks the workers publish into OTF2 events (when
// a core is spare: convert_pacing.hpp), one event writer per worker location (OTF2 writes a
// chunk to its file when full); the METRIC location "runtime counters" (counters and knobs) and
// the "policy engine" location (decisions, point events) are written under the session's aux mutex;
// definitions are written once, at the end, by the stopping thread. With several ranks (an
// MPI job) every rank writes its own locations into one archive through OTF2's collective
// callbacks; rank 0 unifies the definitions (definitions_exchange.hpp) and the ranks' clocks
// are tied to rank 0's by offsets measured at the start and at the end. The archive's layout is
// otf2_layout.hpp's, its definitions otf2_definitions.cpp's, OTF2's error and memory callbacks
// and the state after a failed write otf2_io.cpp's; point events are written from their row in
// event_kinds.hpp.
#if GRAIN_WITH_OTF2  // CMake GRAIN_WITH_OTF2; the stub below otherwise
#include <cstdlib>   // first: OTF2_Pthread_Locks.h calls malloc and free without including them

#include <otf2/OTF2_Pthread_Locks.h>
#include <otf2/otf2.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
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
#include "otf2_definitions.hpp"
#include "otf2_io.hpp"
#include "otf2_layout.hpp"
#include "session_core.hpp"

namespace grain::instrumentation::trace_detail {
namespace {

namespace fs = std::filesystem;

class otf2_backend final : public backend {
 public:
  explicit otf2_backend(session_core& s) : failure_(s.path) {
    const fs::path dir = fs::path(s.path).parent_path();
    archive_ =
        OTF2_Archive_Open(dir.c_str(), "traces", OTF2_FILEMODE_WRITE, std::uint64_t{1} << 20,
                          std::uint64_t{4} << 20, OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
    if (!archive_) throw std::runtime_error("grain: cannot create the OTF2 archive " + s.path);
    OTF2_Archive_SetFlushCallbacks(archive_, otf2_flush_callbacks(), failure_.flag());
    grave_.failed = failure_.flag();
    OTF2_Archive_SetMemoryCallbacks(archive_, otf2_memory_callbacks(), &grave_);
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
  }

  ~otf2_backend() override {
    stop_converter_.store(true);
    if (converter_.joinable()) converter_.join();
    if (archive_ && !failed()) OTF2_Archive_Close(archive_);  // see finalize
  }

  OTF2_LocationRef loc(std::uint64_t index) const { return otf2_location(rank_, index); }
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

  // The first failed write ends the recording (otf2_io.hpp's otf2_failure).
  bool failed() { return failure_.failed(); }
  void fail() { failure_.fail(); }

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
        index_[i] = ids_.metric(v.name, it != infos.end() ? it->second.unit : std::string(),
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
    std::string description = "value of the knob " + knob + " (a step: valid until the next)";
    const auto id = ids_.metric(name, "", description, OTF2_METRIC_ABSOLUTE_NEXT);
    write_metric(metric_evt_, ts, id, value);  // a METRIC location (tracing.md, "Other readers")
    knob_values_[knob] = value;
  }

  void decision(session_core& s, const decision_record& r, std::uint64_t ts) override {
    if (failed()) return;
    if (!knob_values_.count(r.knob)) knob_metric(r.knob, r.old_value, ts);
    const std::uint32_t region = s.regions.get("policy:" + r.rule, region_kind::policy);
    OTF2_AttributeList* a = policy_attrs_;
    OTF2_AttributeValue v;
    v.stringRef = ids_.string(r.rule);
    OTF2_AttributeList_AddAttribute(a, attr_rule, OTF2_TYPE_STRING, v);
    v.stringRef = ids_.string(r.knob);
    OTF2_AttributeList_AddAttribute(a, attr_knob, OTF2_TYPE_STRING, v);
    OTF2_AttributeList_AddDouble(a, attr_old, r.old_value);
    OTF2_AttributeList_AddDouble(a, attr_new, r.new_value);
    OTF2_AttributeList_AddDouble(a, attr_requested, r.requested);
    OTF2_AttributeList_AddUint8(a, attr_clamped, r.clamped ? 1 : 0);
    v.stringRef = ids_.string(r.reason);
    OTF2_AttributeList_AddAttribute(a, attr_reason, OTF2_TYPE_STRING, v);
    for (auto& [name, value] : r.trigger)
      OTF2_AttributeList_AddDouble(a, ids_.named_attribute("trigger:" + name), value);
    int bad = 0;
    bad += OTF2_EvtWriter_Enter(policy_evt_, a, ts, region) != OTF2_SUCCESS;
    bad += OTF2_EvtWriter_ParameterString(policy_evt_, nullptr, ts, param_reason,
                                          ids_.string(r.reason)) != OTF2_SUCCESS;
    bad += OTF2_EvtWriter_ParameterString(policy_evt_, nullptr, ts, param_knob,
                                          ids_.string(r.knob)) != OTF2_SUCCESS;
    if (r.type != knob_type::real) {  // integer and enumeration knobs
      bad += OTF2_EvtWriter_ParameterInt(policy_evt_, nullptr, ts, param_old,
                                         static_cast<std::int64_t>(r.old_value)) != OTF2_SUCCESS;
      bad += OTF2_EvtWriter_ParameterInt(policy_evt_, nullptr, ts, param_new,
                                         static_cast<std::int64_t>(r.new_value)) != OTF2_SUCCESS;
    }
    knob_metric(r.knob, r.new_value, ts);
    bad += OTF2_EvtWriter_Leave(policy_evt_, nullptr, ts, region) != OTF2_SUCCESS;
    aux_errors_ += static_cast<std::uint64_t>(bad);
    if (bad) fail();
  }

  // A point event (event_kinds.hpp): a ParameterString "event" on the policy engine, its
  // fields as named double attributes.
  void event(session_core&, const event_record& r, std::uint64_t ts) override {
    if (failed()) return;
    for (auto& [name, value] : r.fields)
      OTF2_AttributeList_AddDouble(policy_attrs_, ids_.named_attribute(r.field_name(name)), value);
    if (OTF2_EvtWriter_ParameterString(policy_evt_, policy_attrs_, ts, param_event,
                                       ids_.string(r.full_name())) != OTF2_SUCCESS) {
      ++aux_errors_;
      fail();
    }
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
      // A signal or abort_job here: nothing collective; the events stay, without definitions.
      failure_.fail_because(
          "stopped before the job's end (a signal, or grain::abort_job after an error); a "
          "multi-rank archive is completed only when every rank ends normally");
    } else {
      if (group_) end_local_ns_ = now_ns();
      if (group_) end_offset_ = group_->measure_clock_offset(&now_ns);
      // All ranks go on, or all give up: one that cannot write must not leave the others
      // waiting in OTF2's collectives.
      if (all_ok()) finish_archive(s, t_end, nevents);
    }
    failed();  // an error OTF2 only reported to the callback

    const fs::path dir = fs::path(s.path).parent_path();
    st.bytes += otf2_event_bytes(dir);
    st.errors += aux_errors_ + worker_errors_;
    if (failed()) {
      // Rank 0 renames the archive the ranks share.
      if (!group_ || rank_ == 0) mark_otf2_incomplete(dir);
      st.complete = false;
      st.path = s.path + ".incomplete";
      st.error = failure_.error();
    }
  }

  // No rank failed (several agree after each step of the end: OTF2 closes collectively).
  bool all_ok() {
    const bool ok = group_ ? all_ranks_agree(*group_, !failed()) : !failed();
    if (!ok && !failed()) failure_.fail_because("another rank could not write its part");
    return ok;
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
    for (auto& [name, kind] : s.regions.all())
      d.regions.push_back({name, static_cast<std::uint8_t>(kind)});
    ids_.describe(d);
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
    check(OTF2_Archive_CloseEvtFiles(archive_));
    if (!all_ok()) return;
    const local_definitions mine = local_defs(s, t_end, nevents);
    std::vector<local_definitions> ranks;
    id_mappings my_mappings;
    unified_definitions unified;
    if (group_) {
      exchange_definitions(*group_, mine, ranks, unified, my_mappings);
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
        if (!write_mapping(dw, OTF2_MAPPING_STRING, my_mappings.strings) ||
            !write_mapping(dw, OTF2_MAPPING_REGION, my_mappings.regions) ||
            !write_mapping(dw, OTF2_MAPPING_METRIC, my_mappings.metrics) ||
            !write_mapping(dw, OTF2_MAPPING_ATTRIBUTE, my_mappings.attributes))
          fail();
        check(OTF2_DefWriter_WriteClockOffset(dw, start_local_ns_, start_offset_.offset_ns,
                                              start_offset_.uncertainty_ns));
        check(OTF2_DefWriter_WriteClockOffset(dw, end_local_ns_, end_offset_.offset_ns,
                                              end_offset_.uncertainty_ns));
      }
      check(OTF2_Archive_CloseDefWriter(archive_, dw));
    }
    check(OTF2_Archive_CloseDefFiles(archive_));
    if (!all_ok()) return;
    if ((rank_ == 0 || !group_) && !write_global_definitions(archive_, s, unified, ranks)) fail();
    if (!all_ok()) return;
    check(OTF2_Archive_Close(archive_));
    archive_ = nullptr;
    all_ok();  // a close that failed on one rank leaves the archive incomplete for all
  }

 private:
  otf2_error_capture capture_;  // first: OTF2's messages are ours while the archive lives
  detail::run_info run_;
  otf2_failure failure_;
  chunk_graveyard grave_;  // outlives archive_ (declared before it, closed in the destructor)
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
  local_ids ids_;  // strings, metrics and named attributes (aux mutex held)
  std::map<std::string, double> knob_values_;
  std::uint64_t layout_ = ~0ull;
  std::vector<std::uint32_t> index_;
  std::uint64_t aux_errors_ = 0;
};

}  // namespace

std::unique_ptr<backend> make_otf2_backend(session_core& s) {
  return std::make_unique<otf2_backend>(s);
}

}  // namespace grain::instrumentation::trace_detail

#else  // without OTF2 the --grain:trace-format option refuses otf2 before a session starts
#include <stdexcept>

#include "backend.hpp"

namespace grain::instrumentation::trace_detail {
std::unique_ptr<backend> make_otf2_backend(session_core&) {
  throw std::logic_error("grain: OTF2 is not built in (GRAIN_WITH_OTF2=OFF)");
}
}  // namespace grain::instrumentation::trace_detail
#endif  // GRAIN_WITH_OTF2
