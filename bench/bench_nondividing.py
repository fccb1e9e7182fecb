"""Benchmark: one hand-written matmul+relu schedule (8x32 register tiles, a local accumulator, vectorized
columns, parallel rows) on sizes its tiles divide and sizes they do not, against numpy (OpenBLAS) in the
same run. Loop partitioning keeps the full tiles of a non-dividing split SIMD; only the tail is guarded.

Run: python3 bench/bench_nondividing.py [--sizes 512 500 509]
Not a test: timings vary with the machine.
"""
import argparse
import time

import _env  # bench/, the script's folder, is on sys.path

_env.set_openblas_coretype()  # before numpy loads OpenBLAS

import numpy as np  # noqa: E402

import autosched as ans  # noqa: E402
from autosched.demo import _matmul_relu, _tiled_schedule  # noqa: E402


def _numpy_seconds(a, b, out, min_seconds=0.1):
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < min_seconds:
        np.maximum(np.matmul(a, b, out=out), 0, out=out)
        calls += 1
    return (time.perf_counter() - start) / calls


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[512, 500, 509])
    parser.add_argument("--target", default="llvm -mcpu=sapphirerapids -num-cores=2")
    args = parser.parse_args()
    print(f"matmul+relu n x n x n float32, target '{args.target}'")
    print(f"{'n':>6}{'autosched GFLOP/s':>20}{'numpy GFLOP/s':>16}{'ratio':>8}")
    rng = np.random.default_rng(0)
    for n in args.sizes:
        dag = ans.ComputeDAG(_matmul_relu(n, n, n))
        mod = ans.build(dag, _tiled_schedule(dag), args.target)
        a = rng.standard_normal((n, n)).astype("float32")
        b = rng.standard_normal((n, n)).astype("float32")
        out = np.zeros((n, n), "float32")
        mod(a, b, out)
        if not np.allclose(out, np.maximum(a @ b, 0), rtol=1e-3, atol=1e-3):
            raise SystemExit(f"n={n}: wrong result")
        ours = min(mod.time_evaluator(number=3, repeat=5, min_repeat_ms=50)(a, b, out))
        theirs = min(_numpy_seconds(a, b, out) for _ in range(3))
        flop = 2.0 * n**3
        print(f"{n:6}{flop / ours / 1e9:20.1f}{flop / theirs / 1e9:16.1f}{theirs / ours:8.2f}")


if __name__ == "__main__":
    main()
