# The pkg-config modules grain links, as PkgConfig::grain_<name> targets. grain's libraries are
# static, so the installed grainTargets.cmake names these targets too: find_package(grain)
# includes this file (installed next to grainConfig.cmake) to recreate them. The grain_
# prefix keeps them apart from a user's own PkgConfig:: targets (say, another Lua).
#
# Each entry: target prefix, pkg-config module, Debian package. grain.pc requires the same.
set(grain_pkg_modules "grain_lua:lua5.4:liblua5.4-dev"
                      "grain_xxhash:libxxhash:libxxhash-dev" "grain_zlib:zlib:zlib1g-dev"
                      "grain_httplib:cpp-httplib:libcpp-httplib-dev")
# PAPI, hwloc and OTF2 are optional (GRAIN_WITH_*: GrainDependencies.cmake; the
# installed config sets them).
if(GRAIN_WITH_PAPI)
  list(APPEND grain_pkg_modules "grain_papi:papi:libpapi-dev")
endif()
if(GRAIN_WITH_HWLOC)
  list(APPEND grain_pkg_modules "grain_hwloc:hwloc:libhwloc-dev")
endif()
if(GRAIN_WITH_OTF2)
  list(APPEND grain_pkg_modules "grain_otf2:otf2:libopen-trace-format2-dev")
endif()
# MPI through pkg-config too: FindMPI's MPI::MPI_C needs the C language enabled in the user's
# project, pkg-config does not.
if(GRAIN_WITH_MPI)
  list(APPEND grain_pkg_modules "grain_mpi:ompi-c:libopenmpi-dev")
endif()

# grain_find_pkg_modules(REQUIRED|QUIET): creates the targets; with QUIET, lists the modules
# not found in grain_pkg_missing (as "module (Debian package P)").
macro(grain_find_pkg_modules mode)
  set(grain_pkg_missing "")
  find_package(PkgConfig ${mode})
  foreach(grain_pkg IN LISTS grain_pkg_modules)
    string(REPLACE ":" ";" grain_pkg "${grain_pkg}")
    list(GET grain_pkg 0 grain_pkg_prefix)
    list(GET grain_pkg 1 grain_pkg_module)
    list(GET grain_pkg 2 grain_pkg_debian)
    if(PKG_CONFIG_FOUND)
      pkg_check_modules(${grain_pkg_prefix} ${mode} IMPORTED_TARGET ${grain_pkg_module})
    endif()
    if(NOT TARGET PkgConfig::${grain_pkg_prefix})
      list(APPEND grain_pkg_missing "${grain_pkg_module} (Debian package ${grain_pkg_debian})")
    endif()
  endforeach()
endmacro()
