#pragma once
// Where a topology's PUs come from (topology.cpp keeps the mappings): hwloc
// (topology_hwloc.cpp, GRAIN_WITH_HWLOC) or, without it, Linux's /sys and sched_getaffinity
// (topology_sys.cpp, always built so that the tests compare the two on this machine).
#include <memory>
#include <string>
#include <vector>

#include "grain/topology.hpp"

namespace grain::detail {

struct topology_source {
  std::vector<pu_info> pus;  // logical order
  unsigned n_numa = 1, n_packages = 1, n_cores = 0;
  bool this_machine = false;
  bool numa_known = true;  // false: NUMA nodes unknown (the /sys reader does not look)
  unsigned total_pus = 0;  // restricted to the process's CPU binding: the machine's PUs; else 0
  virtual ~topology_source() = default;
  // Binds the calling thread to pus[pu]; false when not this machine or binding failed.
  virtual bool bind_this_thread(unsigned pu) const = 0;
};

// hwloc (only with GRAIN_WITH_HWLOC).
std::unique_ptr<topology_source> hwloc_this_machine(bool restrict_to_binding);
std::unique_ptr<topology_source> hwloc_synthetic(const std::string& description);
std::unique_ptr<topology_source> hwloc_xml(const std::string& path);

// Without hwloc: packages and cores from /sys/devices/system/cpu/cpuN/topology, the PUs the
// process may run on from sched_getaffinity, NUMA unknown.
std::unique_ptr<topology_source> sys_this_machine(bool restrict_to_binding,
                                                  const std::string& sys_root = "/sys");
// hwloc's synthetic syntax for the levels pack, numa, core and pu ("pack:2 numa:2 core:4 pu:1").
std::unique_ptr<topology_source> parsed_synthetic(const std::string& description);

}  // namespace grain::detail
