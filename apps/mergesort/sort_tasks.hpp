#pragma once
// Jiang et al. 2020's merge sort (Listings 1 and 2) as grain tasks: a "split" task halves its range
// and launches a task for each half, a "sort" task sorts a leaf serially, a "merge" task merges two
// sorted halves; each kind runs on the executor `route` gives it (the merges on the critical
// pool in Jiang et al. 2020). The split task waits for its halves and its merge as the listing does
// (f_left.get(), f_right.get(), then the merge): in grain that suspends the user thread and
// frees the worker.
#include <cstddef>
#include <string>
#include <vector>

#include "../critical/routing.hpp"

namespace mergesort {

inline const std::vector<std::string>& kinds() {
  static const std::vector<std::string> k{"split", "sort", "merge"};
  return k;
}

// Sorts v (ascending) with leaves of at most `leaf` elements.
void parallel_sort(std::vector<int>& v, std::size_t leaf, const critical::routing& route);

// The same sort as a dataflow graph: the caller splits the ranges (index arithmetic, no
// tasks), leaves are "sort" tasks, each "merge" a grain::dataflow on its halves' futures. The
// dependencies are what --grain:critical=auto sees (the listing's blocking waits are not).
void dataflow_sort(std::vector<int>& v, std::size_t leaf, const critical::routing& route);

}  // namespace mergesort
