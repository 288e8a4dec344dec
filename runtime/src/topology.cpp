// Machine topology (hwloc, or /sys without it: topology_source.hpp), and the thread mappings
// (compact, scatter, balanced, numa-balanced, numa-balanced-mtp) that decide which PU each worker
// of each pool is bound to.
// See docs/thread-mapping.md for the mappings with examples.
//
// The placement is pure data computed from pus(), so it can be checked on synthetic or XML
// topologies of machines we do not have; only bind_this_thread() touches the real machine.
#include "grain/topology.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "topology_source.hpp"

namespace grain {

// ----------------------------------------------------------------------------------------
// Names
// ----------------------------------------------------------------------------------------

namespace {

struct mapping_name {
  thread_mapping mapping;
  std::string_view name;
};

constexpr mapping_name k_mapping_names[] = {
    {thread_mapping::compact, "compact"},
    {thread_mapping::scatter, "scatter"},
    {thread_mapping::balanced, "balanced"},
    {thread_mapping::numa_balanced, "numa-balanced"},
    {thread_mapping::numa_balanced_mtp, "numa-balanced-mtp"},
};

}  // namespace

thread_mapping parse_thread_mapping(std::string_view name) {
  for (const auto& m : k_mapping_names) {
    if (m.name == name) {
      return m.mapping;
    }
  }
  std::string valid;
  for (const auto& m : k_mapping_names) {
    if (!valid.empty()) {
      valid += ", ";
    }
    valid += m.name;
  }
  throw std::invalid_argument("unknown thread mapping '" + std::string(name) +
                              "'; valid mappings: " + valid);
}

std::string to_string(thread_mapping m) {
  for (const auto& n : k_mapping_names) {
    if (n.mapping == m) {
      return std::string(n.name);
    }
  }
  return "unknown";
}

// ----------------------------------------------------------------------------------------
// Placement algorithms (pure functions of the PU list)
// ----------------------------------------------------------------------------------------

namespace {

using index_list = std::vector<unsigned>;

// Groups the PU indices by a key, groups in order of first appearance (logical order), PUs
// inside a group in logical order.
template <typename Key>
std::vector<index_list> group_by(const std::vector<pu_info>& pus, const index_list& subset,
                                 Key key) {
  std::vector<std::pair<unsigned, index_list>> groups;
  for (unsigned i : subset) {
    const unsigned k = key(pus[i]);
    auto it = std::find_if(groups.begin(), groups.end(), [&](auto& g) { return g.first == k; });
    if (it == groups.end()) {
      groups.push_back({k, {}});
      it = std::prev(groups.end());
    }
    it->second.push_back(i);
  }
  std::vector<index_list> out;
  out.reserve(groups.size());
  for (auto& g : groups) {
    out.push_back(std::move(g.second));
  }
  return out;
}

index_list all_pus(const std::vector<pu_info>& pus) {
  index_list all(pus.size());
  std::iota(all.begin(), all.end(), 0u);
  return all;
}

// compact: PUs in logical order, i.e. core by core with the hyperthreads of a core adjacent.
index_list compact_order(const std::vector<pu_info>& pus, unsigned n) {
  index_list order = all_pus(pus);
  order.resize(n);
  return order;
}

// scatter: a round-robin at every level of the tree package -> NUMA node -> core -> PU.
// Consecutive workers go to different packages; on the same package to different NUMA nodes;
// on the same NUMA node to different cores. On a uniform machine a core's second hyperthread
// is used only once every core has one worker; on uneven machines the round-robin over
// packages/NUMA nodes comes first (a small package fills up sooner).
struct scatter_node {
  std::vector<scatter_node> children;
  unsigned pu = 0;         // for leaves
  unsigned remaining = 0;  // free leaves below
  std::size_t cursor = 0;  // next child to try
};

scatter_node build_scatter_tree(const std::vector<pu_info>& pus, const index_list& subset,
                                int level) {
  scatter_node node;
  node.remaining = static_cast<unsigned>(subset.size());
  if (level == 3) {  // PU level: one leaf per PU
    for (unsigned i : subset) {
      scatter_node leaf;
      leaf.pu = i;
      leaf.remaining = 1;
      node.children.push_back(std::move(leaf));
    }
    return node;
  }
  auto key = [level](const pu_info& p) {
    return level == 0 ? p.package : level == 1 ? p.numa : p.core;
  };
  for (auto& group : group_by(pus, subset, key)) {
    node.children.push_back(build_scatter_tree(pus, group, level + 1));
  }
  return node;
}

unsigned scatter_take(scatter_node& node) {
  --node.remaining;
  if (node.children.empty()) {
    return node.pu;
  }
  const std::size_t n = node.children.size();
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t c = (node.cursor + k) % n;
    if (node.children[c].remaining > 0) {
      node.cursor = (c + 1) % n;
      return scatter_take(node.children[c]);
    }
  }
  throw std::logic_error("grain::topology: scatter ran out of PUs");  // not reachable
}

index_list scatter_order(const std::vector<pu_info>& pus, unsigned n) {
  scatter_node root = build_scatter_tree(pus, all_pus(pus), 0);
  index_list order;
  order.reserve(n);
  for (unsigned i = 0; i < n; ++i) {
    order.push_back(scatter_take(root));
  }
  return order;
}

// balanced (HPX's decode_balanced_distribution): first decide how many PUs each core gets by
// going round-robin over the cores until n workers are counted (so every core gets one
// worker before any core gets two), then number the workers core by core so that workers on
// the same core are adjacent.
index_list balanced_order(const std::vector<pu_info>& pus, const index_list& subset, unsigned n) {
  const auto cores = group_by(pus, subset, [](const pu_info& p) { return p.core; });
  std::vector<unsigned> per_core(cores.size(), 0);
  for (unsigned counted = 0; counted < n;) {
    for (std::size_t c = 0; c < cores.size() && counted < n; ++c) {
      if (per_core[c] == cores[c].size()) {
        continue;
      }
      ++per_core[c];
      ++counted;
    }
  }
  index_list order;
  order.reserve(n);
  for (std::size_t c = 0; c < cores.size(); ++c) {
    for (unsigned k = 0; k < per_core[c]; ++k) {
      order.push_back(cores[c][k]);
    }
  }
  return order;
}

std::vector<index_list> numa_domains(const std::vector<pu_info>& pus) {
  return group_by(pus, all_pus(pus), [](const pu_info& p) { return p.numa; });
}

// numa-balanced (after HPX's decode_numabalanced_distribution): each NUMA domain gets a share
// of the n workers proportional to its number of PUs (equal domains: equal shares, the first
// domains take the remainder); workers are numbered domain by domain, and inside a domain
// they are placed compactly.
index_list numa_balanced_order(const std::vector<pu_info>& pus, unsigned n) {
  const auto domains = numa_domains(pus);
  const std::uint64_t total = pus.size();
  std::vector<unsigned> share(domains.size());
  std::vector<std::uint64_t> frac(domains.size());
  unsigned given = 0;
  for (std::size_t d = 0; d < domains.size(); ++d) {
    const std::uint64_t q = std::uint64_t{n} * domains[d].size();
    share[d] = static_cast<unsigned>(q / total);
    frac[d] = q % total;
    given += share[d];
  }
  // Largest remainder first, ties to the lower domain. n <= total, so a domain with a
  // non-zero remainder has room for one more.
  std::vector<std::size_t> by_frac(domains.size());
  std::iota(by_frac.begin(), by_frac.end(), std::size_t{0});
  std::stable_sort(by_frac.begin(), by_frac.end(),
                   [&](std::size_t a, std::size_t b) { return frac[a] > frac[b]; });
  for (std::size_t k = 0; given < n && k < by_frac.size(); ++k) {
    ++share[by_frac[k]];
    ++given;
  }
  index_list order;
  order.reserve(n);
  for (std::size_t d = 0; d < domains.size(); ++d) {
    for (unsigned k = 0; k < share[d]; ++k) {
      order.push_back(domains[d][k]);
    }
  }
  return order;
}

// The PUs of one NUMA domain in the order numa-balanced-mtp hands them out: "a processor core
// of the target NUMA domain" (Jiang et al. 2020), so the first PU of every core, then the second PU
// of every core, and so on.
index_list cores_first(const std::vector<pu_info>& pus, const index_list& domain) {
  const auto cores = group_by(pus, domain, [](const pu_info& p) { return p.core; });
  index_list out;
  out.reserve(domain.size());
  for (std::size_t k = 0; out.size() < domain.size(); ++k) {
    for (const auto& c : cores) {
      if (k < c.size()) {
        out.push_back(c[k]);
      }
    }
  }
  return out;
}

// numa-balanced-mtp: Algorithm 1 of Jiang et al., "Task Priority Control for the HPX Runtime
// System" (Jiang et al. 2020, Section III.A), which we follow line by line:
//
//   1: domains <- rp.numa_domains()
//   2: pool <- next(pools)                    -- critical pools first
//   3: while current_pool do
//   4:   for thread in pool do
//   5:     {Iterate the NUMA domains in a round-robin fashion}
//   6:     target_domain <- next(domains)
//   7:     map(thread, target_domain)
//   8:   end for
//   9:   pool <- next(pools)
//  10: end while
//
// next(pools) visits the pools in the order they are given: the caller lists the critical
// pools first (the runtime's --grain:pools pools come before "default"). The domain iterator
// of line 6 is one iterator for the whole loop, not restarted per pool, so consecutive
// threads of a pool land on different domains and every pool with at least as many workers
// as there are domains gets workers on every domain. map() (line 7) takes the next free PU of
// the target domain, cores first (see cores_first).
//
// What the paper leaves open, decided here: a domain with no free PU left is skipped (the
// round-robin moves on to the next domain), so pools stay disjoint on uneven domains; when
// every PU of the machine is taken (more workers than PUs) all PUs become free again and the
// round-robin goes on, i.e. oversubscription is round-robin too (on equal domains worker
// i + #PUs shares the PU of worker i).
std::vector<unsigned> numa_balanced_mtp(const std::vector<pu_info>& pus,
                                        const std::vector<pool_request>& pools) {
  std::vector<index_list> domains = numa_domains(pus);  // line 1
  for (auto& d : domains) {
    d = cores_first(pus, d);
  }
  std::vector<std::size_t> used(domains.size(), 0);
  std::size_t free_total = pus.size();
  std::size_t next_domain = 0;
  std::vector<unsigned> result;
  for (const auto& pool : pools) {                 // lines 2, 3, 9
    for (unsigned t = 0; t < pool.workers; ++t) {  // line 4
      if (free_total == 0) {                       // oversubscribed: start a new round over all PUs
        std::fill(used.begin(), used.end(), 0);
        free_total = pus.size();
      }
      std::size_t target = next_domain;  // line 6
      while (used[target] == domains[target].size()) {
        target = (target + 1) % domains.size();
      }
      next_domain = (target + 1) % domains.size();
      result.push_back(domains[target][used[target]++]);  // line 7
      --free_total;
    }
  }
  return result;
}

}  // namespace

