include(CMakePackageConfigHelpers)
install(EXPORT grainTargets NAMESPACE grain:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/grain)
configure_package_config_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/grainConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/grainConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/grain)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/grainConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/grainConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/grainConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/grain)
install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/policies-lua/ DESTINATION ${CMAKE_INSTALL_DATADIR}/grain/policies
  FILES_MATCHING PATTERN "*.lua")
