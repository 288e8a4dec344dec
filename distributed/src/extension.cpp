// The distributed extension: joins the MPI job (when started by mpirun), makes the parcel port
// the process's, progresses the network as background work of the default pool, registers
// the /parcels counters, runs the end of the program across ranks, and leaves MPI last.
#include "grain/distributed/extension.hpp"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>

#include "collectives_counters.hpp"
#include "collectives_engine.hpp"
#include "grain/ext/runtime_core.hpp"
#include "grain/instrumentation/counters.hpp"
#include "grain/instrumentation/trace_group.hpp"
#include "mpi_trace_group.hpp"
#include "parcel_counters.hpp"
#include "parcelport.hpp"
#include "peer_watch.hpp"
#include "trace_agreement.hpp"

namespace grain::distributed {

namespace {

class distributed_extension final : public extension {
 public:
  std::string name() const override { return "distributed"; }

  std::vector<option_spec> option_specs() const override {
    return {{"coalescing",
             "coalesce the parcels of these actions (docs/coalescing.md; knobs "
             "coalescing.ACTION.parcels/.interval)",
             true, true, "ACTION[,ACTION]"},
            {"mpi-threads",
             "how grain asks MPI for threads: single (MPI_THREAD_SINGLE, every call serialised "
             "by grain's lock, as HPX's hpx.parcel.mpi.multithreaded=0), serialized "
             "(MPI_THREAD_SERIALIZED), or auto (single with Open MPI, else serialized; the "
             "default; docs/distributed.md)",
             true, false, "auto|single|serialized"},
            {"compact-parcels",
             "send a lone parcel with a payload of at most 64 bytes as its payload alone, its "
             "action and continuation in the MPI tag (docs/distributed.md, \"Compact "
             "parcels\"; default on)",
             true, false, "on|off"},
            {"collectives-timeout",
             "fail a collective generation that waits longer than MS milliseconds for a "
             "contribution or a locality (docs/collectives.md; default 60000)",
             true, false, "MS"}};
  }

  void configure(const options& opts, runtime_core& rt) override {
    std::unique_ptr<transport> t;
    mpi_threads threads = mpi_threads::automatic;
    try {
      threads = parse_mpi_threads(opts.get("mpi-threads", "auto"));
    } catch (const std::invalid_argument& e) {
      throw option_error(e.what());
    }
    try {
      t = make_mpi_transport(threads);
    } catch (const std::exception& e) {
      throw option_error(std::string("cannot join the MPI job: ") + e.what());
    }
    port_ = std::make_unique<parcelport>(std::move(t));
    if (!port_->make_current_if_none())
      throw option_error("a distributed runtime is already running in this process");
    rt.set_locality(port_->rank(), port_->size());
    // Before the trace extension is configured: a trace of several ranks is one archive.
    if (port_->distributed()) {
      trace_group_ = make_mpi_trace_group(port_->network()->network_mutex());
      // Before any collective step of the trace: ranks that trace differently stop together.
      agree_on_tracing(*trace_group_, tracing_choice(opts));
      instrumentation::set_trace_group(trace_group_.get());
    }
    if (opts.has("compact-parcels")) {
      const std::string v = opts.get("compact-parcels", "on");
      if (v != "on" && v != "off")
        throw option_error("--grain:compact-parcels takes on or off, not '" + v + "'");
      port_->set_compact_parcels(v == "on");
    }
    for (const std::string& list : opts.get_all("coalescing")) enable_listed(list);
    if (opts.has("collectives-timeout"))
      collectives::set_timeout_ms(static_cast<std::uint64_t>(
          opts.get_int("collectives-timeout", 60000, 1, 24LL * 3600 * 1000)));
    make_collectives();
    // The /parcels and /coalescing counters exist from here on, before the instrumentation is
    // configured: --grain:print-counter checks its names and --grain:list-counters lists them
    // at start-up, as it does the /collectives counters'.
    if (port_->distributed()) {
      counters_ = register_parcel_counters(instrumentation::registry(), *port_);
      port_->coalescing()->publish_counters(&instrumentation::registry());
    }
    if (port_->distributed())
      spdlog::debug("grain: locality#{} of {} ({})", port_->rank(), port_->size(),
                    port_->network()->description());
  }

  void start(runtime_core& rt) override {
    if (!port_->distributed()) return;
    // The parcels' round first: its MPI test may complete a collective's requests, which the
    // collectives' round then finds in the same pass instead of the next.
    background_ = rt.add_background_work(0, [p = port_.get()] { return p->progress(); });
    collectives_background_ =
        rt.add_background_work(0, [c = collectives_.get()] { return c->progress(); });
    watch_ = std::make_unique<peer_watch>(
        port_->rank(), port_->network()->identities(), [this](std::uint32_t r) { peer_died(r); },
        [this] { end_after_death(); }, 50, grace_s * 1000);
  }

  void quiesce(runtime_core& rt) override { port_->quiesce_root(rt); }

  void stop(runtime_core& rt) override {
    watch_.reset();
    stop_collectives(rt);
    if (background_ >= 0) rt.remove_background_work(background_);
    background_ = -1;
    for (int id : counters_) instrumentation::registry().remove(id);
    counters_.clear();
    if (port_->coalescing()) port_->coalescing()->publish_counters(nullptr);
    // The trace stopped before us (extensions stop in reverse order); its communicator goes
    // before MPI does.
    instrumentation::set_trace_group(nullptr);
    trace_group_.reset();
    port_->finalize();
    port_->make_current(false);
  }

