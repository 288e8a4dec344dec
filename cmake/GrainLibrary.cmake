# grain_add_library(<target> EXPORT <name> [PUBLIC deps...] [PRIVATE deps...])
# The stanza the four libraries share: sources are src/**/*.cpp, headers include/ (installed as
# is), the alias grain::<name>, the project's warnings, and the export set grainTargets.
function(grain_add_library target)
  cmake_parse_arguments(arg "" "EXPORT" "PUBLIC;PRIVATE" ${ARGN})
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/*.cpp)
  add_library(${target} ${sources})
  add_library(grain::${arg_EXPORT} ALIAS ${target})
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(${target} PUBLIC ${arg_PUBLIC} PRIVATE ${arg_PRIVATE})
  grain_set_warnings(${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${arg_EXPORT})
  install(TARGETS ${target} EXPORT grainTargets)
  install(DIRECTORY include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endfunction()
