// The topology without hwloc (runtime/src/topology_sys.cpp): Linux's /sys and sched_getaffinity,
// and hwloc's synthetic syntax parsed by grain. Checked against hwloc itself where it is built in,
// and on a /sys tree written here (two packages, hyperthreads numbered apart, an offline CPU).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>

#include "../../runtime/src/topology_source.hpp"
#include "grain/topology.hpp"

namespace {

namespace fs = std::filesystem;
using grain::detail::topology_source;

std::vector<std::tuple<unsigned, unsigned, unsigned, unsigned>> rows(const topology_source& t) {
  std::vector<std::tuple<unsigned, unsigned, unsigned, unsigned>> out;
  for (auto& p : t.pus) out.emplace_back(p.os_index, p.core, p.numa, p.package);
  return out;
}

TEST(TopologySys, ThisMachineAsHwlocSeesIt) {
  auto sys = grain::detail::sys_this_machine(false);
  ASSERT_FALSE(sys->pus.empty());
  EXPECT_TRUE(sys->this_machine);
  EXPECT_FALSE(sys->numa_known);
  EXPECT_EQ(sys->pus.size(), static_cast<std::size_t>(sysconf(_SC_NPROCESSORS_ONLN)));
  // hwloc (the library the runtime uses when built with it) finds the same PUs, cores, packages.
  const char* synthetic = std::getenv("HWLOC_SYNTHETIC");
  if (synthetic || std::getenv("HWLOC_XMLFILE")) GTEST_SKIP() << "hwloc reads another machine";
  auto hw = grain::topology::load(grain::process_binding::ignore);
  ASSERT_EQ(hw.pus().size(), sys->pus.size());
  for (std::size_t i = 0; i < sys->pus.size(); ++i) {
    EXPECT_EQ(hw.pus()[i].os_index, sys->pus[i].os_index) << i;
    EXPECT_EQ(hw.pus()[i].core, sys->pus[i].core) << i;
    EXPECT_EQ(hw.pus()[i].package, sys->pus[i].package) << i;
  }
  EXPECT_EQ(hw.num_cores(), sys->n_cores);
  EXPECT_EQ(hw.num_packages(), sys->n_packages);
  EXPECT_TRUE(sys->bind_this_thread(0));
}

TEST(TopologySys, ReadsASysTree) {
  const fs::path root =
      fs::path(::testing::TempDir()) / ("grain_sys_" + std::to_string(::getpid()));
  fs::remove_all(root);
  // cpu N: package N % 2 ... written as Linux numbers hyperthreads: cpu0-3 first threads of the
  // four cores, cpu4-7 their siblings; cpu8 is offline (no topology directory).
  auto cpu = [&](unsigned n, int pack, int core) {
    const fs::path d = root / "devices/system/cpu" / ("cpu" + std::to_string(n));
    fs::create_directories(d / "topology");
    std::ofstream(d / "topology/physical_package_id") << pack << "\n";
    std::ofstream(d / "topology/core_id") << core << "\n";
  };
  for (unsigned n = 0; n < 8; ++n) cpu(n, static_cast<int>((n % 4) / 2), static_cast<int>(n % 2));
  fs::create_directories(root / "devices/system/cpu/cpu8");
  fs::create_directories(root / "devices/system/cpu/cpufreq");
  auto t = grain::detail::sys_this_machine(false, root.string());
  using row = std::tuple<unsigned, unsigned, unsigned, unsigned>;  // os, core, numa, package
  const std::vector<row> want = {{0, 0, 0, 0}, {4, 0, 0, 0}, {1, 1, 0, 0}, {5, 1, 0, 0},
                                 {2, 2, 0, 1}, {6, 2, 0, 1}, {3, 3, 0, 1}, {7, 3, 0, 1}};
  EXPECT_EQ(rows(*t), want);
  EXPECT_EQ(t->n_cores, 4u);
  EXPECT_EQ(t->n_packages, 2u);
  fs::remove_all(root / "devices/system/cpu");
  EXPECT_THROW(grain::detail::sys_this_machine(false, root.string()), std::runtime_error);
  fs::remove_all(root);
}

TEST(TopologySys, SyntheticAsHwlocBuildsIt) {
  for (const char* d : {"pack:2 numa:2 core:4 pu:2", "pack:1 core:2 pu:1", "pack:2 pu:3",
                        "pack:4 numa:1 core:8 pu:1", "pack:2 numa:4 core:2 pu:2"}) {
    auto mine = grain::detail::parsed_synthetic(d);
    auto hw = grain::topology::synthetic(d);  // hwloc when built with it, else the same parser
    ASSERT_EQ(mine->pus.size(), hw.pus().size()) << d;
    for (std::size_t i = 0; i < mine->pus.size(); ++i) {
      const auto& a = mine->pus[i];
      const auto& b = hw.pus()[i];
      EXPECT_EQ(std::tie(a.core, a.numa, a.package), std::tie(b.core, b.numa, b.package))
          << d << " PU " << i;
    }
    EXPECT_EQ(mine->n_cores, hw.num_cores()) << d;
    EXPECT_EQ(mine->n_numa, hw.num_numa()) << d;
    EXPECT_EQ(mine->n_packages, hw.num_packages()) << d;
    EXPECT_FALSE(mine->this_machine);
  }
  for (const char* bad : {"", "pack:0", "pack:2 l3:2 pu:1", "pack", "core:x"})
    EXPECT_THROW(grain::detail::parsed_synthetic(bad), std::invalid_argument) << bad;
}

}  // namespace
