"""Benchmark: a tuned network's latency when another process keeps one of its cores busy, beside onnxruntime.

Run: python3 bench/bench_busy_core.py [--models mobilenet_v2] [--log-dir DIR] [--threads N] [--seconds 2]
                                      [--rounds 3] [--pieces 8] [--tiny]

Builds each zoo network from DIR/<model>.json (a log of bench/bench_networks.py; default schedules where there
is none) and times it with `--threads` threads beside onnxruntime (same graph, same input, same thread count),
first on an idle machine, then while a busy-looping process is pinned to the last core the network runs on, then
idle again. Each condition runs `--rounds` alternating rounds of `--seconds` per engine; the table gives the
best and the median run of each and the ratio onnxruntime / autosched of the medians (above 1: autosched is
faster). A busy core is the usual state of a shared machine (a data loader, a second model, a VM's neighbour):
the kernels' parallel loops cut their work into pieces that a free thread takes over from a held-up one
(`--pieces`: autosched.runtime.set_parallel_pieces_per_task), and a kernel never waits for a thread whose
core has not run it yet. Not a test: figures vary with the machine's load. --tiny runs the models at
bench_networks.py's tiny size: a check that the script works, whose figures mean nothing.
"""
import argparse
import multiprocessing
import os
import sys
import time

import _env  # bench/, the script's folder, is on sys.path

_env.set_openblas_coretype()  # before numpy loads OpenBLAS

import numpy as np  # noqa: E402

from autosched import graph as agraph  # noqa: E402
from autosched import runtime  # noqa: E402
from bench_networks import onnxruntime_peer, zoo_model  # noqa: E402


def busy_loop(core, stop):
    os.sched_setaffinity(0, {core})
    while not stop.is_set():
        pass


def run_times(fn, seconds):
    times, end = [], time.perf_counter() + seconds
    while time.perf_counter() < end or len(times) < 3:
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def time_condition(engines, seconds, rounds):
    """{engine: (best, median) seconds} over `rounds` alternating rounds."""
    times = {name: [] for name in engines}
    for _ in range(rounds):
        for name, fn in engines.items():
            times[name] += run_times(fn, seconds)
    return {name: (min(t), float(np.median(t))) for name, t in times.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="mobilenet_v2")
    parser.add_argument("--log-dir", default=None, help="folder with <model>.json logs (default: none, untuned)")
    parser.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--seconds", type=float, default=2.0, help="seconds per engine and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pieces", type=int, default=8, help="pieces per thread's share of a parallel loop")
    parser.add_argument("--tiny", action="store_true", help="tiny models (a check that the script works)")
    args = parser.parse_args()
    cores = sorted(os.sched_getaffinity(0))
    if args.threads < 2 or len(cores) < args.threads:
        sys.exit(f"needs at least 2 threads on as many cores (threads {args.threads}, cores {len(cores)})")
    runtime.set_parallel_pieces_per_task(args.pieces)
    os.sched_setaffinity(0, set(cores[:args.threads]))  # before the thread pool starts: its threads inherit it
    busy_core = cores[args.threads - 1]
    print(f"CPU: {_env.cpu_text()}; {args.threads} threads on cores {cores[:args.threads]}, busy core {busy_core}, "
          f"pieces per thread {args.pieces}")
    for name in args.models.split(","):
        g = zoo_model(name, args.tiny)
        log = os.path.join(args.log_dir, f"{name}.json") if args.log_dir else None
        if log is not None and not os.path.exists(log):
            print(f"{name}: no log {log}; default schedules")
            log = None
        # "llvm" as bench_networks.py tunes for: this process's cores, which are `--threads` (pinned above)
        net = agraph.build(g, "llvm", log, verbose=False)
        rng = np.random.default_rng(0)
        inputs = [rng.standard_normal(g.shape(i)).astype(g.dtype(i)) for i in g.inputs]
        peer, why = onnxruntime_peer(g, inputs, args.threads)
        engines = {"autosched": lambda: net(*inputs)}
        if peer is None:
            print(f"{name}: onnxruntime not timed ({why})")
        else:
            engines["onnxruntime"] = peer[0]
        print(f"\n{name} ({'tuned: ' + log if log else 'untuned'})")
        print(f"{'condition':12s} {'autosched best / median ms':>28s} {'onnxruntime best / median ms':>30s} "
              f"{'ratio (medians)':>16s}")
        for condition in ("idle", "busy core", "idle again"):
            stop = multiprocessing.Event()
            hog = None
            if condition == "busy core":
                hog = multiprocessing.Process(target=busy_loop, args=(busy_core, stop), daemon=True)
                hog.start()
                time.sleep(0.5)
            try:
                t = time_condition(engines, args.seconds, args.rounds)
            finally:
                if hog is not None:
                    stop.set()
                    hog.join()
            ours = t["autosched"]
            line = f"{condition:12s} {ours[0] * 1e3:13.3f} / {ours[1] * 1e3:8.3f}     "
            if "onnxruntime" in t:
                peer = t["onnxruntime"]
                line += f"{peer[0] * 1e3:15.3f} / {peer[1] * 1e3:8.3f} {peer[1] / ours[1]:16.2f}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
