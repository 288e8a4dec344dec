// hwloc topology and thread mappings, checked on synthetic / XML topologies of machines we do
// not have (docs/thread-mapping.md, "Testing machines we do not have") and, for load and bind, on
// the real machine.
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/optional_deps.hpp"
#include "common/scoped_env.hpp"
#include "grain/topology.hpp"

namespace {

using grain::placement;
using grain::pool_request;
using grain::thread_mapping;
using grain::topology;

constexpr thread_mapping k_all_mappings[] = {
    thread_mapping::compact, thread_mapping::scatter, thread_mapping::balanced,
    thread_mapping::numa_balanced, thread_mapping::numa_balanced_mtp};

// OS indices of the PUs of the workers, in global worker order.
std::vector<unsigned> os_of(const topology& t, const placement& p) {
  std::vector<unsigned> out;
  for (const auto& w : p.workers) {
    out.push_back(t.pus().at(w.pu).os_index);
  }
  return out;
}

std::vector<unsigned> numa_of(const topology& t, const placement& p) {
  std::vector<unsigned> out;
  for (const auto& w : p.workers) {
    out.push_back(t.pus().at(w.pu).numa);
  }
  return out;
}

std::vector<unsigned> os_of(const topology& t, unsigned workers, thread_mapping m) {
  return os_of(t, t.place({{"default", workers}}, m));
}

// The NUMA nodes the workers of one pool landed on, with counts.
std::map<unsigned, unsigned> pool_numa_counts(const topology& t, const placement& p,
                                              const std::string& pool) {
  std::map<unsigned, unsigned> counts;
  for (const auto& w : p.workers) {
    if (w.pool == pool) {
      ++counts[t.pus().at(w.pu).numa];
    }
  }
  return counts;
}

using grain::test::scoped_env;

// Two packages of unequal size, each its own NUMA node, two hyperthreads per core, numbered
// like Linux numbers a hyperthreaded machine (siblings are n and n+4):
//   package 0 / NUMA 0: core 0 = PUs {0, 4}
//   package 1 / NUMA 1: core 1 = {1, 5}, core 2 = {2, 6}, core 3 = {3, 7}
constexpr const char* k_uneven_xml = R"(<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc2.dtd">
<topology version="2.0">
  <object type="Machine" os_index="0" cpuset="0xff" complete_cpuset="0xff" nodeset="0x3" complete_nodeset="0x3">
    <object type="Package" os_index="0" cpuset="0x11" complete_cpuset="0x11" nodeset="0x1" complete_nodeset="0x1">
      <object type="NUMANode" os_index="0" cpuset="0x11" complete_cpuset="0x11" nodeset="0x1" complete_nodeset="0x1" local_memory="1073741824"/>
      <object type="Core" os_index="0" cpuset="0x11" complete_cpuset="0x11" nodeset="0x1" complete_nodeset="0x1">
        <object type="PU" os_index="0" cpuset="0x01" complete_cpuset="0x01" nodeset="0x1" complete_nodeset="0x1"/>
        <object type="PU" os_index="4" cpuset="0x10" complete_cpuset="0x10" nodeset="0x1" complete_nodeset="0x1"/>
      </object>
    </object>
    <object type="Package" os_index="1" cpuset="0xee" complete_cpuset="0xee" nodeset="0x2" complete_nodeset="0x2">
      <object type="NUMANode" os_index="1" cpuset="0xee" complete_cpuset="0xee" nodeset="0x2" complete_nodeset="0x2" local_memory="1073741824"/>
      <object type="Core" os_index="1" cpuset="0x22" complete_cpuset="0x22" nodeset="0x2" complete_nodeset="0x2">
        <object type="PU" os_index="1" cpuset="0x02" complete_cpuset="0x02" nodeset="0x2" complete_nodeset="0x2"/>
        <object type="PU" os_index="5" cpuset="0x20" complete_cpuset="0x20" nodeset="0x2" complete_nodeset="0x2"/>
      </object>
      <object type="Core" os_index="2" cpuset="0x44" complete_cpuset="0x44" nodeset="0x2" complete_nodeset="0x2">
        <object type="PU" os_index="2" cpuset="0x04" complete_cpuset="0x04" nodeset="0x2" complete_nodeset="0x2"/>
        <object type="PU" os_index="6" cpuset="0x40" complete_cpuset="0x40" nodeset="0x2" complete_nodeset="0x2"/>
      </object>
      <object type="Core" os_index="3" cpuset="0x88" complete_cpuset="0x88" nodeset="0x2" complete_nodeset="0x2">
        <object type="PU" os_index="3" cpuset="0x08" complete_cpuset="0x08" nodeset="0x2" complete_nodeset="0x2"/>
        <object type="PU" os_index="7" cpuset="0x80" complete_cpuset="0x80" nodeset="0x2" complete_nodeset="0x2"/>
      </object>
    </object>
  </object>
</topology>
)";

