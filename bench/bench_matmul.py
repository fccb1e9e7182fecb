"""Benchmark: a hand-written schedule of a 1024x1024x1024 float32 matmul against numpy (OpenBLAS).

Run: python3 bench/bench_matmul.py [--n 1024] [--target llvm] [--schedule packed|metaschedule]
Prints the CPU, GFLOP/s of both, their ratio and the kernel's compile time. Not a test: timings vary with the
machine.

--schedule metaschedule is the best schedule TVM's MetaSchedule found for this matmul in 200 trials on a
2-core AVX-512 Xeon, written in autosched's steps: i split [4, 1, 128, 2], j [1, 2, 8, 64], k [128, 8], order
i0 j0 i1 j1 k0 i2 j2 k1 i3 j3, a cache write at the outer tile (j1), j3 vectorised, auto_unroll_max_step 16.

The schedule: the k x 32 panel of B that a tile of C reads is packed once into a contiguous buffer
(Bp[jo, k, jv], a stage of the computation, timed with it); C is tiled for registers (8 rows x 32 columns
= 16 AVX-512 accumulators, through a local cache_write stage with unrolled rows and vectorized columns) and
for caches (row blocks), and the outer loop runs in parallel on the thread pool.
"""
import argparse
import os
import sys
import time

import _env  # bench/, the script's folder, is on sys.path

_env.set_openblas_coretype()  # before numpy loads OpenBLAS

import numpy as np  # noqa: E402

import autosched as ans  # noqa: E402
from autosched import te  # noqa: E402

ROWS, COLS, LANES = 8, 32, 16  # register tile of C


