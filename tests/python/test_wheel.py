"""The self-contained wheel: built by scripts/build_wheel.sh, installed into a fresh venv, it imports, tunes a
small task with the XGBoost cost model and builds it, and cross-compiles for AArch64 and RISC-V, with none of
the Debian packages' libraries (LLVM, XGBoost, the OpenCL ICD loader) reachable. LLVM is in the wheel once
(in libautosched_core.so, which the extension and the worker share) and the wheel stays under WHEEL_MAX_MIB.

CI (.ci/run) runs it on every submission, after the other tests. It is long (the wheel's build links LLVM
statically, and compiles the core again where ccache does not have it), so elsewhere it runs only with
AUTOSCHED_TEST_WHEEL=1:

    AUTOSCHED_TEST_WHEEL=1 python3 -m pytest tests/python/test_wheel.py -s
    AUTOSCHED_TEST_WHEEL=1 AUTOSCHED_WHEEL_FILE=dist/autosched-...whl python3 -m pytest ...  # a built wheel

It needs the network (PyPI) to install the wheel's dependencies. Where the test can make a mount namespace
(root, `unshare -m`), the installed package runs in one where /usr/lib/llvm-19 is empty and Debian's
libxgboost, libLLVM and libOpenCL are empty files, as on a machine without those packages; everywhere, ldd
and the process's own memory map must show none of them, and LD_LIBRARY_PATH and LD_PRELOAD are unset.
Prints the figures: the wheel's size, its build time, the install time and the tuning time.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(os.environ.get("AUTOSCHED_TEST_WHEEL", "0") != "1",
                                reason="long: set AUTOSCHED_TEST_WHEEL=1 to build, install and try the wheel")

WHEEL_MAX_MIB = 35
# The package's binaries: the core (with LLVM), and the two small ones that link it.
CORE = "libautosched_core.so"
SMALL_MAX_MIB = {"_core": 8, "autosched_worker": 1}

# Libraries of the build machine's packages that the installed wheel must never load. An OpenCL driver,
# where one is loaded, brings its own (PoCL: libLLVM-15, libxml2, libz3): those are checked only in the
# run without the ICD loader.
NEVER = ("/usr/lib/llvm-19", "libLLVM.so.19", "libLLVM-19", "/usr/lib/x86_64-linux-gnu/libxgboost")
NOT_WITHOUT_DRIVER = NEVER + ("libLLVM", "libOpenCL", "libz3", "libzstd", "libxml2")
DEBIAN_LIBS = ["/usr/lib/x86_64-linux-gnu/libxgboost.so*", "/usr/lib/x86_64-linux-gnu/libLLVM*19*",
               "/usr/lib/x86_64-linux-gnu/libLLVM*.so*", "/usr/lib/x86_64-linux-gnu/libOpenCL.so*"]

# Run inside the venv, from a folder outside the source tree.
TUNE = textwrap.dedent("""
    import json, os, sys, tempfile, time
    import numpy as np
    import autosched as ans
    from autosched import te
    from autosched.records import load_best_state
    from autosched.tune import tune

    core = ans._core
    assert os.path.dirname(ans.__file__).startswith(sys.prefix), ans.__file__
    assert core.has_llvm() and core.has_xgboost() and core.has_opencl(), "backends missing from the wheel"
    assert ans.pretrained.model_path("llvm") is not None, "the pretrained cost model is missing from the wheel"

    A = te.placeholder((64, 64), name="A")
    B = te.placeholder((64, 64), name="B")
    k = te.reduce_axis((0, 64), name="k")
    C = te.compute((64, 64), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    task = ans.SearchTask(compute_dag=ans.ComputeDAG([A, B, C]), target="llvm -num-cores=1", desc="wheel")
    log = os.path.join(tempfile.mkdtemp(), "log.json")
    start = time.monotonic()
    result = tune(task, ans.TuningOptions(num_measure_trials=16, num_measures_per_round=8,
                                              measure_callbacks=[ans.RecordToFile(log)], verbose=0))
    tune_s = time.monotonic() - start
    assert result.trials >= 8, result.trials
    state, measured = load_best_state(log, task)
    assert state is not None and measured is not None, "no valid record in the log"
    mod = ans.build(task, state)
    a, b = (np.random.default_rng(0).standard_normal((64, 64)).astype("float32") for _ in range(2))
    out = np.zeros((64, 64), "float32")
    mod(a, b, out)
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)

    # OpenCL: devices where the loader and a driver are there, else a message naming the package.
    loader_hidden = os.environ.get("LOADER_HIDDEN") == "1"
    devices = core.opencl_devices()
    if loader_hidden:
        assert devices == [], devices
        try:
            core.opencl_hardware_params(ans.Target("opencl"))
        except Exception as e:
            assert "ocl-icd-libopencl1" in str(e) and "libOpenCL.so.1" in str(e), str(e)
            print("opencl without a loader:", e)
        else:
            raise AssertionError("an opencl target without the ICD loader did not fail")
    else:
        print("opencl devices:", [d["name"] for d in devices])

    # Cross-compiling: the wheel has LLVM's AArch64 and RISC-V backends (ELF e_machine 183 and 243), and
    # refuses an architecture that autosched does not compile for.
    for triple, machine in (("aarch64-linux-gnu", 183), ("riscv64-linux-gnu", 243)):
        foreign = ans.SearchTask(compute_dag=task.compute_dag, target="llvm -mtriple=" + triple, desc="cross")
        path = ans.build(foreign).export_object(os.path.join(tempfile.mkdtemp(), "k.o"))
        head = open(path, "rb").read(20)
        assert head[:4] == b"\x7fELF" and int.from_bytes(head[18:20], "little") == machine, (triple, head)
    try:
        ans.Target("llvm -mtriple=armv7-linux-gnueabihf")
    except ValueError as e:
        assert "does not compile for" in str(e), str(e)
    else:
        raise AssertionError("-mtriple=armv7-linux-gnueabihf was accepted")

    forbidden = json.loads(os.environ["FORBIDDEN"])
    maps = open("/proc/self/maps").read()
    bad = sorted({line.split()[-1] for line in maps.splitlines() if any(f in line for f in forbidden)})
    assert not bad, bad
    cores = {line.split()[-1] for line in maps.splitlines() if line.endswith("/libautosched_core.so")}
    assert cores == {os.path.join(os.path.dirname(ans.__file__), "libautosched_core.so")}, cores
    print(json.dumps({"tune_s": tune_s, "trials": result.trials, "stop": result.stop_reason}))
