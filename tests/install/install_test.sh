#!/bin/sh
# The installed ebb, as a user consumes it (issue 27), entirely outside the source tree:
#   1. cmake --install BUILD_DIR --prefix <tmp>/prefix; checks the layout: libebb.so.X.Y.Z with
#      its SONAME, the headers, ebb.pc, the CMake package, bin/ebb (--help, --version);
#   2. builds tests/install/consumer/hello.c and hello.cpp (copied to <tmp>) with pkg-config and
#      runs them on MODEL_DIR;
#   3. builds the same two with CMake (find_package(ebb CONFIG), ebb::ebb) and runs them;
#   and the same for hello_genai.cpp, a genai program, against the installed drop-in
#   libonnxruntime-genai.so (onnxruntime-genai.pc; find_package(onnxruntime-genai CONFIG)).
# usage: install_test.sh BUILD_DIR SOURCE_DIR MODEL_DIR
set -eu
BUILD=$1
SRC=$2
MODEL=$3
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ebb-install-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
PREFIX=$WORK/prefix
fail() { echo "install_test: FAIL: $*" >&2; exit 1; }
step() { echo "install_test: $*"; }

step "cmake --install $BUILD --prefix $PREFIX"
cmake --install "$BUILD" --prefix "$PREFIX" >"$WORK/install.log" || { cat "$WORK/install.log"; fail "cmake --install"; }
PC=$(find "$PREFIX" -name ebb.pc | head -n 1)
[ -n "$PC" ] || fail "no ebb.pc under $PREFIX"
export PKG_CONFIG_PATH="$(dirname "$PC")"
LIBDIR=$(pkg-config --variable=libdir ebb)
VERSION=$(pkg-config --modversion ebb)
MAJOR=${VERSION%%.*}
[ -f "$LIBDIR/libebb.so.$VERSION" ] || fail "no $LIBDIR/libebb.so.$VERSION"
[ -L "$LIBDIR/libebb.so.$MAJOR" ] && [ -L "$LIBDIR/libebb.so" ] || fail "libebb.so symlinks missing"
SONAME=$(readelf -d "$LIBDIR/libebb.so.$VERSION" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$SONAME" = "libebb.so.$MAJOR" ] || fail "SONAME is '$SONAME', not libebb.so.$MAJOR"
ls "$LIBDIR"/libonnxruntime.so* >/dev/null 2>&1 || fail "ONNX Runtime not installed beside libebb"
for h in ebb.h model.h generation.h runtime.h export.h; do
  [ -f "$PREFIX/include/ebb/$h" ] || fail "header include/ebb/$h missing"
done
[ -f "$LIBDIR/cmake/ebb/ebbConfig.cmake" ] && [ -f "$LIBDIR/cmake/ebb/ebbConfigVersion.cmake" ] ||
  fail "CMake package files missing under $LIBDIR/cmake/ebb"
for h in ort_genai_c.h ort_genai.h ebb_genai.h; do
  [ -f "$PREFIX/include/onnxruntime-genai/$h" ] || fail "header include/onnxruntime-genai/$h missing"
done
[ -f "$LIBDIR/libonnxruntime-genai.so" ] || fail "no $LIBDIR/libonnxruntime-genai.so"
[ -f "$LIBDIR/pkgconfig/onnxruntime-genai.pc" ] || fail "no onnxruntime-genai.pc"
[ -f "$LIBDIR/cmake/onnxruntime-genai/onnxruntime-genaiConfig.cmake" ] ||
  fail "CMake package files missing under $LIBDIR/cmake/onnxruntime-genai"
"$PREFIX/bin/ebb" --help | grep -q "generate" || fail "bin/ebb --help"
"$PREFIX/bin/ebb" --version | grep -q "ebb $VERSION" || fail "bin/ebb --version"

cp -r "$SRC/tests/install/consumer" "$WORK/consumer"
cd "$WORK"

step "pkg-config: $(pkg-config --cflags --libs ebb)"
RPATH="-Wl,-rpath,$LIBDIR"
# shellcheck disable=SC2046
cc -std=c11 -pedantic -Wall -Wextra -Werror consumer/hello.c -o hello_c_pc \
  $(pkg-config --cflags --libs ebb) "$RPATH" || fail "C consumer (pkg-config) does not build"
# shellcheck disable=SC2046
c++ -std=c++20 -Wall -Wextra -Werror consumer/hello.cpp -o hello_cpp_pc \
  $(pkg-config --cflags --libs ebb) "$RPATH" || fail "C++ consumer (pkg-config) does not build"
# shellcheck disable=SC2046
c++ -std=c++17 -Wall -Wextra -Werror consumer/hello_genai.cpp -o hello_genai_pc \
  $(pkg-config --cflags --libs onnxruntime-genai) "$RPATH" ||
  fail "genai consumer (pkg-config onnxruntime-genai) does not build"
./hello_genai_pc "$MODEL" || fail "genai consumer (pkg-config) failed"
./hello_c_pc "$MODEL" || fail "C consumer (pkg-config) failed"
./hello_cpp_pc "$MODEL" || fail "C++ consumer (pkg-config) failed"

step "CMake: find_package(ebb CONFIG) with CMAKE_PREFIX_PATH=$PREFIX"
cmake -S consumer -B cmake-build -DCMAKE_PREFIX_PATH="$PREFIX" -DCMAKE_BUILD_TYPE=Release \
  >"$WORK/cmake.log" 2>&1 || { cat "$WORK/cmake.log"; fail "consumer CMake configure"; }
cmake --build cmake-build >"$WORK/build.log" 2>&1 || { cat "$WORK/build.log"; fail "consumer CMake build"; }
./cmake-build/hello_c "$MODEL" || fail "C consumer (CMake) failed"
./cmake-build/hello_cpp "$MODEL" || fail "C++ consumer (CMake) failed"
./cmake-build/hello_genai "$MODEL" || fail "genai consumer (CMake) failed"
# Neither consumer saw the source tree: their compile lines name only the prefix.
if grep -rq -- "$SRC/include" cmake-build/CMakeFiles 2>/dev/null; then fail "CMake consumer used $SRC/include"; fi
step "OK"
