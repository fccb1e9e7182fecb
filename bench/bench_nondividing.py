"""Benchmark: one hand-written matmul+relu schedule (8x32 register tiles, a local accumulator, vectorized
columns, parallel rows) on sizes its tiles divide and sizes they do not, against numpy (OpenBLAS) in the
same run. Loop partitioning keeps the full tiles of a non-dividing split SIMD; only the tail is guarded.

Run: python3 bench/bench_nondividing.py [--sizes 512 500 509] [--target llvm]
Not a test: timings vary with the machine.
"""
import argparse
import time

import _env  # bench/, the script's folder, is on sys.path

_env.set_openblas_coretype()  # before numpy loads OpenBLAS

import numpy as np  # noqa: E402

import autosched as ans  # noqa: E402
from autosched import ops, te  # noqa: E402


def matmul_relu(n, m, k):
    a = te.placeholder((n, k), name="A")
    b = te.placeholder((k, m), name="B")
    return [a, b, ops.relu(ops.matmul(a, b))]


def tiled_schedule(dag):
    """8x32 register tiles accumulated in a local buffer, vectorized columns, parallel rows."""
    s = dag.get_init_state()
    local = s.cache_write("T_matmul", "local")
    i, j = s["T_matmul"].iters
    io, ii = s.split("T_matmul", i, [8])
    jo, ji = s.split("T_matmul", j, [32])
    s.reorder("T_matmul", [io, jo, ii, ji])
    s.compute_at(local, "T_matmul", jo)
    li, lj, lk = s[local].iters
    lj_outer, lj_vec = s.split(local, lj, [16])
    s.reorder(local, [lk, li, lj_outer, lj_vec])
    s.unroll(local, li)
    s.unroll(local, lj_outer)
    s.vectorize(local, lj_vec)
    s.parallel("T_matmul", io)
    return s


def _numpy_seconds(a, b, out, min_seconds=0.1):
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < min_seconds:
        np.maximum(np.matmul(a, b, out=out), 0, out=out)
        calls += 1
    return (time.perf_counter() - start) / calls


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[512, 500, 509])
    parser.add_argument("--target", default="llvm", help="target text (default: llvm, the host CPU)")
    args = parser.parse_args()
    print(f"matmul+relu n x n x n float32, target '{args.target}'")
    print(f"{'n':>6}{'autosched GFLOP/s':>20}{'numpy GFLOP/s':>16}{'ratio':>8}")
    rng = np.random.default_rng(0)
    for n in args.sizes:
        dag = ans.ComputeDAG(matmul_relu(n, n, n))
        mod = ans.build(dag, tiled_schedule(dag), args.target)
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
    print(_env.load_note())


if __name__ == "__main__":
    main()
