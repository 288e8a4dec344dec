// The collectives' MPI side (collective_network.hpp): one communicator per kind of collective,
// MPI_Iallgather / MPI_Igather / MPI_Ibcast over bytes, tested as background work. Every MPI
// call is made under the transport's lock, taken with try_lock like the transport does
// (MPI_THREAD_SERIALIZED; a worker never waits for another one's MPI call).
//
// Small blocks on few ranks skip MPI's non-blocking collectives: Open MPI 4.1 runs them
// through libnbc's schedules, whose MPI_Test rounds cost 2-3x a blocking MPI_Allreduce for 8
// bytes on one node, while a direct exchange of the blocks with MPI_Isend/MPI_Irecv costs the
// same as MPI_Allreduce (docs/collectives.md, "Latency"). The exchange runs on communicators
// of its own; every rank chooses the same path for a generation because the choice depends
// only on the kind, the block size (fixed by the value's type) and the number of ranks.
#include "collective_network.hpp"

#if GRAIN_WITH_MPI

#include <mpi.h>

#include <array>
#include <atomic>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace grain::distributed {

namespace {

std::string mpi_error(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(text, static_cast<std::size_t>(len));
}

class mpi_collective_network final : public collective_network {
 public:
  explicit mpi_collective_network(detail::spinlock& network) : network_(network) {
    comms_.fill(MPI_COMM_NULL);
    direct_.fill(MPI_COMM_NULL);
    std::lock_guard lock(network_);
    for (auto* set : {&comms_, &direct_})
      for (MPI_Comm& c : *set) {
        const int rc = MPI_Comm_dup(MPI_COMM_WORLD, &c);
        if (rc != MPI_SUCCESS)
          throw std::runtime_error("grain collectives: MPI_Comm_dup failed: " + mpi_error(rc));
        MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
      }
    int r = 0, n = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    rank_ = r;
    size_ = n;
  }
  ~mpi_collective_network() override { close(); }

  bool start(std::uint64_t id, detail::collective_kind kind, std::uint32_t root,
             std::span<const char> send, std::span<char> recv) override {
    std::unique_lock lock(network_, std::try_to_lock);
    if (!lock.owns_lock()) return false;
    if (uses_direct_exchange(kind, send.size(), static_cast<std::uint32_t>(size_))) {
      start_direct(id, kind, static_cast<int>(root), send, recv);
      count_.store(ops_.size(), std::memory_order_relaxed);
      return true;
    }
    MPI_Comm c = comms_[static_cast<std::size_t>(kind)];
    // MPI's C interface takes non-const buffers for sends in some versions.
    void* s = const_cast<char*>(send.data());
    const int n = static_cast<int>(send.size());
    MPI_Request req = MPI_REQUEST_NULL;
    int rc = MPI_SUCCESS;
    switch (kind) {
      case detail::collective_kind::reduce:
        rc = MPI_Igather(s, n, MPI_BYTE, recv.data(), n, MPI_BYTE, static_cast<int>(root), c, &req);
        break;
      case detail::collective_kind::broadcast:
        // The root's send buffer is its receive buffer (the caller copied the block there).
        rc = MPI_Ibcast(recv.data(), n, MPI_BYTE, static_cast<int>(root), c, &req);
        break;
      default:
        rc = MPI_Iallgather(s, n, MPI_BYTE, recv.data(), n, MPI_BYTE, c, &req);
        break;
    }
    if (rc != MPI_SUCCESS)
      throw std::runtime_error(std::string("grain collectives: starting ") +
                               detail::collective_name(kind) + " failed: " + mpi_error(rc));
    op& o = ops_.emplace_back();
    o.id = id;
    o.requests[0] = req;
    o.count = 1;
    count_.store(ops_.size(), std::memory_order_relaxed);
    return true;
  }

  bool poll(std::vector<finished>& out) override {
    std::unique_lock lock(network_, std::try_to_lock);
    if (!lock.owns_lock()) return false;
    for (std::size_t i = 0; i < ops_.size();) {
      int done = 0;
      op& o = ops_[i];
      // MPI_Test looks again after it progressed; MPI_Testall does not, so a block that
      // arrived during its progress would wait for the next round. The last request is a
      // receive (or the only one): once it completed, the rest normally has too.
      int rc =
          MPI_Test(&o.requests[static_cast<std::size_t>(o.count - 1)], &done, MPI_STATUS_IGNORE);
      if (rc == MPI_SUCCESS && done && o.count > 1)
        rc = MPI_Testall(o.count, o.requests.data(), &done, MPI_STATUSES_IGNORE);
      if (rc != MPI_SUCCESS || done) {
        out.push_back({ops_[i].id, rc == MPI_SUCCESS ? std::string() : mpi_error(rc)});
        ops_[i] = ops_.back();
        ops_.pop_back();
      } else {
        ++i;
      }
    }
    count_.store(ops_.size(), std::memory_order_relaxed);
    return true;
  }

