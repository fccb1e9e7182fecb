"""Benchmark: a network built from a short tuning against the untuned build, timed in one run of this script.

Run: python3 bench/bench_tuned_vs_untuned.py [--model resnet18] [--image-size 64] [--trials-per-task 2]
                                             [--time-budget-s 120] [--rounds 5] [--log FILE]

The README's network example: a zoo model (ResNet-18 of 64 x 64 images and 10 classes by default, random
weights, batch 1), its tasks tuned by the TaskScheduler with num_measure_trials = trials-per-task x tasks
(2 x tasks, as the README), then graph.build with the log and without it (the untuned network: every group
runs its default schedule). Both networks are timed in turn over --rounds alternating rounds (each the best of
a short burst of runs), so that a change of the machine's load hits both; prints the CPU, the load average
before and after, how many groups run a record, the default (no record) or the default because the record
ran slower, both latencies (the best round of each) and the ratio tuned / untuned, which should be at most
about 1 (tuned is never slower than untuned). --log reuses a log (resumed: tuning only fills the budget).
Not a test: figures vary with the machine's load.
"""
import argparse
import os
import tempfile
import time

import _env  # bench/, the script's folder, is on sys.path

_env.set_openblas_coretype()  # before numpy loads OpenBLAS

import numpy as np  # noqa: E402

import autosched as ans  # noqa: E402
from autosched.graph import zoo  # noqa: E402


def best_round(net, x, seconds=0.5):
    """The fastest run of those made in `seconds` (at least 3), after one warm-up run."""
    net(x)
    times, start = [], time.perf_counter()
    while len(times) < 3 or time.perf_counter() - start < seconds:
        t0 = time.perf_counter()
        net(x)
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="resnet18")
    p.add_argument("--image-size", type=int, default=64, help="for the image models (default 64, the README's)")
    p.add_argument("--trials-per-task", type=int, default=2)
    p.add_argument("--time-budget-s", type=float, default=120.0)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--log", help="the record log to write (resumed where it exists; default: a temporary file)")
    args = p.parse_args()
    if args.rounds < 1 or args.trials_per_task < 1:
        p.error("--rounds and --trials-per-task must be at least 1")

    print(f"autosched {ans.__version__} on {_env.cpu_text()}; {_env.load_text()}")
    options = dict(image_size=args.image_size, num_classes=10) if args.model.startswith("resnet") else {}
    graph = zoo.get_model(args.model, **options)
    tasks, weights = ans.extract_tasks(graph, "llvm")
    log = args.log or os.path.join(tempfile.mkdtemp(), "net.json")
    trials = args.trials_per_task * len(tasks)
    opts = ans.TuningOptions(num_measure_trials=trials, time_budget_s=args.time_budget_s,
                             measure_callbacks=[ans.RecordToFile(log)], verbose=0)
    start = time.monotonic()
    result = ans.TaskScheduler(tasks, weights).tune(opts)
    print(f"{args.model} {options}: {len(tasks)} tasks, {result.trials} trials in {time.monotonic() - start:.0f} s "
          f"({result.stop_reason}); estimate {result.latency_after * 1e3:.3f} ms, from "
          f"{result.latency_before * 1e3:.3f} ms with the untuned defaults; log {log}")

    untuned = ans.graph.build(graph, "llvm", verbose=False)
    start = time.monotonic()
    tuned = ans.graph.build(graph, "llvm", log=log, verbose=False)
    records = sum(1 for g in tuned.groups if g.tuned)
    print(f"built in {time.monotonic() - start:.1f} s: {len(tuned.groups)} groups, {records} run a record, "
          f"{len(tuned.untuned)} the default (no record), {len(tuned.default_faster)} the default because the "
          "record ran slower")
    x = np.random.default_rng(0).standard_normal(graph.shape(graph.inputs[0])).astype(graph.dtype(graph.inputs[0]))
    np.testing.assert_allclose(tuned(x)[0], untuned(x)[0], rtol=1e-3, atol=1e-3)
    rounds = []
    for _ in range(args.rounds):
        rounds.append((best_round(untuned, x), best_round(tuned, x)))
    before, after = min(r[0] for r in rounds), min(r[1] for r in rounds)
    ratios = [t / u for u, t in rounds]
    print(f"untuned {before * 1e3:.3f} ms, tuned {after * 1e3:.3f} ms: tuned / untuned = {after / before:.3f} "
          f"(per round {min(ratios):.3f} to {max(ratios):.3f}); {_env.load_note()}")


if __name__ == "__main__":
    main()
