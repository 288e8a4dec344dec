# Every dependency comes from a Debian package (scripts/setup installs them).
find_package(Threads REQUIRED)
find_package(Boost 1.74 REQUIRED COMPONENTS context)
# Optional: PAPI (hardware counters). ON when pkg-config finds it, unless set; with OFF the
# build does not need libpapi-dev and --grain:papi says that PAPI is not built in.
if(NOT DEFINED GRAIN_WITH_PAPI)
  find_package(PkgConfig QUIET)
  set(grain_papi_default OFF)
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(grain_papi_probe QUIET papi)
    if(grain_papi_probe_FOUND)
      set(grain_papi_default ON)
    endif()
  endif()
  option(GRAIN_WITH_PAPI "PAPI hardware counters (default: ON when pkg-config finds papi)"
    ${grain_papi_default})
endif()
include(GrainPkgConfigModules)
grain_find_pkg_modules(REQUIRED)
find_package(spdlog REQUIRED)
find_package(cereal REQUIRED)  # libcereal-dev: header-only serialization of action arguments
if(GRAIN_WITH_MPI)
  find_package(MPI REQUIRED COMPONENTS C)  # libopenmpi-dev: for mpiexec in the tests
endif()