  std::size_t in_flight() const noexcept override { return count_.load(std::memory_order_relaxed); }

  void close() override {
    std::lock_guard lock(network_);
    for (auto* set : {&comms_, &direct_})
      for (MPI_Comm& c : *set)
        if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
  }

 private:
  struct op {
    std::uint64_t id = 0;
    std::array<MPI_Request, std::size_t{2} * direct_exchange_max_ranks>
        requests{};  // done with all
    int count = 0;
  };

  // The exchange of blocks between every pair of ranks that the kind needs, posted as
  // MPI_Irecv/MPI_Isend on the kind's own communicator. Matching needs no tags: generations
  // of a kind start in the same order on every rank, and MPI keeps the order of messages
  // between two ranks on one communicator.
  void start_direct(std::uint64_t id, detail::collective_kind kind, int root,
                    std::span<const char> send, std::span<char> recv) {
    MPI_Comm c = direct_[static_cast<std::size_t>(kind)];
    const int n = static_cast<int>(send.size());
    void* s = const_cast<char*>(send.data());
    // Made in place (the request array is 256 bytes); taken back if a post fails.
    op& o = ops_.emplace_back();
    o.id = id;
    auto post = [&](int rc, const char* what) {
      if (rc != MPI_SUCCESS) {
        // What was posted stays with MPI (it completes once the peers take part).
        for (int i = 0; i < o.count; ++i) MPI_Request_free(&o.requests[i]);
        ops_.pop_back();
        throw std::runtime_error(std::string("grain collectives: ") + what + " for " +
                                 detail::collective_name(kind) + " failed: " + mpi_error(rc));
      }
    };
    auto receive_from = [&](int p, char* into) {
      post(MPI_Irecv(into, n, MPI_BYTE, p, 0, c, &o.requests[o.count]), "MPI_Irecv");
      ++o.count;
    };
    auto block = [&](int r) { return recv.data() + static_cast<std::size_t>(r) * send.size(); };
    auto send_to = [&](int p, void* from) {
      post(MPI_Isend(from, n, MPI_BYTE, p, 0, c, &o.requests[o.count]), "MPI_Isend");
      ++o.count;
    };
    switch (kind) {
      case detail::collective_kind::reduce:  // a gather to the root
        if (rank_ == root) {
          for (int p = 0; p < size_; ++p)
            if (p != rank_) receive_from(p, block(p));
          std::memcpy(block(rank_), send.data(), send.size());
        } else {
          send_to(root, s);
        }
        break;
      case detail::collective_kind::broadcast:  // the root's block is in recv already
        if (rank_ == root) {
          for (int p = 0; p < size_; ++p)
            if (p != rank_) send_to(p, recv.data());
        } else {
          receive_from(root, recv.data());
        }
        break;
      default:  // an all-gather; the sends first: the peers wait for them, not for our receives
        for (int p = 0; p < size_; ++p)
          if (p != rank_) send_to(p, s);
        for (int p = 0; p < size_; ++p)
          if (p != rank_) receive_from(p, block(p));
        std::memcpy(block(rank_), send.data(), send.size());
        break;
    }
  }

  detail::spinlock& network_;
  int rank_ = 0, size_ = 1;
  std::array<MPI_Comm, detail::collective_kind_count> comms_{};
  std::array<MPI_Comm, detail::collective_kind_count> direct_{};
  std::vector<op> ops_;  // under network_
  std::atomic<std::size_t> count_{0};
};

}  // namespace

std::unique_ptr<collective_network> make_mpi_collective_network(detail::spinlock& network) {
  return std::make_unique<mpi_collective_network>(network);
}

}  // namespace grain::distributed

#else

namespace grain::distributed {
std::unique_ptr<collective_network> make_mpi_collective_network(detail::spinlock&) {
  return nullptr;
}
}  // namespace grain::distributed

#endif
