#pragma once
// The domain cut into partitions: element partition p holds elements [p*chunk, (p+1)*chunk),
// node partition p an equal share of the nodes. A partition's tasks of the next phase wait
// for the partitions whose data they read (the dataflow of run_grain.cpp):
//   node partition q    <- the element partitions with a corner at one of its nodes
//   element partition p <- the node partitions holding its nodes
//   element partition p <- itself and the element partitions holding its face neighbours
#include <vector>

#include "domain.hpp"

namespace lulesh {

struct range {
  index_t begin, end;
};

class partitioning {
 public:
  partitioning(const domain& d, index_t elements_per_partition);

  index_t chunk() const noexcept { return chunk_; }
  index_t count() const noexcept { return count_; }
  range elements(index_t p) const noexcept;
  range nodes(index_t q) const noexcept;

  const std::vector<index_t>& elements_at_nodes(index_t q) const { return elements_at_nodes_[q]; }
  const std::vector<index_t>& nodes_of_elements(index_t p) const { return nodes_of_elements_[p]; }
  const std::vector<index_t>& face_neighbours(index_t p) const { return face_neighbours_[p]; }

 private:
  index_t chunk_, count_, num_elem_, num_node_;
  std::vector<std::vector<index_t>> elements_at_nodes_, nodes_of_elements_, face_neighbours_;
};

// The default partition size: 16 partitions per worker, at least 64 elements each.
index_t default_partition(const domain& d, unsigned workers);

}  // namespace lulesh
