"""Builds ebb._ebb with the project's CMake (Release, tests off) and installs it with the
package. Environment: EBB_CMAKE_BUILD_DIR (default <repo>/build/python-pip), EBB_CMAKE_ARGS
(extra -D flags, e.g. -DEBB_ORT_ROOT=/path), EBB_JOBS (default 2)."""
import os
import pathlib
import shlex
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent


class CMakeBuild(build_py):
    def run(self):
        build = pathlib.Path(os.environ.get("EBB_CMAKE_BUILD_DIR", REPO / "build" / "python-pip"))
        args = ["cmake", "-S", str(REPO), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                "-DEBB_BUILD_TESTS=OFF", "-DEBB_BUILD_PYTHON=ON",
                f"-DPython_EXECUTABLE={sys.executable}"]
        if shutil.which("ninja"):
            args += ["-G", "Ninja"]
        args += shlex.split(os.environ.get("EBB_CMAKE_ARGS", ""))
        subprocess.check_call(args)
        subprocess.check_call(["cmake", "--build", str(build), "--target", "_ebb", "-j",
                               os.environ.get("EBB_JOBS", "2")])
        super().run()
        out = pathlib.Path(self.build_lib) / "ebb"
        for so in (build / "python" / "ebb").glob("_ebb*.so"):
            shutil.copy2(so, out / so.name)


setup(cmdclass={"build_py": CMakeBuild})
