# Every dependency comes from a Debian package (scripts/setup installs them).
find_package(Threads REQUIRED)
find_package(Boost 1.74 REQUIRED COMPONENTS context)
include(GrainPkgConfigModules)
grain_find_pkg_modules(REQUIRED)
find_package(spdlog REQUIRED)
find_package(cereal REQUIRED)  # libcereal-dev: header-only serialization of action arguments
if(GRAIN_WITH_MPI)
  find_package(MPI REQUIRED COMPONENTS C)  # libopenmpi-dev: for mpiexec in the tests
endif()