def matmul_packed(n):
    """C = A @ B with B repacked to Bp[j // COLS, k, j % COLS] (contiguous COLS-wide panels)."""
    A = te.placeholder((n, n), name="A", dtype="float32")
    B = te.placeholder((n, n), name="B", dtype="float32")
    Bp = te.compute((n // COLS, n, COLS), lambda jo, k, jv: B[k, jo * COLS + jv], name="Bp")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * Bp[j // COLS, k, j % COLS], axis=k), name="C")
    return ans.ComputeDAG([A, B, C]), C, Bp


def schedule(dag, C, Bp, row_block):
    s = dag.get_init_state()
    # Packing: parallel over panels, vectorized along the panel's row.
    jo, kk, jv = s[Bp].iters
    s.parallel(Bp, jo)
    s.vectorize(Bp, jv)
    CC = s.cache_write(C, "local")
    i, j = s[C].iters
    i_block, i_tile, i_reg = s.split(C, i, [row_block // ROWS, ROWS])
    j_tile, j_reg = s.split(C, j, [COLS])
    s.reorder(C, [i_block, j_tile, i_tile, i_reg, j_reg])
    s.parallel(C, i_block)
    s.compute_at(CC, C, i_tile)
    ci, cj, ck = s[CC].iters
    cj_vec_outer, cj_vec = s.split(CC, cj, [LANES])
    s.reorder(CC, [ck, ci, cj_vec_outer, cj_vec])
    s.unroll(CC, ci)
    s.unroll(CC, cj_vec_outer)
    s.vectorize(CC, cj_vec)
    _, c_vec = s.split(C, j_reg, [LANES])
    s.vectorize(C, c_vec)
    return s


def metaschedule_schedule(n):
    """TVM MetaSchedule's best 1024^3 schedule (see the module's docstring) for an n x n x n matmul."""
    A = te.placeholder((n, n), name="A", dtype="float32")
    B = te.placeholder((n, n), name="B", dtype="float32")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    dag = ans.ComputeDAG([A, B, C])
    s = dag.get_init_state()
    cc = s.cache_write(C, "local")
    i, j = s[C].iters
    i0, i1, i2, i3 = s.split(C, i, [1, n // 8, 2])
    j0, j1, j2, j3 = s.split(C, j, [2, n // 128, 64])
    s.reorder(C, [i0, j0, i1, j1, i2, j2, i3, j3])
    s.compute_at(cc, C, j1)
    ci, cj, ck = s[cc].iters
    ci2, ci3 = s.split(cc, ci, [2])
    cj2, cj3 = s.split(cc, cj, [64])
    ck0, ck1 = s.split(cc, ck, [8])
    s.reorder(cc, [ck0, ci2, cj2, ck1, ci3, cj3])
    s.vectorize(cc, cj3)
    s.pragma(cc, ck0, "auto_unroll_max_step$16")
    s.parallel(C, s.fuse(C, [i0, j0, i1, j1]))
    s.vectorize(C, j3)
    return dag, s


def gflops(n, seconds):
    return 2.0 * n ** 3 / seconds / 1e9


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1024)
    parser.add_argument("--target", default="llvm")
    parser.add_argument("--schedule", choices=["packed", "metaschedule"], default="packed")
    parser.add_argument("--row-block", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--show", action="store_true", help="print the lowered loop nest")
    parser.add_argument("--peak-gflops", type=float, default=None,
                        help="the machine's fp32 peak, to print %% of peak (e.g. 2 cores x 32 FLOP/cycle x GHz "
                             "for Zen 4, whose AVX-512 FMAs run as two 256-bit halves)")
    args = parser.parse_args()
    n = args.n
    if args.schedule == "packed":
        assert n % COLS == 0 and n % args.row_block == 0 and args.row_block % ROWS == 0
        dag, C, Bp = matmul_packed(n)
        state = schedule(dag, C, Bp, args.row_block)
    else:
        assert n % 128 == 0, "the MetaSchedule tiling needs n divisible by 128"
        dag, state = metaschedule_schedule(n)
    start = time.perf_counter()
    mod = ans.build(dag, state, args.target)
    build_seconds = time.perf_counter() - start
    if args.show:
        print(mod.lowered_ir())

    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype("float32")
    b = rng.standard_normal((n, n)).astype("float32")
    c = np.zeros((n, n), "float32")
    mod(a, b, c)
    expected = a @ b
    err = np.abs(c - expected).max() / np.abs(expected).max()
    if err > 1e-4:
        sys.exit(f"wrong result: max relative error {err:.2e}")

    ours = min(mod.time_evaluator(number=3, repeat=args.repeat, min_repeat_ms=100)(a, b, c))
    numpy_times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        reps = 0
        while True:
            np.matmul(a, b, out=expected)
            reps += 1
            if time.perf_counter() - t0 > 0.1:
                break
        numpy_times.append((time.perf_counter() - t0) / reps)
    theirs = min(numpy_times)

    coretype = os.environ.get("OPENBLAS_CORETYPE", "(unset)")
    print(f"CPU: {ans.Target(args.target)}")
    print(f"matmul {n}x{n}x{n} float32, schedule {args.schedule}, target '{args.target}', "
          f"OPENBLAS_CORETYPE={coretype}, load average {os.getloadavg()[0]:.2f}")
    print(f"{'':12}{'ms':>10}{'GFLOP/s':>10}")
    print(f"{'autosched':12}{ours * 1e3:10.2f}{gflops(n, ours):10.1f}")
    print(f"{'numpy':12}{theirs * 1e3:10.2f}{gflops(n, theirs):10.1f}")
    print(f"ratio autosched / numpy: {theirs / ours:.2f}; {_env.load_note()}")
    if args.peak_gflops:
        print(f"% of peak ({args.peak_gflops:.0f} GFLOP/s): autosched {100 * gflops(n, ours) / args.peak_gflops:.0f}%, "
              f"numpy {100 * gflops(n, theirs) / args.peak_gflops:.0f}%")
    print(f"kernel compile time: {mod.compile_seconds:.3f} s (build incl. lowering: {build_seconds:.3f} s)")


if __name__ == "__main__":
    main()
