// The trace group over MPI (grain/instrumentation/trace_group.hpp): blocking collectives on a
// communicator of their own, under the transport's network lock (MPI_THREAD_SERIALIZED: one
// thread in MPI at a time; the workers' progress try-locks and skips a round meanwhile). Used
// at the start and the end of a multi-rank trace only, when every rank is there.
#include "mpi_trace_group.hpp"

#if GRAIN_WITH_MPI

#include <mpi.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "grain/clock.hpp"

namespace grain::distributed {

namespace {

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw std::runtime_error(std::string("grain: trace: ") + what + ": " +
                           std::string(text, static_cast<std::size_t>(len)));
}

int as_int(std::size_t n) {
  if (n > static_cast<std::size_t>(INT_MAX))
    throw std::runtime_error("grain: trace: a definition exchange above 2 GiB");
  return static_cast<int>(n);
}

class mpi_trace_group final : public instrumentation::trace_group {
 public:
  explicit mpi_trace_group(detail::spinlock& network) : network_(network) {
    std::lock_guard lk(network_);
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    int r = 0, n = 0;
    MPI_Comm_rank(comm_, &r);
    MPI_Comm_size(comm_, &n);
    rank_ = static_cast<unsigned>(r);
    size_ = static_cast<unsigned>(n);
  }
  ~mpi_trace_group() override {
    std::lock_guard lk(network_);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }

  unsigned rank() const noexcept override { return rank_; }
  unsigned size() const noexcept override { return size_; }

  void barrier() override {
    std::lock_guard lk(network_);
    check(MPI_Barrier(comm_), "MPI_Barrier");
  }

  void broadcast(void* data, std::size_t bytes, unsigned root) override {
    std::lock_guard lk(network_);
    check(MPI_Bcast(data, as_int(bytes), MPI_BYTE, static_cast<int>(root), comm_), "MPI_Bcast");
  }

  void gatherv(const void* in, std::size_t bytes, void* out, const std::size_t* counts,
               unsigned root) override {
    std::vector<int> n, at;
    if (rank_ == root) layout(counts, n, at);
    std::lock_guard lk(network_);
    check(MPI_Gatherv(in, as_int(bytes), MPI_BYTE, out, n.data(), at.data(), MPI_BYTE,
                      static_cast<int>(root), comm_),
          "MPI_Gatherv");
  }

  void scatterv(const void* in, const std::size_t* counts, void* out, std::size_t bytes,
                unsigned root) override {
    std::vector<int> n, at;
    if (rank_ == root) layout(counts, n, at);
    std::lock_guard lk(network_);
    check(MPI_Scatterv(in, n.data(), at.data(), MPI_BYTE, out, as_int(bytes), MPI_BYTE,
                       static_cast<int>(root), comm_),
          "MPI_Scatterv");
  }

  // On one host every process reads the same CLOCK_MONOTONIC, so each rank states its clock
  // against it (one bracketed reading, no message: tens of ns) and the offset to rank 0 is
  // the difference of the two. Only ranks on another host measure round trips (Cristian's
  // method: the answer of the shortest of ten, taken as arriving half-way through it), whose
  // error reaches half a round trip: milliseconds on a loaded machine, more than the
  // latency of the messages the trace pairs up.
  instrumentation::clock_offset measure_clock_offset(std::uint64_t (*now)()) override {
    const same_host_reading mine = read_against_monotonic(now);
    same_host_reading root = mine;
    std::lock_guard lk(network_);
    check(MPI_Bcast(&root, sizeof root, MPI_BYTE, 0, comm_), "MPI_Bcast (clock)");
    int same = mine.host == root.host && mine.host[0] != '\0';
    std::vector<int> same_as_root(rank_ == 0 ? size_ : 0);
    check(MPI_Gather(&same, 1, MPI_INT, same_as_root.data(), 1, MPI_INT, 0, comm_),
          "MPI_Gather (clock)");
    if (rank_ == 0) {
      for (unsigned r = 1; r < size_; ++r)
        if (!same_as_root[r]) answer_round_trips(r, now);
      return {};
    }
    if (same) return {root.ahead_ns - mine.ahead_ns, root.uncertainty_ns + mine.uncertainty_ns};
    return ask_round_trips(now);
  }

