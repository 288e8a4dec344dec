// The topology without hwloc: packages and cores from Linux's /sys, the PUs the process may run
// on from sched_getaffinity, binding with sched_setaffinity; NUMA nodes are not read (the
// mappings that need them are refused). Also hwloc's synthetic syntax for the levels grain uses,
// so that the mappings can be computed for machines we do not have without hwloc too.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "topology_source.hpp"

namespace grain::detail {
namespace {

class sys_source final : public topology_source {
 public:
  bool bind_this_thread(unsigned pu) const override {
    if (!this_machine || pu >= pus.size()) return false;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(pus[pu].os_index, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
  }
};

long read_number(const std::filesystem::path& p) {
  std::ifstream in(p);
  long v = -1;
  if (!(in >> v)) return -1;
  return v;
}

// Logical indices as hwloc numbers them: packages, then cores in package order, PUs in order.
void number(topology_source& t, std::vector<std::tuple<long, long, unsigned>> cpus) {
  std::sort(cpus.begin(), cpus.end());
  std::map<long, unsigned> packs;
  std::map<std::pair<long, long>, unsigned> cores;
  for (auto& [pack, core, os] : cpus) {
    const unsigned p = packs.emplace(pack, static_cast<unsigned>(packs.size())).first->second;
    const unsigned c =
        cores.emplace(std::pair{pack, core}, static_cast<unsigned>(cores.size())).first->second;
    t.pus.push_back({os, c, 0, p});
  }
  t.n_packages = static_cast<unsigned>(std::max<std::size_t>(1, packs.size()));
  t.n_cores = static_cast<unsigned>(cores.size());
}

}  // namespace

std::unique_ptr<topology_source> sys_this_machine(bool restrict_to_binding,
                                                  const std::string& sys_root) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(sys_root) / "devices/system/cpu";
  std::vector<std::tuple<long, long, unsigned>> cpus;  // package, core, OS index
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() < 4 || name.rfind("cpu", 0) != 0 ||
        !std::all_of(name.begin() + 3, name.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    const long pack = read_number(e.path() / "topology/physical_package_id");
    const long core = read_number(e.path() / "topology/core_id");
    if (core < 0) continue;  // offline: no topology directory
    cpus.emplace_back(std::max(0L, pack), core, static_cast<unsigned>(std::stoul(name.substr(3))));
  }
  if (cpus.empty())
    throw std::runtime_error("grain::topology: no CPU in " + dir.string() +
                             " (without hwloc the topology comes from Linux's /sys)");
  auto t = std::make_unique<sys_source>();
  t->this_machine = true;
  t->numa_known = false;
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (restrict_to_binding && sched_getaffinity(0, sizeof mask, &mask) == 0) {
    std::vector<std::tuple<long, long, unsigned>> bound;
    for (auto& c : cpus)
      if (std::get<2>(c) < CPU_SETSIZE && CPU_ISSET(std::get<2>(c), &mask)) bound.push_back(c);
    if (!bound.empty() && bound.size() < cpus.size()) {
      t->total_pus = static_cast<unsigned>(cpus.size());
      cpus = std::move(bound);
    }
  }
  number(*t, std::move(cpus));
  return t;
}

std::unique_ptr<topology_source> parsed_synthetic(const std::string& description) {
  auto bad = [&](const std::string& why) {
    return std::invalid_argument("grain::topology: invalid synthetic topology '" + description +
                                 "' (" + why +
                                 "; levels pack, numa, core, pu, e.g. \"pack:2 numa:2 core:4 "
                                 "pu:1\")");
  };
  unsigned pack = 1, numa = 1, core = 0, pu = 1;
  bool numa_given = false;  // without a numa level hwloc has one node for the whole machine
  std::istringstream in(description);
  std::string tok;
  bool any = false;
  while (in >> tok) {
    const auto colon = tok.find(':');
    if (colon == std::string::npos) throw bad("'" + tok + "' is not LEVEL:N");
    const std::string level = tok.substr(0, colon);
    unsigned long n = 0;
    try {
      n = std::stoul(tok.substr(colon + 1));
    } catch (const std::exception&) {
      throw bad("'" + tok + "' has no count");
    }
    if (n == 0 || n > 4096) throw bad("'" + tok + "': count out of range");
    const auto v = static_cast<unsigned>(n);
    if (level == "pack" || level == "package")
      pack = v;
    else if (level == "numa" || level == "node") {
      numa = v;
      numa_given = true;
    } else if (level == "core")
      core = v;
    else if (level == "pu")
      pu = v;
    else
      throw bad("unknown level '" + level + "'");
    any = true;
  }
  if (!any) throw bad("empty");
  auto t = std::make_unique<sys_source>();
  const unsigned cores_per_numa = core ? core : pu;  // no core level: every PU is its own core
  const unsigned pus_per_core = core ? pu : 1;
  const unsigned total = pack * numa * cores_per_numa * pus_per_core;
  for (unsigned i = 0; i < total; ++i) {
    const unsigned c = i / pus_per_core;
    t->pus.push_back({i, c, numa_given ? c / cores_per_numa : 0, c / (cores_per_numa * numa)});
  }
  t->n_packages = pack;
  t->n_numa = numa_given ? pack * numa : 1;
  t->n_cores = total / pus_per_core;
  return t;
}

}  // namespace grain::detail