std::string write_uneven_xml() {
  std::string path =
      ::testing::TempDir() + "grain_topology_test_" + std::to_string(::getpid()) + ".xml";
  std::ofstream(path) << k_uneven_xml;
  return path;
}

// ---------------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------------

TEST(TopologyMappingNames, RoundTrip) {
  for (auto m : k_all_mappings) {
    EXPECT_EQ(grain::parse_thread_mapping(grain::to_string(m)), m);
  }
  EXPECT_EQ(grain::parse_thread_mapping("numa-balanced-mtp"), thread_mapping::numa_balanced_mtp);
  EXPECT_EQ(grain::to_string(thread_mapping::numa_balanced), "numa-balanced");
}

TEST(TopologyMappingNames, UnknownNameListsTheValidOnes) {
  try {
    grain::parse_thread_mapping("numa_balanced");
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'numa_balanced'"), std::string::npos) << what;
    for (auto m : k_all_mappings) {
      EXPECT_NE(what.find(grain::to_string(m)), std::string::npos) << what;
    }
  }
  EXPECT_THROW(grain::parse_thread_mapping(""), std::invalid_argument);
  EXPECT_THROW(grain::parse_thread_mapping("Compact"), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------
// Loading
// ---------------------------------------------------------------------------------------

TEST(TopologyLoad, OneSocketTwoCores) {
  auto t = topology::synthetic("pack:1 core:2 pu:1");
  EXPECT_FALSE(t.is_this_machine());
  EXPECT_EQ(t.describe(), "1 package, 1 NUMA node, 2 cores, 2 PUs");
  ASSERT_EQ(t.pus().size(), 2u);
  for (unsigned i = 0; i < 2; ++i) {
    EXPECT_EQ(t.pus()[i].os_index, i);
    EXPECT_EQ(t.pus()[i].core, i);
    EXPECT_EQ(t.pus()[i].numa, 0u);
    EXPECT_EQ(t.pus()[i].package, 0u);
  }
}

TEST(TopologyLoad, TwoPackagesTwoNumaHyperthreads) {
  auto t = topology::synthetic("pack:2 numa:2 core:4 pu:2");
  EXPECT_EQ(t.describe(), "2 packages, 4 NUMA nodes, 16 cores, 32 PUs");
  EXPECT_EQ(t.num_packages(), 2u);
  EXPECT_EQ(t.num_numa(), 4u);
  EXPECT_EQ(t.num_cores(), 16u);
  ASSERT_EQ(t.pus().size(), 32u);
  for (unsigned i = 0; i < 32; ++i) {
    EXPECT_EQ(t.pus()[i].os_index, i);
    EXPECT_EQ(t.pus()[i].core, i / 2);
    EXPECT_EQ(t.pus()[i].numa, i / 8);
    EXPECT_EQ(t.pus()[i].package, i / 16);
  }
}

TEST(TopologyLoad, FourPackages) {
  auto t = topology::synthetic("pack:4 numa:1 core:8 pu:1");
  EXPECT_EQ(t.describe(), "4 packages, 4 NUMA nodes, 32 cores, 32 PUs");
  for (unsigned i = 0; i < 32; ++i) {
    EXPECT_EQ(t.pus()[i].numa, i / 8);
    EXPECT_EQ(t.pus()[i].package, i / 8);
  }
}

TEST(TopologyLoad, NoCoreLevelMakesEveryPuItsOwnCore) {
  auto t = topology::synthetic("pack:2 pu:3");
  EXPECT_EQ(t.num_cores(), 6u);
  std::set<unsigned> cores;
  for (const auto& p : t.pus()) {
    cores.insert(p.core);
  }
  EXPECT_EQ(cores.size(), 6u);
  EXPECT_EQ(os_of(t, 6, thread_mapping::balanced), (std::vector<unsigned>{0, 1, 2, 3, 4, 5}));
}

TEST(TopologyLoad, XmlKeepsOsIndices) {
  GRAIN_SKIP_WITHOUT_HWLOC("an XML topology");
  const std::string path = write_uneven_xml();
  auto t = topology::from_xml(path);
  std::remove(path.c_str());
  EXPECT_FALSE(t.is_this_machine());
  EXPECT_EQ(t.describe(), "2 packages, 2 NUMA nodes, 4 cores, 8 PUs");
  std::vector<unsigned> os, core, numa;
  for (const auto& p : t.pus()) {
    os.push_back(p.os_index);
    core.push_back(p.core);
    numa.push_back(p.numa);
  }
  EXPECT_EQ(os, (std::vector<unsigned>{0, 4, 1, 5, 2, 6, 3, 7}));
  EXPECT_EQ(core, (std::vector<unsigned>{0, 0, 1, 1, 2, 2, 3, 3}));
  EXPECT_EQ(numa, (std::vector<unsigned>{0, 0, 1, 1, 1, 1, 1, 1}));
}

TEST(TopologyLoad, HonoursHwlocSyntheticEnvironment) {
  GRAIN_SKIP_WITHOUT_HWLOC("HWLOC_SYNTHETIC");
  scoped_env no_xml("HWLOC_XMLFILE", nullptr);
  scoped_env env("HWLOC_SYNTHETIC", "pack:2 numa:1 core:3 pu:2");
  auto t = topology::load();
  EXPECT_FALSE(t.is_this_machine());
  EXPECT_EQ(t.describe(), "2 packages, 2 NUMA nodes, 6 cores, 12 PUs");
  EXPECT_FALSE(t.bind_this_thread(0));
}

TEST(TopologyLoad, HonoursHwlocXmlfileEnvironment) {
  GRAIN_SKIP_WITHOUT_HWLOC("HWLOC_XMLFILE");
  const std::string path = write_uneven_xml();
  {
    scoped_env no_synthetic("HWLOC_SYNTHETIC", nullptr);
    scoped_env env("HWLOC_XMLFILE", path.c_str());
    auto t = topology::load();
    EXPECT_FALSE(t.is_this_machine());
    EXPECT_EQ(t.describe(), "2 packages, 2 NUMA nodes, 4 cores, 8 PUs");
  }
  std::remove(path.c_str());
}

TEST(TopologyLoad, Errors) {
  EXPECT_THROW(topology::synthetic("socket:banana"), std::invalid_argument);
  EXPECT_THROW(topology::synthetic(""), std::invalid_argument);
  EXPECT_THROW(topology::from_xml("/nonexistent/grain-topology.xml"), std::runtime_error);
}

TEST(TopologyLoad, RealMachineLoadsAndBinds) {
  if (std::getenv("HWLOC_SYNTHETIC") || std::getenv("HWLOC_XMLFILE")) {
    GTEST_SKIP() << "HWLOC_SYNTHETIC/HWLOC_XMLFILE set: not the real machine";
  }
  auto t = topology::load();
  EXPECT_TRUE(t.is_this_machine());
  ASSERT_FALSE(t.pus().empty());
  EXPECT_GE(t.num_cores(), 1u);
  EXPECT_FALSE(t.describe().empty());
  // Bind a fresh thread, not the test's main thread: its affinity would be inherited by the
  // threads of later tests in this process.
  bool bound = false, out_of_range = true;
  int cpu = -1;
  std::thread th([&] {
    bound = t.bind_this_thread(0);
    cpu = ::sched_getcpu();
    out_of_range = t.bind_this_thread(static_cast<unsigned>(t.pus().size()));
  });
  th.join();
  EXPECT_TRUE(bound);
  EXPECT_EQ(cpu, static_cast<int>(t.pus()[0].os_index));
  EXPECT_FALSE(out_of_range);
  // The whole machine gets a placement with every PU used once.
  auto p = t.place({{"default", static_cast<unsigned>(t.pus().size())}}, thread_mapping::balanced);
  EXPECT_FALSE(p.oversubscribed);
  std::set<unsigned> used;
  for (const auto& w : p.workers) {
    used.insert(w.pu);
  }
  EXPECT_EQ(used.size(), t.pus().size());
}

TEST(TopologyLoad, SyntheticDoesNotBind) {
  auto t = topology::synthetic("pack:1 core:2 pu:1");
  EXPECT_FALSE(t.bind_this_thread(0));
}

TEST(TopologyLoad, MovesKeepTheTopology) {
  auto a = topology::synthetic("pack:2 core:2 pu:1");
  topology b = std::move(a);
  EXPECT_EQ(b.pus().size(), 4u);
  a = topology::synthetic("pack:1 core:2 pu:1");
  b = std::move(a);
  EXPECT_EQ(b.pus().size(), 2u);
}

// ---------------------------------------------------------------------------------------
// Placement: exact PUs per mapping
// ---------------------------------------------------------------------------------------

TEST(TopologyPlace, OneSocketTwoCoresEveryMappingUsesBothCores) {
  auto t = topology::synthetic("pack:1 core:2 pu:1");
  for (auto m : k_all_mappings) {
    auto p = t.place({{"critical", 1}, {"default", 1}}, m);
    ASSERT_EQ(p.workers.size(), 2u);
    EXPECT_EQ(os_of(t, p), (std::vector<unsigned>{0, 1})) << grain::to_string(m);
    EXPECT_EQ(p.workers[0].pool, "critical");
    EXPECT_EQ(p.workers[0].pool_index, 0u);
    EXPECT_EQ(p.workers[1].pool, "default");
    EXPECT_EQ(p.workers[1].pool_index, 0u);
    EXPECT_FALSE(p.oversubscribed);
  }
}

// "pack:2 numa:2 core:4 pu:2": PU i has os index i, core i/2, NUMA node i/8, package i/16.
class TopologyPlaceHt : public ::testing::Test {
 protected:
  topology t = topology::synthetic("pack:2 numa:2 core:4 pu:2");
  std::vector<pool_request> pools{{"critical", 2}, {"default", 6}};
};

TEST_F(TopologyPlaceHt, Compact) {
  auto p = t.place(pools, thread_mapping::compact);
  EXPECT_EQ(os_of(t, p), (std::vector<unsigned>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(p.workers[1].pool, "critical");
  EXPECT_EQ(p.workers[1].pool_index, 1u);
  EXPECT_EQ(p.workers[2].pool, "default");
  EXPECT_EQ(p.workers[7].pool_index, 5u);
}

TEST_F(TopologyPlaceHt, Scatter) {
  // package 0/1 alternate, then the NUMA nodes of a package, then cores, then hyperthreads.
  auto p = t.place(pools, thread_mapping::scatter);
  EXPECT_EQ(os_of(t, p), (std::vector<unsigned>{0, 16, 8, 24, 2, 18, 10, 26}));
  EXPECT_EQ(numa_of(t, p), (std::vector<unsigned>{0, 2, 1, 3, 0, 2, 1, 3}));
  // The first 16 workers get the first hyperthread of every core, the rest the second.
  auto all = os_of(t, 32, thread_mapping::scatter);
  std::set<unsigned> first(all.begin(), all.begin() + 16), second(all.begin() + 16, all.end());
  for (unsigned os : first) {
    EXPECT_EQ(os % 2, 0u);
  }
  for (unsigned os : second) {
    EXPECT_EQ(os % 2, 1u);
  }
  EXPECT_EQ(first.size(), 16u);
  EXPECT_EQ(second.size(), 16u);
}

TEST_F(TopologyPlaceHt, Balanced) {
  // 8 workers on 16 cores: one per core, cores in order.
  auto p = t.place(pools, thread_mapping::balanced);
  EXPECT_EQ(os_of(t, p), (std::vector<unsigned>{0, 2, 4, 6, 8, 10, 12, 14}));
  // 20 workers: every core gets one, cores 0..3 a second; siblings numbered adjacently.
  std::vector<unsigned> expect{0, 1, 2, 3, 4, 5, 6, 7};
  for (unsigned os = 8; os < 32; os += 2) {
    expect.push_back(os);
  }
  EXPECT_EQ(os_of(t, 20, thread_mapping::balanced), expect);
}

TEST_F(TopologyPlaceHt, NumaBalanced) {
  // 2 workers per NUMA domain, compact inside the domain, numbered domain by domain.
  auto p = t.place(pools, thread_mapping::numa_balanced);
  EXPECT_EQ(os_of(t, p), (std::vector<unsigned>{0, 1, 8, 9, 16, 17, 24, 25}));
  EXPECT_EQ(numa_of(t, p), (std::vector<unsigned>{0, 0, 1, 1, 2, 2, 3, 3}));
  // 6 workers over 4 equal domains: 1.5 each, the first domains take the remainder.
  EXPECT_EQ(os_of(t, 6, thread_mapping::numa_balanced),
            (std::vector<unsigned>{0, 1, 8, 9, 16, 24}));
  // The critical pool (first 2 workers) lands on domain 0 only.
  EXPECT_EQ(pool_numa_counts(t, p, "critical"), (std::map<unsigned, unsigned>{{0, 2}}));
}

TEST_F(TopologyPlaceHt, NumaBalancedMtp) {
  // Algorithm 1: one round-robin over the 4 domains for all threads, critical pool first;
  // inside a domain the next free core.
  auto p = t.place(pools, thread_mapping::numa_balanced_mtp);
  EXPECT_EQ(os_of(t, p), (std::vector<unsigned>{0, 8, 16, 24, 2, 10, 18, 26}));
  EXPECT_EQ(numa_of(t, p), (std::vector<unsigned>{0, 1, 2, 3, 0, 1, 2, 3}));
  EXPECT_EQ(pool_numa_counts(t, p, "critical"), (std::map<unsigned, unsigned>{{0, 1}, {1, 1}}));
  EXPECT_EQ(pool_numa_counts(t, p, "default"),
            (std::map<unsigned, unsigned>{{0, 1}, {1, 1}, {2, 2}, {3, 2}}));
  // A domain's hyperthreads are used only after each of its 4 cores has a worker:
  // 20 workers -> 5 per domain, the 5th on the second PU of the domain's first core.
  auto all = t.place({{"critical", 4}, {"default", 16}}, thread_mapping::numa_balanced_mtp);
  auto os = os_of(t, all);
  EXPECT_EQ(std::vector<unsigned>(os.begin() + 16, os.end()),
            (std::vector<unsigned>{1, 9, 17, 25}));
}

// "pack:4 numa:1 core:8 pu:1": 4 NUMA domains of 8 cores; PU i on domain i/8.
class TopologyPlaceFourSockets : public ::testing::Test {
 protected:
  topology t = topology::synthetic("pack:4 numa:1 core:8 pu:1");
};

TEST_F(TopologyPlaceFourSockets, EachMapping) {
  const std::vector<pool_request> pools{{"critical", 3}, {"default", 5}};
  EXPECT_EQ(os_of(t, t.place(pools, thread_mapping::compact)),
            (std::vector<unsigned>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(os_of(t, t.place(pools, thread_mapping::scatter)),
            (std::vector<unsigned>{0, 8, 16, 24, 1, 9, 17, 25}));
  EXPECT_EQ(os_of(t, t.place(pools, thread_mapping::balanced)),
            (std::vector<unsigned>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(os_of(t, t.place(pools, thread_mapping::numa_balanced)),
            (std::vector<unsigned>{0, 1, 8, 9, 16, 17, 24, 25}));
  // The domain iterator continues from the critical pool into the default pool (Alg. 1,
  // line 6 is not reset at line 9): critical on domains 0,1,2; default starts on domain 3.
  EXPECT_EQ(os_of(t, t.place(pools, thread_mapping::numa_balanced_mtp)),
            (std::vector<unsigned>{0, 8, 16, 24, 1, 9, 17, 25}));
}

TEST_F(TopologyPlaceFourSockets, MtpGivesEveryPoolEveryDomain) {
  // The paper's configurations scaled to 4 domains: every pool gets its share of each domain,
  // while numa-balanced puts the whole critical pool on domain 0.
  for (auto [c, d] : {std::pair{4u, 28u}, {8u, 24u}, {28u, 4u}, {16u, 16u}}) {
    auto p = t.place({{"critical", c}, {"default", d}}, thread_mapping::numa_balanced_mtp);
    auto crit = pool_numa_counts(t, p, "critical");
    auto def = pool_numa_counts(t, p, "default");
    ASSERT_EQ(crit.size(), 4u) << c << "," << d;
    ASSERT_EQ(def.size(), 4u) << c << "," << d;
    for (unsigned n = 0; n < 4; ++n) {
      EXPECT_EQ(crit[n], c / 4);
      EXPECT_EQ(def[n], d / 4);
    }
    auto nb = t.place({{"critical", c}, {"default", d}}, thread_mapping::numa_balanced);
    if (c <= 8) {
      EXPECT_EQ(pool_numa_counts(t, nb, "critical").size(), 1u);
    }
  }
  // Three pools, uneven sizes: shares differ by at most one between domains.
  auto p =
      t.place({{"io", 2}, {"critical", 5}, {"default", 13}}, thread_mapping::numa_balanced_mtp);
  EXPECT_EQ(pool_numa_counts(t, p, "io"), (std::map<unsigned, unsigned>{{0, 1}, {1, 1}}));
  EXPECT_EQ(pool_numa_counts(t, p, "critical"),
            (std::map<unsigned, unsigned>{{0, 1}, {1, 1}, {2, 2}, {3, 1}}));
  EXPECT_EQ(pool_numa_counts(t, p, "default"),
            (std::map<unsigned, unsigned>{{0, 3}, {1, 3}, {2, 3}, {3, 4}}));
}

TEST(TopologyPlace, MtpPaperFigure5) {
  // Jiang et al. 2020, Fig. 5: two NUMA domains, two critical threads X0, X1 and six default
  // threads D0..D5. Consecutive threads of each pool go to different domains.
  auto t = topology::synthetic("pack:2 numa:1 core:4 pu:1");
  auto p = t.place({{"critical", 2}, {"default", 6}}, thread_mapping::numa_balanced_mtp);
  EXPECT_EQ(numa_of(t, p), (std::vector<unsigned>{0, 1, 0, 1, 0, 1, 0, 1}));
  EXPECT_EQ(os_of(t, p), (std::vector<unsigned>{0, 4, 1, 5, 2, 6, 3, 7}));
}

TEST(TopologyPlace, UnevenDomainsFromXml) {
  GRAIN_SKIP_WITHOUT_HWLOC("an XML topology");
  const std::string path = write_uneven_xml();
  auto t = topology::from_xml(path);
  std::remove(path.c_str());
  // Logical PU order is 0,4 | 1,5,2,6,3,7 (os indices).
  EXPECT_EQ(os_of(t, 3, thread_mapping::compact), (std::vector<unsigned>{0, 4, 1}));
  EXPECT_EQ(os_of(t, 4, thread_mapping::balanced), (std::vector<unsigned>{0, 1, 2, 3}));
  EXPECT_EQ(os_of(t, 5, thread_mapping::balanced), (std::vector<unsigned>{0, 4, 1, 2, 3}));
  EXPECT_EQ(os_of(t, 4, thread_mapping::scatter), (std::vector<unsigned>{0, 1, 4, 2}));
  // Shares proportional to the PUs per domain: 4 workers -> 1 and 3.
  EXPECT_EQ(os_of(t, 4, thread_mapping::numa_balanced), (std::vector<unsigned>{0, 1, 5, 2}));
  // mtp: domain 0 has 2 PUs; once full it is skipped, so pools stay disjoint.
  auto p = t.place({{"critical", 2}, {"default", 4}}, thread_mapping::numa_balanced_mtp);
  EXPECT_EQ(os_of(t, p), (std::vector<unsigned>{0, 1, 4, 2, 3, 5}));
}

// ---------------------------------------------------------------------------------------
// Placement: invariants, oversubscription, errors
// ---------------------------------------------------------------------------------------

TEST(TopologyPlace, PoolsAreDisjointWheneverPusSuffice) {
  const char* machines[] = {"pack:1 core:2 pu:1", "pack:2 numa:2 core:4 pu:2",
                            "pack:4 numa:1 core:8 pu:1", "pack:2 numa:3 core:3 pu:4"};
  const std::vector<std::vector<pool_request>> configs{{{"critical", 1}, {"default", 1}},
                                                       {{"critical", 2}, {"default", 6}},
                                                       {{"a", 3}, {"b", 5}, {"c", 7}},
                                                       {{"critical", 50}, {"default", 6}},
                                                       {{"default", 1}}};
  for (const char* desc : machines) {
    auto t = topology::synthetic(desc);
    for (const auto& pools : configs) {
      unsigned n = 0;
      for (const auto& p : pools) {
        n += p.workers;
      }
      if (n > t.pus().size()) {
        continue;
      }
      for (auto m : k_all_mappings) {
        auto p = t.place(pools, m);
        SCOPED_TRACE(std::string(desc) + " " + grain::to_string(m) + " n=" + std::to_string(n));
        ASSERT_EQ(p.workers.size(), n);
        EXPECT_FALSE(p.oversubscribed);
        std::set<unsigned> used;
        for (const auto& w : p.workers) {
          ASSERT_LT(w.pu, t.pus().size());
          used.insert(w.pu);
        }
        EXPECT_EQ(used.size(), n);
        // Workers are numbered in pool order.
        std::size_t w = 0;
        for (const auto& pool : pools) {
          for (unsigned k = 0; k < pool.workers; ++k, ++w) {
            EXPECT_EQ(p.workers[w].pool, pool.name);
            EXPECT_EQ(p.workers[w].pool_index, k);
          }
        }
        EXPECT_EQ(t.place(pools, m).workers.size(), n);
      }
    }
  }
}

TEST(TopologyPlace, OversubscriptionIsRoundRobinAndDeterministic) {
  auto t = topology::synthetic("pack:1 core:2 pu:1");
  for (auto m : k_all_mappings) {
    auto p = t.place({{"critical", 2}, {"default", 3}}, m);
    EXPECT_TRUE(p.oversubscribed);
    EXPECT_EQ(os_of(t, p), (std::vector<unsigned>{0, 1, 0, 1, 0})) << grain::to_string(m);
  }
  auto ht = topology::synthetic("pack:2 numa:2 core:4 pu:2");
  for (auto m : k_all_mappings) {
    SCOPED_TRACE(grain::to_string(m));
    const std::vector<pool_request> pools{{"critical", 10}, {"default", 60}};
    auto p = ht.place(pools, m);
    EXPECT_TRUE(p.oversubscribed);
    ASSERT_EQ(p.workers.size(), 70u);
    // Worker i and i+32 share a PU; the first 32 use every PU once.
    std::set<unsigned> first;
    for (unsigned i = 0; i < 32; ++i) {
      first.insert(p.workers[i].pu);
    }
    EXPECT_EQ(first.size(), 32u);
    for (unsigned i = 32; i < 70; ++i) {
      EXPECT_EQ(p.workers[i].pu, p.workers[i - 32].pu);
    }
    auto again = ht.place(pools, m);
    for (unsigned i = 0; i < 70; ++i) {
      EXPECT_EQ(again.workers[i].pu, p.workers[i].pu);
    }
  }
  // Scatter keeps scattering when it wraps.
  EXPECT_EQ(os_of(ht, 34, thread_mapping::scatter)[32], 0u);
  EXPECT_EQ(os_of(ht, 34, thread_mapping::scatter)[33], 16u);
}

TEST(TopologyPlace, Errors) {
  auto t = topology::synthetic("pack:2 numa:2 core:4 pu:2");
  for (auto m : k_all_mappings) {
    EXPECT_THROW(t.place({}, m), std::invalid_argument);
    try {
      t.place({{"critical", 0}, {"default", 4}}, m);
      FAIL() << "expected std::invalid_argument";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("'critical'"), std::string::npos) << e.what();
    }
    EXPECT_THROW(t.place({{"default", 0}}, m), std::invalid_argument);
    EXPECT_THROW(t.place({{"a", 1}, {"a", 1}}, m), std::invalid_argument);
  }
}

}  // namespace
