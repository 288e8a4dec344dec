#include "partitioning.hpp"

#include <algorithm>

namespace lulesh {

namespace {

void add_unique(std::vector<index_t>& v, index_t x) {
  if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}

}  // namespace

partitioning::partitioning(const domain& d, index_t per)
    : chunk_(std::clamp<index_t>(per, 1, d.num_elem)),
      count_((d.num_elem + chunk_ - 1) / chunk_),
      num_elem_(d.num_elem),
      num_node_(d.num_node) {
  elements_at_nodes_.resize(static_cast<std::size_t>(count_));
  nodes_of_elements_.resize(static_cast<std::size_t>(count_));
  face_neighbours_.resize(static_cast<std::size_t>(count_));
  std::vector<index_t> node_part(static_cast<std::size_t>(num_node_));
  for (index_t q = 0; q < count_; ++q) {
    const range r = nodes(q);
    for (index_t n = r.begin; n < r.end; ++n) node_part[n] = q;
  }
  for (index_t k = 0; k < num_elem_; ++k) {
    const index_t p = k / chunk_;
    for (int c = 0; c < 8; ++c) {
      const index_t q = node_part[d.nodelist[8 * static_cast<std::size_t>(k) + c]];
      add_unique(nodes_of_elements_[p], q);
      add_unique(elements_at_nodes_[q], p);
    }
    // The partition itself (its own kinematics), and the neighbours inside the domain only:
    // ghost slots (>= num_elem) are filled by the halo.
    add_unique(face_neighbours_[p], p);
    for (index_t nb : {d.lxim[k], d.lxip[k], d.letam[k], d.letap[k], d.lzetam[k], d.lzetap[k]})
      if (nb < num_elem_) add_unique(face_neighbours_[p], nb / chunk_);
  }
  for (auto* lists : {&elements_at_nodes_, &nodes_of_elements_, &face_neighbours_})
    for (auto& l : *lists) std::sort(l.begin(), l.end());
}

range partitioning::elements(index_t p) const noexcept {
  return {p * chunk_, std::min(num_elem_, (p + 1) * chunk_)};
}

range partitioning::nodes(index_t q) const noexcept {
  const auto b = static_cast<std::int64_t>(num_node_) * q / count_;
  const auto e = static_cast<std::int64_t>(num_node_) * (q + 1) / count_;
  return {static_cast<index_t>(b), static_cast<index_t>(e)};
}

index_t default_partition(const domain& d, unsigned workers) {
  const index_t parts = 16 * static_cast<index_t>(std::max(1u, workers));
  return std::max<index_t>(64, (d.num_elem + parts - 1) / parts);
}

}  // namespace lulesh
