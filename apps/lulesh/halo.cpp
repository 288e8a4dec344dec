#include "halo.hpp"

#include <cmath>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include "grain/grain.hpp"

namespace lulesh {

namespace {

// The order in which LULESH 2.0 adds its neighbours' contributions: the 6 faces, the 12 edges,
// the 8 corners (dx: column, dy: row, dz: plane). Summing in this order makes a shared node's
// force the reference's to the last bit.
constexpr direction order[26] = {
    {0, 0, -1},  {0, 0, 1},   {0, -1, 0}, {0, 1, 0},  {-1, 0, 0},   {1, 0, 0},   {-1, -1, 0},
    {0, -1, -1}, {-1, 0, -1}, {1, 1, 0},  {0, 1, 1},  {1, 0, 1},    {-1, 1, 0},  {0, -1, 1},
    {-1, 0, 1},  {1, -1, 0},  {0, 1, -1}, {1, 0, -1}, {-1, -1, -1}, {-1, -1, 1}, {1, -1, -1},
    {1, -1, 1},  {-1, 1, -1}, {-1, 1, 1}, {1, 1, -1}, {1, 1, 1}};

// A neighbour later in (plane, row, column) order owns the shared nodes' motion.
bool above(direction d) {
  return d.dz > 0 || (d.dz == 0 && (d.dy > 0 || (d.dy == 0 && d.dx > 0)));
}
bool is_face(direction d) {
  return std::abs(d.dx) + std::abs(d.dy) + std::abs(d.dz) == 1;
}

// Messages that arrived, or are awaited, per (exchange, cycle, sending domain, receiving
// domain).
class mailbox {
 public:
  grain::shared_future<std::vector<real>> take(exchange what, std::uint64_t cycle, int from,
                                               int to) {
    std::lock_guard lock(m_);
    const key k{static_cast<std::uint32_t>(what), cycle, from, to};
    auto& slot = slots_[k];
    auto f = slot.p.get_future().share();
    if (slot.delivered)
      slots_.erase(k);
    else
      slot.taken = true;
    return f;
  }
  void deliver(std::uint32_t what, std::uint64_t cycle, int from, int to, std::vector<real> v) {
    std::lock_guard lock(m_);
    const key k{what, cycle, from, to};
    auto& slot = slots_[k];
    slot.p.set_value(std::move(v));
    if (slot.taken)
      slots_.erase(k);
    else
      slot.delivered = true;
  }

