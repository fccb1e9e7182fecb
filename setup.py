"""Builds the C++ core and the extension autosched._core through CMake.

Environment variables:
  AUTOSCHED_BUILD_DIR    CMake build folder (default: build/release under the
                         source tree, kept between installs so rebuilds are
                         incremental)
  AUTOSCHED_BUILD_TESTS  1 to also build the C++ tests (build folder/autosched_tests)
  AUTOSCHED_JOBS         parallel compile jobs (default: number of CPUs)
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        import pybind11

        ext_dir = Path(self.get_ext_fullpath(ext.name)).resolve().parent
        build_dir = Path(os.environ.get("AUTOSCHED_BUILD_DIR", ROOT / "build" / "release")).resolve()
        build_dir.mkdir(parents=True, exist_ok=True)
        tests = os.environ.get("AUTOSCHED_BUILD_TESTS", "0") == "1"
        configure = [
            "cmake", "-S", str(ROOT), "-B", str(build_dir),
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DAUTOSCHED_PY_OUTPUT_DIR={ext_dir}",
            f"-DAUTOSCHED_BUILD_TESTS={'ON' if tests else 'OFF'}",
            f"-DPython_EXECUTABLE={sys.executable}",
            f"-Dpybind11_DIR={pybind11.get_cmake_dir()}",
        ]
        if shutil.which("ninja") and not (build_dir / "Makefile").exists():
            configure += ["-G", "Ninja"]
        subprocess.check_call(configure)
        jobs = os.environ.get("AUTOSCHED_JOBS", str(os.cpu_count() or 2))
        subprocess.check_call(["cmake", "--build", str(build_dir), "--parallel", jobs])


setup(ext_modules=[CMakeExtension("autosched._core")], cmdclass={"build_ext": CMakeBuild})
