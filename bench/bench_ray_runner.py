"""Benchmark: measured candidates per minute with RayRunner on 1, 2 and 4 local actors against LocalRunner, on the
same candidates of one task.

Run: python3 bench/bench_ray_runner.py [--n 128] [--candidates 48] [--actors 1,2,4] [--min-repeat-ms 20]
Starts a local Ray instance with one custom resource "bench_device" per actor wanted, draws the candidates
once (the start states and search rounds of a random-model policy), measures them with LocalRunner, then with
RayRunner(resources={"bench_device": 1}, num_actors=k), and prints candidates per minute, the ratio to
LocalRunner and the load average. Actors on one machine share its cores: their timings overlap each other's
(on a cluster each actor holds its own device), so this measures the runner's throughput and overhead, not a
farm's. Not a test: figures vary with the machine and what else runs on it. --actors '' (or ray not installed:
pip install 'autosched[ray]') measures with LocalRunner only.
"""
import argparse
import os
import platform
import time

import _env  # bench/, the script's folder, is on sys.path

_env.set_openblas_coretype()  # before numpy loads OpenBLAS

import autosched as ans  # noqa: E402
from autosched import search, te  # noqa: E402
from autosched.measure import measure  # noqa: E402


def matmul_task(n):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    r = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return ans.SearchTask(compute_dag=ans.ComputeDAG([A, B, C]), target="llvm", desc=f"matmul {n}^3")


def candidates(task, count):
    policy = search.SketchPolicy(task, "random", search.SearchParams(evolutionary_search_population=256),
                                 seed=0)
    states = [s for _, s in search.tuning_start_states(policy)]
    while len(states) < count:
        found = policy.continue_search_one_round(min(32, count - len(states)))
        if not found:
            break
        states += found
        policy.record_measured(found, [ans.MeasureResult(costs=[1.0])] * len(found))
    return states[:count]


def rate(task, states, builder, runner):
    t0 = time.monotonic()
    results = measure(task, states, builder, runner)
    seconds = time.monotonic() - t0
    ok = sum(r.ok for r in results)
    return len(states) / seconds * 60, seconds, ok


def ray_rows(ray, counts, task, states, builder, options):
    """(name, candidates per minute, seconds, verified) with RayRunner on each count of local actors."""
    rows = []
    t0 = time.monotonic()
    ray.init(num_cpus=max(counts), resources={"bench_device": max(counts)}, include_dashboard=False,
             logging_level="warning")
    print(f"ray.init: {time.monotonic() - t0:.1f} s")
    try:
        for k in counts:
            runner = ans.RayRunner(resources={"bench_device": 1}, num_actors=k, **options)
            t0 = time.monotonic()
            runner._ensure_actors(runner._measurer_for(builder)._options)  # actors started before timing
            start = time.monotonic() - t0
            per_min, seconds, ok = rate(task, states, builder, runner)
            rows.append((f"RayRunner, {k} actor{'s' if k > 1 else ''} (start {start:.1f} s)", per_min, seconds, ok))
            runner.close()
    finally:
        ray.shutdown()
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=128)
    ap.add_argument("--candidates", type=int, default=48)
    ap.add_argument("--actors", default="1,2,4", help="comma-separated actor counts ('': LocalRunner only)")
    ap.add_argument("--min-repeat-ms", type=float, default=20)
    args = ap.parse_args()
    counts = [int(x) for x in args.actors.split(",") if x.strip()]
    try:
        import ray
    except ImportError:
        ray, counts = None, []
    ray_text = f"ray {ray.__version__}" if ray else "ray not installed (pip install 'autosched[ray]'): LocalRunner only"
    print(f"CPU: {ans.Target('llvm').describe()}; {os.cpu_count()} cores; {platform.machine()}; {ray_text}")
    task = matmul_task(args.n)
    states = candidates(task, args.candidates)
    options = dict(min_repeat_ms=args.min_repeat_ms, timeout=20)
    builder = ans.LocalBuilder(n_parallel=1)
    rows = []
    load_before = os.getloadavg()
    per_min, seconds, ok = rate(task, states, builder, ans.LocalRunner(**options))
    rows.append(("LocalRunner", per_min, seconds, ok))
    if counts:
        rows += ray_rows(ray, counts, task, states, builder, options)
    base = rows[0][1]
    print(f"{len(states)} candidates of {task.desc}, LocalBuilder(n_parallel=1), min_repeat_ms={args.min_repeat_ms:g}")
    print(f"| {'runner':<34} | candidates/min | x LocalRunner | seconds | verified")
    for name, per_min, seconds, ok in rows:
        print(f"| {name:<34} | {per_min:>14.1f} | {per_min / base:>13.2f} | {seconds:>7.1f} | {ok}/{len(states)}")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in load_before)}; after: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
