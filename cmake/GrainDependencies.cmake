# Every dependency comes from a Debian package (scripts/setup installs them).
find_package(Threads REQUIRED)
find_package(Boost 1.74 REQUIRED COMPONENTS context)
# Optional dependencies: ON when pkg-config finds the module, unless set. Without PAPI,
# --grain:papi says PAPI is not built in; without hwloc the topology comes from Linux's /sys
# (the NUMA mappings are refused); without OTF2 traces are Perfetto's or Chrome's format. The
# installed config and grain.pc follow the choice.
macro(grain_optional_module var module description)
  if(NOT DEFINED ${var})
    find_package(PkgConfig QUIET)
    set(grain_optional_default OFF)
    if(PKG_CONFIG_FOUND)
      pkg_check_modules(grain_probe_${module} QUIET ${module})
      if(grain_probe_${module}_FOUND)
        set(grain_optional_default ON)
      endif()
    endif()
    option(${var} "${description} (default: ON when pkg-config finds ${module})"
      ${grain_optional_default})
  endif()
endmacro()
grain_optional_module(GRAIN_WITH_PAPI papi "PAPI hardware counters")
grain_optional_module(GRAIN_WITH_HWLOC hwloc "hwloc for the machine's topology")
grain_optional_module(GRAIN_WITH_OTF2 otf2 "OTF2 traces (without: Perfetto and Chrome JSON)")
include(GrainPkgConfigModules)
grain_find_pkg_modules(REQUIRED)
find_package(spdlog REQUIRED)
find_package(cereal REQUIRED)  # libcereal-dev: header-only serialization of action arguments
if(GRAIN_WITH_MPI)
  find_package(MPI REQUIRED COMPONENTS C)  # libopenmpi-dev: for mpiexec in the tests
endif()
