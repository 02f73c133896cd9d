"""Builds ebb._ebb with the project's CMake (Release, tests off) and packs it, with the ONNX
Runtime library it loads (libonnxruntime.so.1, found through the extension's $ORIGIN RPATH), into
the package: a wheel that needs no checkout (docs/python.md). The same wheel carries
onnxruntime_genai (genai's Python API over ebb's libonnxruntime-genai.so, docs/genai.md) with
that library, libebb.so.0 and libonnxruntime.so.1 beside it (each finds the next through $ORIGIN). Environment: EBB_CMAKE_BUILD_DIR
(default <repo>/build/python-pip), EBB_CMAKE_ARGS (extra -D flags, e.g. -DEBB_ORT_ROOT=/path),
EBB_JOBS (default 2); EBB_PYTHON_EXTENSION_DIR: a folder holding an extension already built
(e.g. build/release/python/ebb), packed as is instead of running CMake."""
import os
import pathlib
import shlex
import shutil
import subprocess
import sys

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py


class BinaryDistribution(Distribution):
    """The package holds a compiled extension: the wheel is tagged for this Python and platform."""

    def has_ext_modules(self):
        return True


HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent


class CMakeBuild(build_py):
    def run(self):
        prebuilt = os.environ.get("EBB_PYTHON_EXTENSION_DIR")
        if prebuilt:
            super().run()
            self.copy_binaries(pathlib.Path(prebuilt))
            return
        build = pathlib.Path(os.environ.get("EBB_CMAKE_BUILD_DIR", REPO / "build" / "python-pip"))
        args = ["cmake", "-S", str(REPO), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                "-DEBB_BUILD_TESTS=OFF", "-DEBB_BUILD_PYTHON=ON",
                f"-DPython_EXECUTABLE={sys.executable}"]
        if shutil.which("ninja"):
            args += ["-G", "Ninja"]
        args += shlex.split(os.environ.get("EBB_CMAKE_ARGS", ""))
        subprocess.check_call(args)
        subprocess.check_call(["cmake", "--build", str(build), "--target", "_ebb",
                               "onnxruntime_genai_py", "-j", os.environ.get("EBB_JOBS", "2")])
        super().run()
        self.copy_binaries(build / "python" / "ebb")

    def copy_binaries(self, src):
        out = pathlib.Path(self.build_lib) / "ebb"
        exts = list(src.glob("_ebb*.so"))
        if not exts:
            raise SystemExit(f"no _ebb*.so in {src}: build the extension first")
        # copy2 follows symlinks: the build tree's libonnxruntime.so.1 links to .deps/.
        for so in exts + list(src.glob("libonnxruntime.so*")):
            shutil.copy2(so, out / so.name)
        # onnxruntime_genai: its library (a symlink in the build tree), libebb.so.0 and ORT.
        genai_src = src.parent / "onnxruntime_genai"
        genai_lib = genai_src / "libonnxruntime-genai.so"
        if genai_lib.exists():
            genai_out = pathlib.Path(self.build_lib) / "onnxruntime_genai"
            genai_out.mkdir(parents=True, exist_ok=True)
            shutil.copy2(genai_lib, genai_out / genai_lib.name)
            libebb = genai_lib.resolve().parent.parent / "src" / "libebb.so.0"
            shutil.copy2(libebb, genai_out / "libebb.so.0")
            for so in src.glob("libonnxruntime.so*"):
                shutil.copy2(so, genai_out / so.name)


setup(cmdclass={"build_py": CMakeBuild}, distclass=BinaryDistribution)
