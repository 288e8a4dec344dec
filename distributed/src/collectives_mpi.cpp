// The collectives' MPI side (collective_network.hpp): one communicator per kind of collective,
// MPI_Iallgather / MPI_Igather / MPI_Ibcast over bytes, tested as background work. Every MPI
// call is made under the transport's lock, taken with try_lock like the transport does
// (MPI_THREAD_SERIALIZED; a worker never waits for another one's MPI call).
#include "collective_network.hpp"

#if GRAIN_WITH_MPI

#include <mpi.h>

#include <array>
#include <atomic>
#include <stdexcept>
#include <string>

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
  explicit mpi_collective_network(std::mutex& network) : network_(network) {
    comms_.fill(MPI_COMM_NULL);
    std::lock_guard lock(network_);
    for (MPI_Comm& c : comms_) {
      const int rc = MPI_Comm_dup(MPI_COMM_WORLD, &c);
      if (rc != MPI_SUCCESS)
        throw std::runtime_error("grain collectives: MPI_Comm_dup failed: " + mpi_error(rc));
      MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    }
  }
  ~mpi_collective_network() override { close(); }

  bool start(std::uint64_t id, detail::collective_kind kind, std::uint32_t root,
             std::span<const char> send, std::span<char> recv) override {
    std::unique_lock lock(network_, std::try_to_lock);
    if (!lock.owns_lock()) return false;
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
    ops_.push_back({id, req});
    count_.store(ops_.size(), std::memory_order_relaxed);
    return true;
  }

  bool poll(std::vector<finished>& out) override {
    std::unique_lock lock(network_, std::try_to_lock);
    if (!lock.owns_lock()) return false;
    for (std::size_t i = 0; i < ops_.size();) {
      int done = 0;
      MPI_Status st;
      const int rc = MPI_Test(&ops_[i].request, &done, &st);
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
    for (MPI_Comm& c : comms_)
      if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
  }

 private:
  struct op {
    std::uint64_t id;
    MPI_Request request;
  };
  std::mutex& network_;
  std::array<MPI_Comm, detail::collective_kind_count> comms_{};
  std::vector<op> ops_;  // under network_
  std::atomic<std::size_t> count_{0};
};

}  // namespace

std::unique_ptr<collective_network> make_mpi_collective_network(std::mutex& network) {
  return std::make_unique<mpi_collective_network>(network);
}

}  // namespace grain::distributed

#else

namespace grain::distributed {
std::unique_ptr<collective_network> make_mpi_collective_network(std::mutex&) {
  return nullptr;
}
}  // namespace grain::distributed

#endif
