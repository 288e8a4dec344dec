include(CMakePackageConfigHelpers)
set(GRAIN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/grain)
install(EXPORT grainTargets NAMESPACE grain:: DESTINATION ${GRAIN_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/grainConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/grainConfig.cmake
  INSTALL_DESTINATION ${GRAIN_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/grainConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/grainConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/grainConfigVersion.cmake
  ${CMAKE_CURRENT_SOURCE_DIR}/cmake/GrainPkgConfigModules.cmake
  DESTINATION ${GRAIN_CMAKE_DIR})

# grain.pc finds the prefix from its own place (${pcfiledir}), so `cmake --install --prefix`
# to anywhere gives a working file (unless the install dirs are set as absolute paths).
set(GRAIN_PC_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(GRAIN_PC_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(GRAIN_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
if(IS_ABSOLUTE "${GRAIN_PC_DIR}")
  set(GRAIN_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH GRAIN_PC_PREFIX /prefix/${GRAIN_PC_DIR} /prefix)
  string(REGEX REPLACE "/$" "" GRAIN_PC_PREFIX "${GRAIN_PC_PREFIX}")
  set(GRAIN_PC_PREFIX "\${pcfiledir}/${GRAIN_PC_PREFIX}")
endif()
set(GRAIN_PC_REQUIRES "")
foreach(grain_pkg IN LISTS grain_pkg_modules)
  string(REPLACE ":" ";" grain_pkg "${grain_pkg}")
  list(GET grain_pkg 1 grain_pkg_module)
  string(APPEND GRAIN_PC_REQUIRES "${grain_pkg_module} ")
endforeach()
string(APPEND GRAIN_PC_REQUIRES "spdlog")
if(GRAIN_TIMING)
  set(GRAIN_TIMING_VALUE 1)
else()
  set(GRAIN_TIMING_VALUE 0)
endif()
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/grain.pc.in ${CMAKE_CURRENT_BINARY_DIR}/grain.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/grain.pc DESTINATION ${GRAIN_PC_DIR})

install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/policies-lua/ DESTINATION ${CMAKE_INSTALL_DATADIR}/grain/policies
  FILES_MATCHING PATTERN "*.lua")
