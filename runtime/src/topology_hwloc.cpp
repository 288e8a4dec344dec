// The topology through hwloc (GRAIN_WITH_HWLOC): this machine (honouring HWLOC_SYNTHETIC and
// HWLOC_XMLFILE, like hwloc itself), a synthetic description, or an XML export.
#if GRAIN_WITH_HWLOC
#include <hwloc.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "topology_source.hpp"

namespace grain::detail {
namespace {

class hwloc_source final : public topology_source {
 public:
  hwloc_source() {
    if (hwloc_topology_init(&topo_) != 0)
      throw std::runtime_error("grain::topology: hwloc_topology_init failed");
  }
  hwloc_source(const hwloc_source&) = delete;
  hwloc_source& operator=(const hwloc_source&) = delete;
  ~hwloc_source() override {
    if (topo_) hwloc_topology_destroy(topo_);
  }
  hwloc_topology_t topo() const { return topo_; }

  bool bind_this_thread(unsigned pu) const override {
    if (!this_machine || pu >= pu_objs_.size()) return false;
    return hwloc_set_cpubind(topo_, pu_objs_[pu]->cpuset, HWLOC_CPUBIND_THREAD) == 0;
  }

  // The PUs this process may run on (mpirun, taskset, Slurm and numactl bind processes): the
  // topology keeps only those, as hwloc's HWLOC_TOPOLOGY_FLAG_RESTRICT_TO_CPUBINDING would.
  // Without this, two ranks bound to cores 0 and 1 would both pin their first worker to PU 0.
  void restrict_to_process_binding() {
    hwloc_bitmap_t bound = hwloc_bitmap_alloc();
    if (!bound) return;
    const hwloc_const_cpuset_t all = hwloc_topology_get_topology_cpuset(topo_);
    if (hwloc_get_cpubind(topo_, bound, HWLOC_CPUBIND_PROCESS) == 0 &&
        hwloc_bitmap_intersects(bound, all) && !hwloc_bitmap_isincluded(all, bound)) {
      const int all_pus = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_PU);
      if (hwloc_topology_restrict(topo_, bound, 0) == 0) total_pus = static_cast<unsigned>(all_pus);
    }
    hwloc_bitmap_free(bound);
  }

  void load(const std::string& what, bool restrict_to_binding = false) {
    if (hwloc_topology_load(topo_) != 0) {
      throw std::runtime_error("grain::topology: cannot load " + what + ": " +
                               std::strerror(errno));
    }
    this_machine = hwloc_topology_is_thissystem(topo_) != 0;
    if (restrict_to_binding && this_machine) restrict_to_process_binding();

    const int npu = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_PU);
    const int nnuma = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_NUMANODE);
    const int npack = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_PACKAGE);
    const int ncore = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_CORE);
    if (npu <= 0) {
      throw std::runtime_error("grain::topology: " + what + " has no PU");
    }
    n_numa = static_cast<unsigned>(std::max(1, nnuma));
    n_packages = static_cast<unsigned>(std::max(1, npack));

    bool pu_without_core = false;
    for (int i = 0; i < npu; ++i) {
      hwloc_obj_t pu = hwloc_get_obj_by_type(topo_, HWLOC_OBJ_PU, static_cast<unsigned>(i));
      pu_info info{};
      info.os_index = pu->os_index;
      hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(topo_, HWLOC_OBJ_CORE, pu);
      if (core) {
        info.core = core->logical_index;
      } else {  // no core objects (e.g. "pack:2 pu:4"): every PU is its own core
        info.core = static_cast<unsigned>(std::max(0, ncore)) + pu->logical_index;
        pu_without_core = true;
      }
      hwloc_obj_t pack = hwloc_get_ancestor_obj_by_type(topo_, HWLOC_OBJ_PACKAGE, pu);
      info.package = pack ? pack->logical_index : 0;
      // The first (lowest logical index) NUMA node whose cpuset holds the PU: its local
      // memory. Several nodes may share a cpuset (DDR + HBM); the first one is taken.
      info.numa = 0;
      for (int n = 0; n < nnuma; ++n) {
        hwloc_obj_t node =
            hwloc_get_obj_by_type(topo_, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(n));
        if (node->cpuset && hwloc_bitmap_isset(node->cpuset, pu->os_index)) {
          info.numa = node->logical_index;
          break;
        }
      }
      pus.push_back(info);
      pu_objs_.push_back(pu);
    }
    if (pu_without_core) {
      std::vector<unsigned> cores;
      for (const auto& p : pus) {
        cores.push_back(p.core);
      }
      std::sort(cores.begin(), cores.end());
      n_cores = static_cast<unsigned>(std::unique(cores.begin(), cores.end()) - cores.begin());
    } else {
      n_cores = static_cast<unsigned>(ncore);
    }
  }

 private:
  hwloc_topology_t topo_ = nullptr;
  std::vector<hwloc_obj_t> pu_objs_;
};

}  // namespace

std::unique_ptr<topology_source> hwloc_this_machine(bool restrict_to_binding) {
  auto p = std::make_unique<hwloc_source>();
  // hwloc itself honours HWLOC_SYNTHETIC / HWLOC_XMLFILE.
  p->load("this machine's topology", restrict_to_binding);
  return p;
}

std::unique_ptr<topology_source> hwloc_synthetic(const std::string& desc) {
  auto p = std::make_unique<hwloc_source>();
  if (hwloc_topology_set_synthetic(p->topo(), desc.c_str()) != 0) {
    throw std::invalid_argument("grain::topology: invalid synthetic topology '" + desc +
                                "' (hwloc syntax, e.g. \"pack:2 numa:2 core:4 pu:1\")");
  }
  p->load("synthetic topology '" + desc + "'");
  return p;
}

std::unique_ptr<topology_source> hwloc_xml(const std::string& path) {
  auto p = std::make_unique<hwloc_source>();
  if (hwloc_topology_set_xml(p->topo(), path.c_str()) != 0) {
    throw std::runtime_error("grain::topology: cannot read XML topology '" + path +
                             "': " + std::strerror(errno));
  }
  p->load("XML topology '" + path + "'");
  return p;
}

}  // namespace grain::detail
#endif  // GRAIN_WITH_HWLOC
