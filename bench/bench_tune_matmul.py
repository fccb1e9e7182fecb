"""Benchmark: tune an NxNxN float32 matmul and compare it with its default schedule and numpy, in one run.

Run: python3 bench/bench_tune_matmul.py [--n 512] [--trials 64] [--per-round 64] [--model xgb|random]
Prints the CPU, the tuning progress and a table: the default schedule (plain loop nest), the tuned schedule
and numpy (OpenBLAS), in ms and GFLOP/s, with the ratios, and where the tuning time went. Not a test: timings
vary with the machine and with what else runs on it.
"""
import argparse
import os
import tempfile
import time

import _env  # bench/, the script's folder, is on sys.path

_env.set_openblas_coretype()  # before numpy loads OpenBLAS

import numpy as np  # noqa: E402

import autosched as ans  # noqa: E402
from autosched import search, te  # noqa: E402
from autosched.measure import measure  # noqa: E402


def numpy_seconds(a, b, repeat=5):
    out = np.empty((a.shape[0], b.shape[1]), a.dtype)
    best = float("inf")
    for _ in range(repeat):
        t0, reps = time.perf_counter(), 0
        while time.perf_counter() - t0 < 0.1:
            np.matmul(a, b, out=out)
            reps += 1
        best = min(best, (time.perf_counter() - t0) / reps)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=512)
    parser.add_argument("--trials", type=int, default=64)
    parser.add_argument("--per-round", type=int, default=64)
    parser.add_argument("--model", default="auto", help="xgb, random or auto (xgb when available)")
    parser.add_argument("--target", default="llvm")
    args = parser.parse_args()
    n = args.n
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    task = ans.SearchTask(compute_dag=ans.ComputeDAG([A, B, C]), target=args.target, desc=f"matmul{n}")
    print(f"CPU: {_env.cpu_text()}; OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}")

    builder, runner = ans.LocalBuilder(), ans.LocalRunner()
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "mm.json")
        opts = ans.TuningOptions(num_measure_trials=args.trials, num_measures_per_round=args.per_round,
                                 builder=builder, runner=runner, measure_callbacks=[ans.RecordToFile(log)])
        policy = search.SketchPolicy(task, search.make_cost_model(args.model, "auto"))
        result = task.tune(opts, search_policy=policy)
        mod = task.build_best(log)
    default = measure(task, [task.compute_dag.get_init_state()], builder, runner)[0].mean_cost

    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype("float32")
    b = rng.standard_normal((n, n)).astype("float32")
    c = np.zeros((n, n), "float32")
    mod(a, b, c)
    err = np.abs(c - a @ b).max() / np.abs(a @ b).max()
    theirs = numpy_seconds(a, b)
    flop = 2.0 * n ** 3

    print(f"\nmatmul {n}x{n}x{n} float32, {result.trials} trials (max relative error of the tuned kernel "
          f"{err:.1e})")
    print(f"{'':10}{'ms':>10}{'GFLOP/s':>10}")
    for name, t in (("default", default), ("tuned", result.best_cost), ("numpy", theirs)):
        print(f"{name:10}{t * 1e3:10.3f}{flop / t / 1e9:10.1f}")
    print(f"tuned vs default: {default / result.best_cost:.1f}x faster; tuned vs numpy: "
          f"{theirs / result.best_cost:.2f} (numpy time / tuned time); {_env.load_note()}")
    per = result.seconds["total"] / max(1, result.trials)
    split = ", ".join(f"{k} {v / max(1, result.trials):.3f}" for k, v in result.seconds.items() if k != "total")
    print(f"tuning time per trial: {per:.3f} s = {split}")


if __name__ == "__main__":
    main()
