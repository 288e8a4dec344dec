# grain_set_warnings(target): the project's warning set; -Werror when GRAIN_WERROR is on (CI).
function(grain_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-missing-field-initializers)
  if(GRAIN_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
