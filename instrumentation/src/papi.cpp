// PAPI counters per worker: /papi{locality#0/pool#P/worker#W}/EVENT and
// /papi{locality#0/total}/EVENT. Each worker creates, fills and starts its own event set on its own
// thread (worker_start hook); the sampler reads them (PAPI_read on an event set of another thread
// reads that thread's counters: PAPI uses the context of the event set's owner). An event PAPI
// cannot count here (unknown, not offered by this CPU, or offered but refused when added,
// started or read) is reported once, with the reason, and its counters report unavailable.
// Built with GRAIN_WITH_PAPI=1 (CMake's GRAIN_WITH_PAPI); papi_absent.cpp otherwise.
#if GRAIN_WITH_PAPI
#include <papi.h>
#include <pthread.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string_view>

#include "grain/ext/hooks.hpp"
#include "papi.hpp"

namespace grain::instrumentation::detail {
namespace {

unsigned long thread_id() {
  return static_cast<unsigned long>(pthread_self());
}

// What this machine offers, appended to every reason: the usual cause is a VM or a kernel
// that exposes fewer counters (or none) than the CPU has.
std::string machine_counters(int cidx) {
  const PAPI_hw_info_t* hw = PAPI_get_hardware_info();
  std::string vm = (hw && hw->virtualized)
                       ? std::string(", running in a VM (") + hw->virtual_vendor_string + ")"
                       : std::string();
  return "this machine has " + std::to_string(std::max(0, PAPI_num_cmp_hwctrs(cidx))) +
         " hardware counters" + vm;
}

int component_of(int code) {
  const int cidx = PAPI_get_event_component(code);
  return cidx < 0 ? 0 : cidx;
}

std::string component_reason(int code) {
  const int cidx = component_of(code);
  const PAPI_component_info_t* ci = PAPI_get_component_info(cidx);
  if (ci && ci->disabled)
    return std::string("PAPI component '") + ci->name + "' is disabled (" + ci->disabled_reason +
           "); " + machine_counters(cidx);
  return "PAPI cannot count it here; " + machine_counters(cidx);
}

// What PAPI's error codes leave out: the kernel's side. A KVM guest without a virtual PMU has no
// CPU PMU device (PAPI still reports the CPU's counters, from CPUID), and perf_event_paranoid
// above 2 forbids counting altogether.
std::string kernel_hint(int cidx) {
  const PAPI_component_info_t* ci = PAPI_get_component_info(cidx);
  if (!ci || std::string_view(ci->name) != "perf_event") return {};
  std::error_code ec;
  if (!std::filesystem::exists("/sys/bus/event_source/devices/cpu", ec) &&
      !std::filesystem::exists("/sys/bus/event_source/devices/cpu_core", ec))
    return "; the kernel offers no CPU performance-monitoring unit "
           "(no /sys/bus/event_source/devices/cpu)";
  std::ifstream paranoid("/proc/sys/kernel/perf_event_paranoid");
  int level = 0;
  if (paranoid >> level && level > 2)
    return "; kernel.perf_event_paranoid is " + std::to_string(level) +
           " (counting needs 2 or less)";
  return {};
}

// PAPI_query_event only says the event is defined for this CPU; whether the kernel lets this
// process count it (a KVM guest may expose a few counters but not the ones an event maps to)
// shows only when it is added, started and read. Try exactly that on this thread, so the
// status, the warning and the counters' descriptions say so before any worker starts.
std::string probe_failure(int code) {
  int es = PAPI_NULL;
  int r = PAPI_create_eventset(&es);
  if (r != PAPI_OK) return std::string("PAPI cannot create an event set: ") + PAPI_strerror(r);
  std::string step;
  long long value = 0;
  if ((r = PAPI_add_event(es, code)) != PAPI_OK) {
    step = "add it to an event set";
  } else if ((r = PAPI_start(es)) != PAPI_OK) {
    step = "start counting it";
  } else {
    if ((r = PAPI_read(es, &value)) != PAPI_OK) step = "read it";
    long long stopped = 0;
    PAPI_stop(es, &stopped);
  }
  PAPI_cleanup_eventset(es);
  PAPI_destroy_eventset(&es);
  if (step.empty()) return {};
  const int cidx = component_of(code);
  return "PAPI knows it but cannot " + step + " here (" + PAPI_strerror(r) + "); " +
         machine_counters(cidx) + kernel_hint(cidx);
}

}  // namespace

bool papi_init(std::string* error) {
  static std::once_flag once;
  static std::string init_error;
  std::call_once(once, [] {
    int r = PAPI_is_initialized() ? static_cast<int>(PAPI_VER_CURRENT)
                                  : PAPI_library_init(PAPI_VER_CURRENT);
    if (r != PAPI_VER_CURRENT) {
      init_error = r > 0 ? "PAPI library version mismatch"
                         : std::string("PAPI_library_init failed: ") + PAPI_strerror(r);
      return;
    }
    r = PAPI_thread_init(thread_id);
    if (r != PAPI_OK) init_error = std::string("PAPI_thread_init failed: ") + PAPI_strerror(r);
  });
  if (!init_error.empty() && error) *error = init_error;
  return init_error.empty();
}

std::vector<papi_event_status> papi_check(const std::vector<std::string>& events) {
  std::vector<papi_event_status> out;
  std::string err;
  const bool ok = papi_init(&err);
  for (auto& e : events) {
    papi_event_status s{e, false, ""};
    if (!ok) {
      s.reason = err;
    } else {
      int code = PAPI_NULL;
      if (PAPI_event_name_to_code(e.c_str(), &code) != PAPI_OK) {
        s.reason =
            "PAPI does not know this event (papi_avail and papi_native_avail list the "
            "events of this machine)";
      } else if (PAPI_query_event(code) != PAPI_OK) {
        s.reason = component_reason(code);
      } else {
        s.reason = probe_failure(code);
        s.available = s.reason.empty();
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

struct papi_session::impl {
  std::vector<papi_event_status> status;
  std::vector<int> codes;  // per event, PAPI_NULL when unavailable
  struct slot {
    std::atomic<bool> ready{false};
    int eventset = PAPI_NULL;
    std::vector<int> pos;  // event -> position in the event set, -1 if not added
    std::vector<long long> values, base;
    std::string pool;
  };
  std::unique_ptr<slot[]> slots;
  unsigned nw = 0;
  std::unique_ptr<std::atomic<bool>[]> warned;  // per event: add/start failure reported

  void worker_start(unsigned w) {
    if (w >= nw) return;
    slot& s = slots[w];
    PAPI_register_thread();
    int es = PAPI_NULL;
    int r = PAPI_create_eventset(&es);
    if (r != PAPI_OK) {
      spdlog::warn("grain: PAPI: cannot create an event set on worker {}: {}", w, PAPI_strerror(r));
      return;
    }
    int k = 0;
    for (std::size_t e = 0; e < codes.size(); ++e) {
      if (codes[e] == PAPI_NULL) continue;
      r = PAPI_add_event(es, codes[e]);
      if (r == PAPI_OK) {
        s.pos[e] = k++;
      } else if (!warned[e].exchange(true)) {
        spdlog::warn(
            "grain: PAPI event {} cannot be counted on worker {}: {}; its counters "
            "report unavailable",
            status[e].name, w, PAPI_strerror(r));
      }
    }
    s.values.assign(static_cast<std::size_t>(k), 0);
    s.base.assign(static_cast<std::size_t>(k), 0);
    if (k == 0 || (r = PAPI_start(es)) != PAPI_OK) {
      if (k > 0) spdlog::warn("grain: PAPI_start failed on worker {}: {}", w, PAPI_strerror(r));
      PAPI_cleanup_eventset(es);
      PAPI_destroy_eventset(&es);
      return;
    }
    s.eventset = es;
    s.ready.store(true, std::memory_order_release);
  }

  void worker_stop(unsigned w) {
    if (w >= nw) return;
    slot& s = slots[w];
    if (s.ready.exchange(false)) {
      std::vector<long long> tmp(s.values.size());
      PAPI_stop(s.eventset, tmp.data());
      PAPI_cleanup_eventset(s.eventset);
      PAPI_destroy_eventset(&s.eventset);
    }
    PAPI_unregister_thread();
  }
};

namespace {

std::atomic<papi_session::impl*> g_target{nullptr};

void hook_worker_start(unsigned w);
void hook_worker_stop(unsigned w);

// Chained into the single hook table in front of what was there (the tracer, a test's tool).
// Without a session our functions do nothing but call the previous ones.
hook_chain g_chain{
    runtime_hooks{.worker_start = &hook_worker_start, .worker_stop = &hook_worker_stop}};

void hook_worker_start(unsigned w) {
  if (auto p = g_chain.prev(&runtime_hooks::worker_start)) p(w);
  if (auto* s = g_target.load(std::memory_order_acquire)) s->worker_start(w);
}

void hook_worker_stop(unsigned w) {
  if (auto* s = g_target.load(std::memory_order_acquire)) s->worker_stop(w);
  if (auto p = g_chain.prev(&runtime_hooks::worker_stop)) p(w);
}

class papi_provider final : public counter_provider {
 public:
  explicit papi_provider(std::shared_ptr<papi_session::impl> s) : s_(std::move(s)) {
    const auto ne = s_->status.size();
    for (unsigned w = 0; w < s_->nw; ++w)
      for (std::size_t e = 0; e < ne; ++e)
        infos_.push_back(
            info(here_instance("pool#" + s_->slots[w].pool + "/worker#" + std::to_string(w)), e,
                 "counted on the thread of worker " + std::to_string(w)));
    for (std::size_t e = 0; e < ne; ++e)
      infos_.push_back(info(here_instance(), e, "sum over all workers"));
  }
  const std::vector<counter_info>& counters() const override { return infos_; }

  void sample(std::uint64_t, counter_reading* out) override {
    const auto ne = s_->status.size();
    std::vector<double>& tot = totals_;
    tot.assign(ne, 0);
    std::vector<char>& tot_ok = totals_ok_;
    tot_ok.assign(ne, 1);
    for (unsigned w = 0; w < s_->nw; ++w) {
      auto& sl = s_->slots[w];
      const bool ok = sl.ready.load(std::memory_order_acquire) &&
                      PAPI_read(sl.eventset, sl.values.data()) == PAPI_OK;
      for (std::size_t e = 0; e < ne; ++e) {
        counter_reading& r = out[w * ne + e];
        const int p = sl.pos.empty() ? -1 : sl.pos[e];
        if (!ok || p < 0) {
          r = {0, false};
          tot_ok[e] = 0;
        } else {
          const auto v =
              sl.values[static_cast<std::size_t>(p)] - sl.base[static_cast<std::size_t>(p)];
          r = {static_cast<double>(v), true};
          tot[e] += r.value;
        }
      }
    }
    for (std::size_t e = 0; e < ne; ++e)
      out[s_->nw * ne + e] = {tot_ok[e] ? tot[e] : 0, tot_ok[e] != 0};
  }

  void reset(std::uint64_t) override {
    for (unsigned w = 0; w < s_->nw; ++w) {
      auto& sl = s_->slots[w];
      if (sl.ready.load(std::memory_order_acquire) &&
          PAPI_read(sl.eventset, sl.values.data()) == PAPI_OK)
        sl.base = sl.values;
    }
  }

 private:
  counter_info info(const std::string& inst, std::size_t e, const std::string& where) const {
    const auto& st = s_->status[e];
    std::string d = "PAPI event " + st.name + ", " + where;
    if (!st.available) d += " (unavailable: " + st.reason + ")";
    return {"/papi{" + inst + "}/" + st.name, "count", d, counter_kind::monotonic};
  }
  std::shared_ptr<papi_session::impl> s_;
  std::vector<counter_info> infos_;
  std::vector<double> totals_;
  std::vector<char> totals_ok_;
};

}  // namespace

papi_session::papi_session(const std::vector<std::string>& events, runtime_core& rt)
    : impl_(std::make_shared<impl>()) {
  impl_->status = papi_check(events);
  for (auto& st : impl_->status) {
    int code = PAPI_NULL;
    if (st.available && PAPI_event_name_to_code(st.name.c_str(), &code) == PAPI_OK)
      impl_->codes.push_back(code);
    else
      impl_->codes.push_back(PAPI_NULL);
    if (!st.available)
      spdlog::warn(
          "grain: PAPI event {} is unavailable: {}. Its /papi counters report "
          "unavailable.",
          st.name, st.reason);
  }
  impl_->nw = rt.num_workers();
  impl_->slots = std::make_unique<impl::slot[]>(impl_->nw);
  impl_->warned = std::make_unique<std::atomic<bool>[]>(events.size());
  for (unsigned w = 0; w < impl_->nw; ++w) {
    impl_->slots[w].pos.assign(events.size(), -1);
    impl_->slots[w].pool = rt.pools()[rt.pool_of(w)].name;
  }
  bool any = false;
  for (auto& st : impl_->status) any = any || st.available;
  if (any) {
    g_target.store(impl_.get(), std::memory_order_release);
    g_chain.install();
  }
}

papi_session::~papi_session() {
  impl* expected = impl_.get();
  // The runtime joined its workers before its extensions go: no hook runs now.
  if (g_target.compare_exchange_strong(expected, nullptr)) g_chain.uninstall();
}

std::shared_ptr<counter_provider> papi_session::provider() {
  return std::make_shared<papi_provider>(impl_);
}

const std::vector<papi_event_status>& papi_session::status() const noexcept {
  return impl_->status;
}

}  // namespace grain::instrumentation::detail

#endif  // GRAIN_WITH_PAPI