""")


def _can_hide():
    return shutil.which("unshare") and subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode == 0


def _hidden(command, hide_loader):
    """`command` in a mount namespace without LLVM 19's and XGBoost's Debian libraries; with hide_loader, also
    without the OpenCL ICD loader and every libLLVM (else an OpenCL driver keeps the LLVM it needs)."""
    mounts = ["mount -t tmpfs none /usr/lib/llvm-19"] if os.path.isdir("/usr/lib/llvm-19") else []
    patterns = DEBIAN_LIBS if hide_loader else DEBIAN_LIBS[:2]
    for path in sorted({p for pattern in patterns for p in glob.glob(pattern)}):
        if os.path.isfile(path):
            mounts.append(f"mount --bind /dev/null {path}")
    script = " && ".join(mounts + ['exec "$@"'])
    return ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh"] + command


def _build_wheel(out_dir):
    # AUTOSCHED_BUILD_DIR of a test run from the tree names the folder holding _core, not a build folder.
    env = {k: v for k, v in os.environ.items() if k not in ("AUTOSCHED_BUILD_DIR", "AUTOSCHED_BUILD_TESTS")}
    env["AUTOSCHED_WHEEL_DIR"] = str(out_dir)
    start = time.monotonic()
    subprocess.run(["bash", str(ROOT / "scripts" / "build_wheel.sh"), "-q"], check=True, env=env, timeout=3600)
    return time.monotonic() - start


def _check_contents(wheel):
    """The wheel's size, and LLVM in it once: only libautosched_core.so is large."""
    size_mib = wheel.stat().st_size / 2**20
    assert size_mib < WHEEL_MAX_MIB, f"{wheel.name}: {size_mib:.1f} MiB"
    with zipfile.ZipFile(wheel) as z:
        sizes = {os.path.basename(i.filename): i.file_size / 2**20 for i in z.infolist()
                 if i.filename.startswith("autosched/") and "/" not in i.filename[len("autosched/"):]}
    assert CORE in sizes, sorted(sizes)
    for stem, limit in SMALL_MAX_MIB.items():
        # The library itself, not its type stub (_core.pyi)
        (name,) = [n for n in sizes if n == stem or (n.startswith(stem + ".") and not n.endswith(".pyi"))]
        assert sizes[name] < limit, f"{name} is {sizes[name]:.1f} MiB: does it link LLVM again?"
    return size_mib


def test_wheel_installs_into_a_fresh_venv_and_tunes(tmp_path):
    given = os.environ.get("AUTOSCHED_WHEEL_FILE")
    if given:
        wheel, build_s = Path(given).resolve(), None
    else:
        build_s = _build_wheel(tmp_path / "dist")
        (wheel,) = (tmp_path / "dist").glob("autosched-*.whl")
    size_mib = _check_contents(wheel)
    # The venv sees nothing of the tree or of the test's run (PYTHONPATH=python would show pip the tree's
    # autosched as installed already), nor libraries of the machine's through the loader's variables.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTHON", "AUTOSCHED_")) and k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300, env=env)
    python = str(venv / "bin" / "python")
    start = time.monotonic()
    subprocess.run([python, "-m", "pip", "install", "-q", str(wheel)], check=True, timeout=1800, env=env)
    install_s = time.monotonic() - start

    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True, env=env).stdout.strip()
    binaries = glob.glob(os.path.join(site, "autosched", "_core*.so")) + [
        os.path.join(site, "autosched", name) for name in (CORE, "autosched_worker")]
    for binary in binaries:
        assert os.access(binary, os.X_OK) or binary.endswith(".so"), binary
        ldd = subprocess.run(["ldd", binary], check=True, capture_output=True, text=True, env=env).stdout
        assert "not found" not in ldd, ldd
        libxgboost = [line for line in ldd.splitlines() if "libxgboost" in line]
        assert libxgboost and os.path.realpath(libxgboost[0].split("=>")[1].split()[0]).startswith(site), ldd
        bad = [line for line in ldd.splitlines() if any(f in line for f in NOT_WITHOUT_DRIVER)]
        assert not bad, bad

    script = TUNE
    hide = _can_hide()
    figures = None
    for hide_loader in ([True, False] if hide else [False]):
        command = [python, "-c", script]
        if hide:
            command = _hidden(command, hide_loader)
        forbidden = json.dumps(NOT_WITHOUT_DRIVER if hide_loader else NEVER)
        run = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=900,
                             env=dict(env, LOADER_HIDDEN="1" if hide_loader else "0", FORBIDDEN=forbidden))
        assert run.returncode == 0, run.stdout + run.stderr
        print(run.stdout.strip())
        figures = figures or run.stdout.strip().splitlines()[-1]
    print(f"\nwheel {wheel.name}: {size_mib:.1f} MiB; build "
          + (f"{build_s:.0f} s" if build_s is not None else "(given)")
          + f"; install {install_s:.0f} s; tune and build: {figures}; Debian libraries hidden: {bool(hide)}")