 private:
  using key = std::tuple<std::uint32_t, std::uint64_t, int, int>;
  struct entry {
    grain::promise<std::vector<real>> p;
    bool taken = false, delivered = false;
  };
  std::mutex m_;
  std::map<key, entry> slots_;
};

mailbox& box() {
  static mailbox b;
  return b;
}

// The action every halo parcel calls (named for --grain:coalescing=lulesh_halo and its knobs
// coalescing.lulesh_halo.*).
void lulesh_halo(std::uint32_t what, std::uint64_t cycle, int from, int to,
                 std::vector<real> values) {
  box().deliver(what, cycle, from, to, std::move(values));
}

}  // namespace

index_t cube_side(int domains) {
  const auto side = static_cast<index_t>(std::cbrt(static_cast<double>(domains)) + 0.5);
  if (side * side * side != domains)
    throw std::invalid_argument(
        "the number of domains (localities x domains per locality) must be a cube (1, 8, 27, "
        "...), got " +
        std::to_string(domains));
  return side;
}

halo::halo(const domain& d, int id, int domains, int per_locality)
    : id_(id), per_locality_(per_locality) {
  const index_t side = cube_side(domains), s = d.size, e = s + 1;
  for (const direction dir : order) {
    const index_t c = d.col + dir.dx, r = d.row + dir.dy, p = d.plane + dir.dz;
    if (c < 0 || r < 0 || p < 0 || c >= side || r >= side || p >= side) continue;
    neighbour nb{dir, static_cast<int>((p * side + r) * side + c), {}, {}, -1};
    // The shared nodes: a fixed index along each axis the direction points to, every index
    // along the others; (k, j, i) order on both sides.
    auto span = [](int step, index_t last) {
      return step < 0   ? std::pair<index_t, index_t>{0, 1}
             : step > 0 ? std::pair<index_t, index_t>{last, last + 1}
                        : std::pair<index_t, index_t>{0, last + 1};
    };
    const auto [i0, i1] = span(dir.dx, s);
    const auto [j0, j1] = span(dir.dy, s);
    const auto [k0, k1] = span(dir.dz, s);
    for (index_t k = k0; k < k1; ++k)
      for (index_t j = j0; j < j1; ++j)
        for (index_t i = i0; i < i1; ++i) nb.nodes.push_back((k * e + j) * e + i);
    if (is_face(dir)) {
      const auto [a0, a1] = span(dir.dx, s - 1);
      const auto [b0, b1] = span(dir.dy, s - 1);
      const auto [c0, c1] = span(dir.dz, s - 1);
      for (index_t k = c0; k < c1; ++k)
        for (index_t j = b0; j < b1; ++j)
          for (index_t i = a0; i < a1; ++i) nb.elements.push_back((k * s + j) * s + i);
      // The ghost slot: the boundary conditions pointed the face's elements there.
      const index_t first = nb.elements.front();
      nb.ghost = dir.dz < 0   ? d.lzetam[first]
                 : dir.dz > 0 ? d.lzetap[first]
                 : dir.dy < 0 ? d.letam[first]
                 : dir.dy > 0 ? d.letap[first]
                 : dir.dx < 0 ? d.lxim[first]
                              : d.lxip[first];
    }
    neighbours_.push_back(std::move(nb));
  }
}

std::vector<const halo::neighbour*> halo::receives_from(exchange what) const {
  std::vector<const neighbour*> v;
  for (const auto& n : neighbours_)
    if ((what == exchange::positions && above(n.dir)) ||
        (what == exchange::gradients && is_face(n.dir)) || what == exchange::forces ||
        what == exchange::masses)
      v.push_back(&n);
  return v;
}

std::vector<const halo::neighbour*> halo::sends_to(exchange what) const {
  if (what != exchange::positions) return receives_from(what);
  std::vector<const neighbour*> v;
  for (const auto& n : neighbours_)
    if (!above(n.dir)) v.push_back(&n);
  return v;
}

void halo::send(const domain& d, exchange what, std::uint64_t cycle) const {
  for (const neighbour* n : sends_to(what)) {
    std::vector<real> v;
    auto put = [&](const std::vector<real>& field, const std::vector<index_t>& at) {
      for (index_t i : at) v.push_back(field[i]);
    };
    switch (what) {
      case exchange::masses:
        put(d.nodal_mass, n->nodes);
        break;
      case exchange::forces:
        for (const auto* f : {&d.fx, &d.fy, &d.fz}) put(*f, n->nodes);
        break;
      case exchange::positions:
        for (const auto* f : {&d.x, &d.y, &d.z, &d.xd, &d.yd, &d.zd}) put(*f, n->nodes);
        break;
      case exchange::gradients:
        for (const auto* f : {&d.delv_xi, &d.delv_eta, &d.delv_zeta}) put(*f, n->elements);
        break;
    }
    grain::post(grain::locality(static_cast<std::uint32_t>(n->id / per_locality_)),
                grain::action<&lulesh_halo>{}, static_cast<std::uint32_t>(what), cycle, id_, n->id,
                std::move(v));
  }
}

std::vector<grain::shared_future<std::vector<real>>> halo::receive(exchange what,
                                                                   std::uint64_t cycle) const {
  std::vector<grain::shared_future<std::vector<real>>> in;
  for (const neighbour* n : receives_from(what)) in.push_back(box().take(what, cycle, n->id, id_));
  return in;
}

void halo::apply(domain& d, exchange what,
                 const std::vector<grain::shared_future<std::vector<real>>>& in) const {
  const auto from = receives_from(what);
  for (std::size_t m = 0; m < from.size(); ++m) {
    const std::vector<real>& v = in[m].get();
    const neighbour& n = *from[m];
    std::size_t at = 0;
    auto add = [&](std::vector<real>& field) {
      for (index_t i : n.nodes) field[i] += v.at(at++);
    };
    auto store = [&](std::vector<real>& field, const std::vector<index_t>& where) {
      for (index_t i : where) field[i] = v.at(at++);
    };
    switch (what) {
      case exchange::masses:
        add(d.nodal_mass);
        break;
      case exchange::forces:
        for (auto* f : {&d.fx, &d.fy, &d.fz}) add(*f);
        break;
      case exchange::positions:
        for (auto* f : {&d.x, &d.y, &d.z, &d.xd, &d.yd, &d.zd}) store(*f, n.nodes);
        break;
      case exchange::gradients: {
        const auto count = static_cast<index_t>(n.elements.size());
        for (auto* f : {&d.delv_xi, &d.delv_eta, &d.delv_zeta})
          for (index_t i = 0; i < count; ++i) (*f)[n.ghost + i] = v.at(at++);
        break;
      }
    }
  }
}

}  // namespace lulesh
