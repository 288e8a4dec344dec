#pragma once
// Machine topology (hwloc) and the thread mappings of Jiang et al. 2020 (docs/thread-mapping.md):
// which processing unit each worker of each pool is bound to. Placement is computed as data so that
// it can be tested on synthetic topologies (HWLOC_SYNTHETIC or an XML file) of machines we do not
// have.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace grain {

enum class thread_mapping { compact, scatter, balanced, numa_balanced, numa_balanced_mtp };

// Parse "compact|scatter|balanced|numa-balanced|numa-balanced-mtp"; throws std::invalid_argument.
thread_mapping parse_thread_mapping(std::string_view name);
std::string to_string(thread_mapping m);

struct pu_info {
  unsigned os_index;  // the OS processor number (what the kernel calls CPU n)
  unsigned core;      // logical index of its core
  unsigned numa;      // logical index of its NUMA node
  unsigned package;   // logical index of its package (socket)
};

struct pool_request {
  std::string name;
  unsigned workers;
};

// The worker -> PU decision. workers are numbered globally in pool order.
struct placement {
  struct worker_slot {
    std::string pool;
    unsigned pool_index;  // index of the worker inside its pool
    unsigned pu;          // index into topology::pus()
  };
  std::vector<worker_slot> workers;
  bool oversubscribed = false;  // more workers than PUs: some PUs carry several workers
};

// Whether topology::load() keeps only the PUs the process is bound to (by mpirun, taskset,
// Slurm, numactl) or the whole machine.
enum class process_binding { honour, ignore };

class topology {
 public:
  // The machine we run on; honours HWLOC_SYNTHETIC / HWLOC_XMLFILE like hwloc itself. By
  // default only the PUs of the process's CPU binding are kept.
  static topology load(process_binding binding = process_binding::honour);
  // A synthetic description, e.g. "pack:2 numa:2 core:4 pu:1".
  static topology synthetic(std::string_view description);
  // An XML export (lstopo file.xml).
  static topology from_xml(const std::string& path);

  topology(topology&&) noexcept;
  topology& operator=(topology&&) noexcept;
  ~topology();

  const std::vector<pu_info>& pus() const noexcept;  // in logical (hwloc) order
  unsigned num_numa() const noexcept;
  unsigned num_packages() const noexcept;
  unsigned num_cores() const noexcept;
  bool is_this_machine() const noexcept;  // false for synthetic/XML: binding is skipped
  // True when load() left out PUs outside the process's CPU binding.
  bool restricted_to_process_binding() const noexcept;

  // Compute where each worker goes. Throws std::invalid_argument when the pools ask for no
  // workers. Asking for more workers than PUs oversubscribes round-robin (and says so in
  // placement::oversubscribed).
  placement place(const std::vector<pool_request>& pools, thread_mapping mapping) const;

  // Bind the calling thread to pus()[pu]; returns false (and does nothing) when the topology
  // is not this machine or binding failed.
  bool bind_this_thread(unsigned pu) const;

  // "1 package, 1 NUMA node, 2 cores, 2 PUs", plus " (of 4: the process's CPU binding)" when
  // restricted.
  std::string describe() const;

 private:
  struct impl;
  explicit topology(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace grain
