// grain-lulesh reproduces LULESH 2.0's Sedov blast wave: the reference's iteration count and
// final origin energy (within 1e-9 relative) and a symmetric energy field, with every variant,
// worker count, partition size, region setting and injected load; bad input is refused.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "lulesh_run.hpp"

namespace grain::test::lulesh {
namespace {

class Lulesh : public program_test {};

TEST_F(Lulesh, GrainOneWorker) {
  expect_reference(run("-s 10 --grain:threads=1"), s10_iterations, s10_energy);
}

TEST_F(Lulesh, GrainTwoWorkers) {
  expect_reference(run("-s 10 --grain:threads=2"), s10_iterations, s10_energy);
}

TEST_F(Lulesh, GrainCriticalPathAtHighPriority) {
  expect_reference(run("-s 10 --grain:threads=2 --priority=critical"), s10_iterations, s10_energy);
}

// The critical path's tasks on a pool of their own (Jiang et al. 2020), with critical_pool.lua
// free to move the split: the same answer; without the pool the run is refused, naming it.
TEST_F(Lulesh, GrainCriticalPathOnItsOwnPool) {
  expect_reference(run("-s 10 --grain:threads=2 --priority=pool --grain:pools=critical:1"),
                   s10_iterations, s10_energy);
  expect_reference(run("-s 10 --grain:threads=2 --priority=pool --grain:pools=critical:1 "
                       "--grain:sample-interval=5 --grain:policy=" GRAIN_SOURCE_DIR
                       "/policies-lua/critical_pool.lua"),
                   s10_iterations, s10_energy);
  const report r = run("-s 5 -i 3 --grain:threads=2 --priority=pool");
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "no pool named 'critical'")) << r.output;
}

TEST_F(Lulesh, GrainFineAndCoarsePartitions) {
  // One element per task, and the whole domain in one task.
  expect_reference(run("-s 10 --grain:threads=2 --partition=1"), s10_iterations, s10_energy);
  expect_reference(run("-s 10 --grain:threads=2 --grain:knob=lulesh.partition=1000"),
                   s10_iterations, s10_energy);
}

TEST_F(Lulesh, Serial) {
  expect_reference(run("-s 10 --variant=serial"), s10_iterations, s10_energy);
}

TEST_F(Lulesh, OpenMPEverySchedule) {
  for (const char* s : {"static", "dynamic", "guided"})
    expect_reference(run(std::string("-s 10 --variant=omp --threads=2 --schedule=") + s),
                     s10_iterations, s10_energy);
}

TEST_F(Lulesh, RegionsBalanceAndCostChangeTheCostNotTheAnswer) {
  expect_reference(run("-s 10 --grain:threads=2 -r 20 -b 3 -c 4"), s10_iterations, s10_energy);
  expect_reference(run("-s 10 --variant=omp --threads=2 -r 1"), s10_iterations, s10_energy);
}

TEST_F(Lulesh, InjectedLoadChangesTheTimeNotTheAnswer) {
  expect_reference(run("-s 10 --grain:threads=2 --inject=exponential --inject-unit-us=1 "
                       "--iters-per-us=100"),
                   s10_iterations, s10_energy);
  expect_reference(run("-s 10 --variant=omp --threads=2 --inject=scaled --inject-a=2 "
                       "--inject-unit-us=1 --iters-per-us=100"),
                   s10_iterations, s10_energy);
}

TEST_F(Lulesh, LargerMeshShortRunAgreesAcrossVariants) {
  // -s 20 for 40 cycles: every variant ends in the same state, to the last bit.
  const report serial = run("-s 20 -i 40 --variant=serial");
  ASSERT_EQ(serial.status, 0) << serial.output;
  EXPECT_EQ(serial.iterations, 40);
  for (const char* args :
       {"-s 20 -i 40 --grain:threads=2", "-s 20 -i 40 --grain:threads=2 --partition=37",
        "-s 20 -i 40 --variant=omp --threads=2 --schedule=dynamic"}) {
    const report r = run(args);
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.iterations, 40) << args;
    EXPECT_EQ(r.energy, serial.energy) << args;
  }
}

// Several domains per locality: 8 of -s 5 make the -s 10 mesh, 27 of -s 5 the -s 15 one.
TEST_F(Lulesh, DomainsPerLocality) {
  expect_reference(run("-s 5 --grain:threads=2 --domains-per-locality=8"), s10_iterations,
                   s10_energy);
  const report serial = run("-s 15 -i 60 --variant=serial");
  const report cube = run("-s 5 -i 60 --grain:threads=2 --domains-per-locality=27");
  ASSERT_EQ(serial.status, 0) << serial.output;
  ASSERT_EQ(cube.status, 0) << cube.output;
  EXPECT_EQ(cube.iterations, 60);
  EXPECT_NEAR(cube.energy, serial.energy, 1e-9 * serial.energy) << cube.output;
  const report odd = run("-s 5 --grain:threads=2 --domains-per-locality=2");
  EXPECT_NE(odd.status, 0);
  EXPECT_TRUE(contains(odd.output, "must be a cube")) << odd.output;
}

