"""Benchmark: the TaskScheduler's strategies on a small "network" of weighted tasks, same trial budget.

Run: python3 bench/bench_task_scheduler.py [--trials 192] [--per-round 16] [--model auto|xgb|random]
Tunes four tasks (a 128^3 matmul used 4 times, matmuls of 64^3 and 32^3 and a row-wise prod used once) with strategy
"gradient" and with "round-robin", each from scratch, and prints per strategy the trials each task got and
the estimated total latency (sum of weight x best latency) before (baselines) and after. Not a test: timings
vary with the machine and with what else runs on it.
"""
import argparse
import os
import tempfile
import time

import _env  # bench/, the script's folder, is on sys.path

_env.set_openblas_coretype()  # before numpy loads OpenBLAS

import autosched as ans  # noqa: E402
from autosched import te  # noqa: E402


def matmul(n):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    return [A, B, te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="mm")]


def rowprod():
    P = te.placeholder((64, 256), name="P")
    r = te.reduce_axis((0, 256), name="r")
    return [P, te.compute((64,), lambda i: te.prod(P[i, r], axis=r), name="rowprod")]


def tasks_and_weights():
    tasks = [(matmul(128), "matmul128", 4), (matmul(64), "matmul64", 1), (matmul(32), "matmul32", 1),
             (rowprod(), "rowprod", 1)]
    return ([ans.SearchTask(compute_dag=ans.ComputeDAG(t), target="llvm", desc=d) for t, d, _ in tasks],
            [w for _, _, w in tasks])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=192)
    parser.add_argument("--per-round", type=int, default=16)
    parser.add_argument("--model", default="auto")
    args = parser.parse_args()
    print(f"CPU: {os.cpu_count()} cores; model {args.model}; {args.trials} trials, {args.per_round} per round")
    rows = []
    for strategy in ("gradient", "round-robin"):
        tasks, weights = tasks_and_weights()
        with tempfile.TemporaryDirectory() as tmp:
            opts = ans.TuningOptions(num_measure_trials=args.trials, num_measures_per_round=args.per_round,
                                     runner=ans.LocalRunner(min_repeat_ms=20), verbose=0,
                                     measure_callbacks=[ans.RecordToFile(os.path.join(tmp, "log.json"))])
            t0 = time.monotonic()
            result = ans.TaskScheduler(tasks, weights, strategy=strategy, cost_model=args.model).tune(opts)
            rows.append((strategy, result, time.monotonic() - t0))
    names = [t.desc for t in tasks_and_weights()[0]]
    print(f"| strategy | trials per task ({', '.join(names)}) | before (us) | after (us) | speed-up | time (s) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for strategy, r, seconds in rows:
        before, after = r.latency_before, r.latency_after
        speedup = f"{before / after:.2f}" if before and after else "-"
        print(f"| {strategy} | {r.task_trials} | {before * 1e6:.1f} | {after * 1e6:.1f} | {speedup} | "
              f"{seconds:.0f} |")
    print(_env.load_note())
    print("\nweight x best latency per task (us):")
    for strategy, r, _ in rows:
        parts = [f"{n} {w:g} x {t.best_cost * 1e6:.2f}" if t.best_cost else f"{n} -"
                 for n, w, t in zip(names, r.weights, r.task_results)]
        print(f"  {strategy}: {', '.join(parts)}")


if __name__ == "__main__":
    main()
