# Every dependency comes from a Debian package (scripts/setup installs them).
find_package(Threads REQUIRED)
find_package(Boost 1.74 REQUIRED COMPONENTS context)
include(GrainPkgConfigModules)
grain_find_pkg_modules(REQUIRED)
find_package(spdlog REQUIRED)
