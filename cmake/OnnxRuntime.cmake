# Locates ONNX Runtime and defines the imported target onnxruntime::onnxruntime.
# Search order: -DEBB_ORT_ROOT, $ENV{EBB_ORT_ROOT}, <repo>/.deps/onnxruntime (scripts/bootstrap).
if(NOT EBB_ORT_ROOT)
  if(DEFINED ENV{EBB_ORT_ROOT} AND NOT "$ENV{EBB_ORT_ROOT}" STREQUAL "")
    set(EBB_ORT_ROOT "$ENV{EBB_ORT_ROOT}")
  else()
    set(EBB_ORT_ROOT "${PROJECT_SOURCE_DIR}/.deps/onnxruntime")
  endif()
endif()

find_path(EBB_ORT_INCLUDE_DIR onnxruntime_cxx_api.h
          PATHS "${EBB_ORT_ROOT}/include" "${EBB_ORT_ROOT}/include/onnxruntime" NO_DEFAULT_PATH)
find_library(EBB_ORT_LIBRARY NAMES onnxruntime PATHS "${EBB_ORT_ROOT}/lib" NO_DEFAULT_PATH)
if(NOT EBB_ORT_INCLUDE_DIR OR NOT EBB_ORT_LIBRARY)
  message(FATAL_ERROR
    "ONNX Runtime not found under EBB_ORT_ROOT=${EBB_ORT_ROOT}.\n"
    "Fix: run scripts/bootstrap (fetches the pinned ORT 1.30.0 into .deps/), or pass "
    "-DEBB_ORT_ROOT=/path/to/onnxruntime (a folder with include/ and lib/).")
endif()

add_library(onnxruntime::onnxruntime SHARED IMPORTED GLOBAL)
set_target_properties(onnxruntime::onnxruntime PROPERTIES
  IMPORTED_LOCATION "${EBB_ORT_LIBRARY}"
  IMPORTED_NO_SONAME OFF
  INTERFACE_INCLUDE_DIRECTORIES "${EBB_ORT_INCLUDE_DIR}"
  INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${EBB_ORT_INCLUDE_DIR}")
get_filename_component(EBB_ORT_LIB_DIR "${EBB_ORT_LIBRARY}" DIRECTORY)
message(STATUS "ONNX Runtime: ${EBB_ORT_LIBRARY}")

# Install the runtime next to libebb so an installed ebb needs no LD_LIBRARY_PATH.
file(GLOB _ebb_ort_libs "${EBB_ORT_LIB_DIR}/libonnxruntime*.so*")
install(FILES ${_ebb_ort_libs} DESTINATION ${CMAKE_INSTALL_LIBDIR})
