# Warning flags for ebb's own targets (not for third-party headers, which are SYSTEM).
function(ebb_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow=local
                                           $<$<COMPILE_LANGUAGE:CXX>:-Wnon-virtual-dtor>
                                           -Wno-missing-field-initializers)
  if(EBB_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