 private:
  static constexpr int clock_rounds = 10, clock_ask = 1, clock_answer = 2;

  // How far now() is ahead of CLOCK_MONOTONIC, and which host (kernel boot) that clock is.
  struct same_host_reading {
    std::array<char, 128> host{};  // boot id and host name
    std::int64_t ahead_ns = 0;
    double uncertainty_ns = 0;
  };

  static same_host_reading read_against_monotonic(std::uint64_t (*now)()) {
    same_host_reading r;
    std::string id;
    if (std::ifstream boot("/proc/sys/kernel/random/boot_id"); boot) std::getline(boot, id);
    char name[64] = {};
    // GRAIN_CLOCK_SYNC=round-trip: measure by round trips on one host too (to compare the
    // two methods on one machine).
    const char* sync = std::getenv("GRAIN_CLOCK_SYNC");
    const bool round_trips = sync && std::string_view(sync) == "round-trip";
    if (!round_trips && !id.empty() && gethostname(name, sizeof name - 1) == 0) {
      id += ' ';
      id += name;
      id.copy(r.host.data(), std::min(id.size(), r.host.size() - 1));
    }
    std::uint64_t narrowest = std::numeric_limits<std::uint64_t>::max();
    for (int k = 0; k < clock_rounds; ++k) {
      const std::uint64_t before = grain::detail::monotonic_ns(), t = now(),
                          after = grain::detail::monotonic_ns();
      if (after - before < narrowest) {
        narrowest = after - before;
        r.ahead_ns =
            static_cast<std::int64_t>(t) - static_cast<std::int64_t>(before + (after - before) / 2);
        r.uncertainty_ns = static_cast<double>(after - before) / 2;
      }
    }
    return r;
  }

  void answer_round_trips(unsigned r, std::uint64_t (*now)()) {
    for (int k = 0; k < clock_rounds; ++k) {
      std::uint64_t t = 0;
      check(MPI_Recv(&t, 1, MPI_UINT64_T, static_cast<int>(r), clock_ask, comm_, MPI_STATUS_IGNORE),
            "MPI_Recv (clock)");
      t = now();
      check(MPI_Send(&t, 1, MPI_UINT64_T, static_cast<int>(r), clock_answer, comm_),
            "MPI_Send (clock)");
    }
  }

  instrumentation::clock_offset ask_round_trips(std::uint64_t (*now)()) {
    instrumentation::clock_offset best;
    std::uint64_t best_rtt = std::numeric_limits<std::uint64_t>::max();
    for (int k = 0; k < clock_rounds; ++k) {
      const std::uint64_t t1 = now();
      std::uint64_t t_root = 0;
      check(MPI_Send(&t1, 1, MPI_UINT64_T, 0, clock_ask, comm_), "MPI_Send (clock)");
      check(MPI_Recv(&t_root, 1, MPI_UINT64_T, 0, clock_answer, comm_, MPI_STATUS_IGNORE),
            "MPI_Recv (clock)");
      const std::uint64_t t2 = now();
      if (t2 - t1 < best_rtt) {
        best_rtt = t2 - t1;
        best.offset_ns =
            static_cast<std::int64_t>(t_root) - static_cast<std::int64_t>(t1 + (t2 - t1) / 2);
        best.uncertainty_ns = static_cast<double>(best_rtt) / 2;
      }
    }
    return best;
  }

  void layout(const std::size_t* counts, std::vector<int>& n, std::vector<int>& at) const {
    std::size_t offset = 0;
    for (unsigned r = 0; r < size_; ++r) {
      n.push_back(as_int(counts[r]));
      at.push_back(as_int(offset));
      offset += counts[r];
    }
  }

  detail::spinlock& network_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  unsigned rank_ = 0, size_ = 1;
};

}  // namespace

std::unique_ptr<instrumentation::trace_group> make_mpi_trace_group(detail::spinlock& network) {
  return std::make_unique<mpi_trace_group>(network);
}

}  // namespace grain::distributed

#else

namespace grain::distributed {
std::unique_ptr<instrumentation::trace_group> make_mpi_trace_group(detail::spinlock&) {
  return nullptr;
}
}  // namespace grain::distributed

#endif
