"""Builds the C++ core and the extension autosched._core through CMake.

Environment variables:
  AUTOSCHED_BUILD_DIR    CMake build folder (default: build/release under the
                         source tree, kept between installs so rebuilds are
                         incremental)
  AUTOSCHED_BUILD_TESTS  1 to also build the C++ tests (build folder/autosched_tests)
  AUTOSCHED_JOBS         parallel compile jobs (default: number of CPUs)
  AUTOSCHED_WHEEL        1 to build the self-contained wheel (scripts/build_wheel.sh): LLVM linked
                         statically, XGBoost from the xgboost-cpu package (a dependency of the wheel,
                         and of its build), the OpenCL ICD loader opened at run time; build folder
                         build/wheel unless AUTOSCHED_BUILD_DIR says otherwise

CMake writes the package's binaries (PACKAGE_BINARIES) into the build folder's python/autosched, from
where they are copied into the package: each build folder keeps its own, so a source build and a wheel
build never take each other's. Compiles go through ccache where it is installed.
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
WHEEL = os.environ.get("AUTOSCHED_WHEEL", "0") == "1"
# The XGBoost releases whose C API the cost model calls as it is (it is unchanged from 1.7 to 3.x).
# Below 3.3: from 3.3 on, the package's libxgboost.so names itself libxgboost.so.3 (its SONAME), a file the
# package does not hold, so a library linked against it fails to link and to load.
XGBOOST_REQUIREMENT = "xgboost-cpu>=2.1,<3.3"
# Besides the extension module: the core, which the extension and the worker link, and the worker.
PACKAGE_BINARIES = ["libautosched_core.so", "autosched_worker"]


def pypi_xgboost_library():
    """libxgboost.so of the installed xgboost package (xgboost or xgboost-cpu), found without importing it."""
    import importlib.util

    spec = importlib.util.find_spec("xgboost")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"AUTOSCHED_WHEEL=1 links the xgboost package's library: pip install '{XGBOOST_REQUIREMENT}'")
    for folder in spec.submodule_search_locations:
        library = Path(folder) / "lib" / "libxgboost.so"
        if library.exists():
            return library
    raise SystemExit(f"the xgboost package at {list(spec.submodule_search_locations)} has no lib/libxgboost.so")


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        import pybind11

        ext_path = Path(self.get_ext_fullpath(ext.name)).resolve()
        default_dir = ROOT / "build" / ("wheel" if WHEEL else "release")
        build_dir = Path(os.environ.get("AUTOSCHED_BUILD_DIR", default_dir)).resolve()
        build_dir.mkdir(parents=True, exist_ok=True)
        out_dir = build_dir / "python" / "autosched"
        tests = os.environ.get("AUTOSCHED_BUILD_TESTS", "0") == "1"
        configure = [
            "cmake", "-S", str(ROOT), "-B", str(build_dir),
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DAUTOSCHED_PY_OUTPUT_DIR={out_dir}",
            f"-DAUTOSCHED_BUILD_TESTS={'ON' if tests else 'OFF'}",
            f"-DPython_EXECUTABLE={sys.executable}",
            f"-Dpybind11_DIR={pybind11.get_cmake_dir()}",
        ]
        if WHEEL:
            configure += ["-DAUTOSCHED_SELF_CONTAINED=ON", f"-DAUTOSCHED_XGBOOST_PYPI_LIBRARY={pypi_xgboost_library()}"]
        env = dict(os.environ)
        if shutil.which("ccache"):
            configure += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]
            env.setdefault("CCACHE_BASEDIR", str(ROOT))  # paths in the tree hash alike wherever it is
        if shutil.which("ninja") and not (build_dir / "Makefile").exists():
            configure += ["-G", "Ninja"]
            if WHEEL:  # each isolated build has its own ninja: the one cached by the last build is gone
                configure += [f"-DCMAKE_MAKE_PROGRAM={shutil.which('ninja')}"]
        subprocess.check_call(configure, env=env)
        jobs = os.environ.get("AUTOSCHED_JOBS", str(os.cpu_count() or 2))
        subprocess.check_call(["cmake", "--build", str(build_dir), "--parallel", jobs], env=env)
        ext_path.parent.mkdir(parents=True, exist_ok=True)
        for name in [ext_path.name] + PACKAGE_BINARIES:  # replaced, not rewritten: a copy may be running
            shutil.copy2(out_dir / name, ext_path.parent / f".{name}.tmp")
            os.replace(ext_path.parent / f".{name}.tmp", ext_path.parent / name)


# ml_dtypes: numpy's bfloat16 (arrays of bfloat16 tensors are ml_dtypes.bfloat16 arrays)
requires = ["numpy>=1.22", "ml_dtypes>=0.2", "tqdm"] + ([XGBOOST_REQUIREMENT] if WHEEL else [])
setup(ext_modules=[CMakeExtension("autosched._core")], cmdclass={"build_ext": CMakeBuild}, install_requires=requires)