// ----------------------------------------------------------------------------------------
// topology
// ----------------------------------------------------------------------------------------

struct topology::impl {
  std::unique_ptr<detail::topology_source> src;
};

topology::topology(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
topology::topology(topology&&) noexcept = default;
topology& topology::operator=(topology&&) noexcept = default;
topology::~topology() = default;

// GRAIN_WITH_HWLOC is given to this file (runtime/CMakeLists.txt).
topology topology::load(process_binding binding) {
  const bool restrict_to_binding = binding == process_binding::honour;
#if GRAIN_WITH_HWLOC
  return topology(std::make_unique<impl>(impl{detail::hwloc_this_machine(restrict_to_binding)}));
#else
  return topology(std::make_unique<impl>(impl{detail::sys_this_machine(restrict_to_binding)}));
#endif
}

topology topology::synthetic(std::string_view description) {
#if GRAIN_WITH_HWLOC
  return topology(std::make_unique<impl>(impl{detail::hwloc_synthetic(std::string(description))}));
#else
  return topology(std::make_unique<impl>(impl{detail::parsed_synthetic(std::string(description))}));
#endif
}

topology topology::from_xml(const std::string& path) {
#if GRAIN_WITH_HWLOC
  return topology(std::make_unique<impl>(impl{detail::hwloc_xml(path)}));
#else
  throw std::runtime_error("grain::topology: cannot read XML topology '" + path +
                           "': grain was built without hwloc (GRAIN_WITH_HWLOC=OFF)");
#endif
}

const std::vector<pu_info>& topology::pus() const noexcept {
  return impl_->src->pus;
}
unsigned topology::num_numa() const noexcept {
  return impl_->src->n_numa;
}
unsigned topology::num_packages() const noexcept {
  return impl_->src->n_packages;
}
unsigned topology::num_cores() const noexcept {
  return impl_->src->n_cores;
}
bool topology::is_this_machine() const noexcept {
  return impl_->src->this_machine;
}
bool topology::restricted_to_process_binding() const noexcept {
  return impl_->src->total_pus != 0;
}

placement topology::place(const std::vector<pool_request>& pools, thread_mapping mapping) const {
  if (!impl_->src->numa_known &&
      (mapping == thread_mapping::numa_balanced || mapping == thread_mapping::numa_balanced_mtp))
    throw std::invalid_argument("grain::topology::place: the mapping " + to_string(mapping) +
                                " needs the NUMA nodes, which grain reads with hwloc, and this "
                                "grain was built without it (GRAIN_WITH_HWLOC=OFF)");
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < pools.size(); ++i) {
    if (pools[i].workers == 0) {
      throw std::invalid_argument("grain::topology::place: pool '" + pools[i].name +
                                  "' has no workers");
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (pools[j].name == pools[i].name) {
        throw std::invalid_argument("grain::topology::place: pool '" + pools[i].name +
                                    "' is given twice");
      }
    }
    total += pools[i].workers;
  }
  if (total == 0) {
    throw std::invalid_argument("grain::topology::place: no workers requested");
  }
  if (total > 1u << 20) {
    throw std::invalid_argument("grain::topology::place: " + std::to_string(total) +
                                " workers is too many");
  }

  const auto& all = impl_->src->pus;
  const unsigned n = static_cast<unsigned>(total);
  const unsigned npu = static_cast<unsigned>(all.size());

  // Worker i (global, in pool order) -> index into pus().
  std::vector<unsigned> target;
  if (mapping == thread_mapping::numa_balanced_mtp) {
    target = numa_balanced_mtp(all, pools);
  } else {
    // The mapping orders min(n, #PUs) PUs; with more workers than PUs worker i takes the PU
    // of worker i mod #PUs (round-robin oversubscription over the full-machine order).
    const unsigned m = std::min(n, npu);
    index_list order;
    switch (mapping) {
      case thread_mapping::compact:
        order = compact_order(all, m);
        break;
      case thread_mapping::scatter:
        order = scatter_order(all, m);
        break;
      case thread_mapping::balanced:
        order = balanced_order(all, all_pus(all), m);
        break;
      case thread_mapping::numa_balanced:
        order = numa_balanced_order(all, m);
        break;
      default:
        throw std::invalid_argument("grain::topology::place: unknown thread mapping");
    }
    target.reserve(n);
    for (unsigned i = 0; i < n; ++i) {
      target.push_back(order[i % m]);
    }
  }

  placement out;
  out.oversubscribed = n > npu;
  out.workers.reserve(n);
  unsigned w = 0;
  for (const auto& pool : pools) {
    for (unsigned k = 0; k < pool.workers; ++k) {
      out.workers.push_back({pool.name, k, target[w++]});
    }
  }
  return out;
}

bool topology::bind_this_thread(unsigned pu) const {
  return impl_->src->bind_this_thread(pu);
}

std::string topology::describe() const {
  auto count = [](std::size_t k, const char* one, const char* many) {
    return std::to_string(k) + " " + (k == 1 ? one : many);
  };
  return count(num_packages(), "package", "packages") + ", " +
         count(num_numa(), "NUMA node", "NUMA nodes") + ", " + count(num_cores(), "core", "cores") +
         ", " + count(impl_->src->pus.size(), "PU", "PUs") +
         (impl_->src->total_pus != 0
              ? " (of " + std::to_string(impl_->src->total_pus) + ": the process's CPU binding)"
              : "");
}

}  // namespace grain