TEST_F(Lulesh, ProgressAndQuiet) {
  const report p = run("-s 5 -i 3 -p --grain:threads=2");
  ASSERT_EQ(p.status, 0) << p.output;
  EXPECT_TRUE(contains(p.output, "cycle = 1, time = ")) << p.output;
  EXPECT_TRUE(contains(p.output, "cycle = 3, time = ")) << p.output;
  const report q = run("-s 5 -i 3 -q --variant=serial");
  ASSERT_EQ(q.status, 0);
  EXPECT_EQ(q.output, "");
}

TEST_F(Lulesh, BadInputIsRefused) {
  for (const char* args :
       {"-s abc", "-s", "-s 0", "--variant=mpi", "--schedule=auto", "-x", "--inject=pareto",
        "--inject=uniform --inject-a=3 --inject-b=1", "--variant=omp --domains-per-locality=8",
        "--domains-per-locality=0", "--priority=max"}) {
    const report r = run(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "grain-lulesh: ")) << r.output;
  }
}

#if defined(GRAIN_LULESH_MPIEXEC)
// 8 localities with -s 5 each make the same mesh as one with -s 10: the same answer. The halo
// sums each shared node's forces in the reference's order, so the energy is the reference's
// 8-rank one (2.7205311684703443e+04), within 1e-15 of one rank's.
TEST_F(Lulesh, EightLocalities) {
  const std::string mpirun =
      std::string(GRAIN_LULESH_MPIEXEC) + " -np 8 --oversubscribe --allow-run-as-root ";
  expect_reference(run_command_report(mpirun + program + " -s 5 --grain:threads=1"), s10_iterations,
                   s10_energy);
}

// 8 localities of 8 domains of -s 5: the -s 20 mesh.
TEST_F(Lulesh, EightLocalitiesOfEightDomains) {
  const std::string mpirun =
      std::string(GRAIN_LULESH_MPIEXEC) + " -np 8 --oversubscribe --allow-run-as-root ";
  const report cube = run_command_report(mpirun + program +
                                         " -s 5 -i 30 --grain:threads=1 --domains-per-locality=8");
  const report serial = run("-s 20 -i 30 --variant=serial");
  ASSERT_EQ(cube.status, 0) << cube.output;
  ASSERT_EQ(serial.status, 0) << serial.output;
  EXPECT_EQ(cube.iterations, 30);
  EXPECT_NEAR(cube.energy, serial.energy, 1e-9 * serial.energy) << cube.output;
  // The halo parcels coalesced: several domains of a locality send to the same one.
  const report coalesced = run_command_report(
      mpirun + program +
      " -s 5 -i 30 --grain:threads=1 --domains-per-locality=8 --grain:coalescing=lulesh_halo");
  ASSERT_EQ(coalesced.status, 0) << coalesced.output;
  EXPECT_EQ(coalesced.iterations, 30);
  EXPECT_NEAR(coalesced.energy, serial.energy, 1e-9 * serial.energy) << coalesced.output;
}

TEST_F(Lulesh, LocalitiesMustMakeACube) {
  const std::string mpirun =
      std::string(GRAIN_LULESH_MPIEXEC) + " -np 2 --oversubscribe --allow-run-as-root ";
  const report r = run_command_report(mpirun + program + " -s 5 --grain:threads=1");
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "must be a cube")) << r.output;
}
#endif

// adaptive_grain.lua on the knob lulesh.partition from one element per task, traced: the
// domains are re-partitioned between cycles, and the answer stays the reference's.
report run_adaptive_grain(const std::string& args) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("grain-lulesh-policy-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto settings = dir / "settings.lua";
  std::ofstream(settings) << "ADAPTIVE_GRAIN = { knob = \"lulesh.partition\" }\n";
  report r = run(args + " --grain:threads=2 --partition=1 --grain:policy=" + settings.string() +
                 " --grain:policy=" + GRAIN_SOURCE_DIR +
                 "/policies-lua/adaptive_grain.lua --grain:trace=" + (dir / "trace").string());
  EXPECT_TRUE(std::filesystem::exists(dir / "trace" / "traces.otf2")) << r.output;
  std::filesystem::remove_all(dir);
  return r;
}

// The partition size the run ended with (its how-line names it).
long final_partition(const report& r) {
  const auto at = r.output.find(", partition ");
  return at == std::string::npos ? 0 : std::strtol(r.output.c_str() + at + 12, nullptr, 10);
}

// A thousand tasks per phase on -s 10: the policy coarsens.
TEST_F(Lulesh, AdaptiveGrainPolicyFromAFineStart) {
  const report r = run_adaptive_grain("-s 10");
  expect_reference(r, s10_iterations, s10_energy);
  EXPECT_GT(final_partition(r), 1) << r.output;
}

// Eight domains on one locality re-partition together: the first domain to plan a cycle
// reads the knob for all of them (their partitions meet in one reduction per cycle).
TEST_F(Lulesh, AdaptiveGrainPolicyWithSeveralDomainsPerLocality) {
  const report r = run_adaptive_grain("-s 5 --domains-per-locality=8");
  expect_reference(r, s10_iterations, s10_energy);
  EXPECT_GT(final_partition(r), 1) << r.output;
}

}  // namespace
}  // namespace grain::test::lulesh
