# What `cmake --install` (and `make install PREFIX=...`) puts under the prefix (docs/c_api.md):
#   lib/libebb.so.0.1.0, libebb.so.0 (SONAME), libebb.so   the library (public API only)
#   lib/libonnxruntime.so*                                  the ONNX Runtime it runs on
#                                                          (cmake/OnnxRuntime.cmake)
#   include/ebb/*.h                                         the public headers (C++ and C)
#   lib/pkgconfig/ebb.pc                                    pkg-config --cflags --libs ebb
#   lib/cmake/ebb/ebbConfig.cmake, ...                      find_package(ebb CONFIG) -> ebb::ebb
#   bin/ebb                                                 the CLI (`ebb --help`)
# Installed binaries find the libraries next to them through an $ORIGIN-relative RUNPATH
# (CMAKE_INSTALL_RPATH in the top-level CMakeLists.txt), so no LD_LIBRARY_PATH is needed.
include(CMakePackageConfigHelpers)

install(TARGETS libebb EXPORT ebbTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ebb DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(EBB_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/ebb)
install(EXPORT ebbTargets NAMESPACE ebb:: DESTINATION ${EBB_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/ebbConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/cmake/ebbConfig.cmake
                              INSTALL_DESTINATION ${EBB_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cmake/ebbConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cmake/ebbConfig.cmake
              ${CMAKE_BINARY_DIR}/cmake/ebbConfigVersion.cmake
        DESTINATION ${EBB_CMAKE_DIR})

# pkg-config: paths relative to ${pcfiledir}, so the installed tree can be moved.
file(RELATIVE_PATH EBB_PC_TO_PREFIX "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
string(REGEX REPLACE "/$" "" EBB_PC_TO_PREFIX "${EBB_PC_TO_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/ebb.pc.in ${CMAKE_BINARY_DIR}/cmake/ebb.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/cmake/ebb.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
