#pragma once
// The cube of domains across localities: domain i is (i % side, i / side % side, i / side^2)
// of a side^3 cube (1, 8, 27, ... domains), and locality r holds domains [r K, (r + 1) K) with
// K domains per locality (--domains-per-locality). Neighbouring domains share the nodes of
// their common faces, edges and corners, and the monotonic q reads the velocity gradients of
// the elements across a face. Three exchanges per cycle, each as parcels (grain::post) that a
// mailbox turns into futures the cycle's tasks wait for:
//   forces     every neighbour's own sums at the shared nodes are added to ours, in the
//              reference's order of the 26 directions (also the nodal masses, once, at start)
//   positions  the nodes shared with a neighbour "above" (later in (z, y, x) order) take its
//              positions and velocities, so that every domain moves a shared node alike
//   gradients  the delv_* of the elements along each face go to the neighbour's ghost slots
#include <array>
#include <cstdint>
#include <vector>

#include "domain.hpp"
#include "grain/future.hpp"

namespace lulesh {

enum class exchange : std::uint32_t { masses, forces, positions, gradients };

struct direction {
  int dx, dy, dz;
};

// The cube of domains: side^3 == domains; throws std::invalid_argument naming the count
// otherwise.
index_t cube_side(int domains);

class halo {
 public:
  // Domain `id` of `domains`, `per_locality` of them on each locality.
  halo(const domain& d, int id, int domains, int per_locality);

  bool active() const noexcept { return !neighbours_.empty(); }

  // Sends this cycle's values of `what` to the neighbours that need them (the forces and
  // masses to all, the positions to those below, the gradients across faces).
  void send(const domain& d, exchange what, std::uint64_t cycle) const;
  // Futures of the messages this domain receives for `what` in `cycle`, in the order apply()
  // uses them.
  std::vector<grain::shared_future<std::vector<real>>> receive(exchange what,
                                                               std::uint64_t cycle) const;
  // Adds (forces, masses) or stores (positions, gradients) the received values; the futures
  // must be ready.
  void apply(domain& d, exchange what,
             const std::vector<grain::shared_future<std::vector<real>>>& in) const;

 private:
  struct neighbour {
    direction dir;
    int id;                         // the neighbour domain
    std::vector<index_t> nodes;     // shared nodes, in the order both sides use
    std::vector<index_t> elements;  // faces only: my elements along the face
    index_t ghost = -1;             // faces only: where the neighbour's elements go
  };
  std::vector<const neighbour*> receives_from(exchange what) const;
  std::vector<const neighbour*> sends_to(exchange what) const;

  int id_, per_locality_;
  std::vector<neighbour> neighbours_;  // in the reference's order of directions
};

}  // namespace lulesh