  void start_failed(runtime_core& rt) noexcept override {
    if (!port_ || !port_->distributed()) return;
    spdlog::error(
        "grain: locality#{} of {}: the runtime could not start here (the error follows); this "
        "process leaves the MPI job without MPI_Finalize so that mpirun ends the job",
        rt.locality(), rt.num_localities());
    port_->abandon();
  }

  ~distributed_extension() override {
    watch_.reset();
    // A start-up that failed after configure: the counters must not outlive the engine.
    for (int id : collectives_counters_) instrumentation::registry().remove(id);
    for (int id : counters_) instrumentation::registry().remove(id);
    if (port_ && port_->coalescing()) port_->coalescing()->publish_counters(nullptr);
    collectives_.reset();
    if (trace_group_) instrumentation::set_trace_group(nullptr);
    trace_group_.reset();
    if (port_) port_->make_current(false);
  }

 private:
  // On the peer watch's thread: the futures waiting on the dead rank learn it first.
  void peer_died(std::uint32_t r) {
    const process_identity& id = port_->network()->identities()[r];
    const std::string why = "locality#" + std::to_string(r) + " (pid " + std::to_string(id.pid) +
                            " on " + id.host + ") died";
    const std::size_t failed = port_->fail_calls_to(r, why);
    if (collectives_) collectives_->fail_all(why);
    spdlog::error(
        "grain: locality#{}: {}; {} call(s) waiting on it failed with that error; this locality "
        "ends in {} s unless the job ends first",
        port_->rank(), why, failed, grace_s);
    died_.push_back(r);
  }

  // The job cannot go on without the rank (the end of the program and every collective need
  // it): end this process, naming it, instead of waiting for ever.
  void end_after_death() {
    std::string names;
    for (std::uint32_t r : died_)
      names += (names.empty() ? "locality#" : ", locality#") + std::to_string(r);
    spdlog::error("grain: locality#{}: ending: {} died (exit status 1)", port_->rank(), names);
    spdlog::default_logger()->flush();
    std::fflush(nullptr);
    std::_Exit(1);
  }

  static constexpr int grace_s = 2;

  // Every rank duplicates its collectives' communicators here (MPI_Comm_dup is collective:
  // every rank starts its runtime). One locality: collectives complete locally.
  // In configure, so that --grain:print-counter can name the /collectives counters. Every
  // rank duplicates its collectives' communicators here (MPI_Comm_dup is collective: every
  // rank configures its runtime). One locality: collectives complete locally.
  void make_collectives() {
    std::unique_ptr<collective_network> net;
    if (port_->distributed()) {
      try {
        net = make_mpi_collective_network(port_->network()->network_mutex());
      } catch (const std::exception& e) {
        throw option_error(std::string("cannot set up collectives: ") + e.what());
      }
    }
    collectives_ =
        std::make_unique<collectives_engine>(port_->rank(), port_->size(), std::move(net));
    collectives_->make_current(true);
    collectives_counters_ =
        register_collectives_counters(instrumentation::registry(), *collectives_);
  }

  void stop_collectives(runtime_core& rt) {
    if (!collectives_) return;
    if (collectives_background_ >= 0) rt.remove_background_work(collectives_background_);
    collectives_background_ = -1;
    for (int id : collectives_counters_) instrumentation::registry().remove(id);
    collectives_counters_.clear();
    collectives_->shutdown();
    collectives_->make_current(false);
    collectives_.reset();  // frees its communicators before the transport leaves MPI
  }

  // --grain:coalescing=a,b: every name must be an action of this program.
  void enable_listed(const std::string& list) {
    std::size_t at = 0;
    while (at <= list.size()) {
      const std::size_t end = std::min(list.find(',', at), list.size());
      const std::string name = list.substr(at, end - at);
      at = end + 1;
      if (name.empty()) continue;
      const detail::action_info* a = detail::find_action(std::string_view(name));
      if (!a)
        throw option_error("--grain:coalescing: '" + name +
                           "' is not an action of this program (or several have that name; "
                           "give the full name)");
      if (!port_->coalescing()) continue;  // one locality: nothing to coalesce
      try {
        port_->coalescing()->enable(*a);
      } catch (const std::invalid_argument& e) {
        throw option_error(std::string("--grain:coalescing: ") + e.what());
      }
    }
  }

  std::unique_ptr<parcelport> port_;
  std::unique_ptr<peer_watch> watch_;  // ranks on this host; distributed runs only
  std::vector<std::uint32_t> died_;    // on the watch's thread
  std::unique_ptr<instrumentation::trace_group> trace_group_;
  int background_ = -1;
  std::vector<int> counters_;
  std::unique_ptr<collectives_engine> collectives_;
  int collectives_background_ = -1;
  std::vector<int> collectives_counters_;
};

}  // namespace

std::unique_ptr<extension> make_extension() {
  return std::make_unique<distributed_extension>();
}

bool serve_if_not_root(runtime_core& rt) {
  parcelport* p = parcelport::current();
  if (!p || !p->distributed() || p->rank() == 0) return false;
  p->serve_until_shutdown(rt);
  return true;
}

}  // namespace grain::distributed

namespace grain::detail {

bool enable_coalescing(const action_info& a) {
  distributed::parcelport* p = distributed::parcelport::current();
  if (!p || !p->coalescing()) return false;
  p->coalescing()->enable(a);
  return true;
}

}  // namespace grain::detail
