"""Environment the benchmarks set before numpy loads OpenBLAS.

OpenBLAS misreads AVX-512 CPUs under some hypervisors and then picks slow kernels, so the benchmarks name the
core type (SkylakeX) -- but only where the CPU has AVX-512: on a CPU without it, the SkylakeX kernels stop numpy
at its first matmul with SIGILL. scripts/run_demo.sh does the same in shell.

    import _env
    _env.set_openblas_coretype()   # before `import numpy`
"""
import os


def cpu_has_avx512f(cpuinfo="/proc/cpuinfo"):
    """True when the CPU flags in `cpuinfo` list avx512f; False when they do not or the file is unreadable."""
    try:
        with open(cpuinfo) as f:
            for line in f:
                if line.startswith("flags") and "avx512f" in line.split(":", 1)[-1].split():
                    return True
    except OSError:
        pass
    return False


def set_openblas_coretype(cpuinfo="/proc/cpuinfo"):
    """Sets OPENBLAS_CORETYPE=SkylakeX where the CPU has AVX-512 and the variable is not set yet; returns the
    value in effect (None: OpenBLAS detects the CPU itself)."""
    if "OPENBLAS_CORETYPE" not in os.environ and cpu_has_avx512f(cpuinfo):
        os.environ["OPENBLAS_CORETYPE"] = "SkylakeX"
    return os.environ.get("OPENBLAS_CORETYPE")
