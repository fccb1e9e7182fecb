"""Benchmark: end-to-end latency of zoo networks tuned by autosched, beside onnxruntime and PyTorch.

Run: python3 bench/bench_networks.py [--models resnet18,mobilenet_v2,bert_layer] [--trials-per-task 64]
                                     [--log-dir DIR] [--time-budget-s S] [--threads N]
                                     [--cost-model auto|scratch] [--no-transfer-seeds] [--checkpoints-s 600]
                                     [--network-timing-s 120] [--rounds 3] [--round-gap-s 10] [--tiny]

For each model of the zoo (random weights, batch 1): extract its tasks, tune them with the TaskScheduler
(num_measure_trials = trials-per-task x tasks, resumed from DIR/<model>.json when it is there), build the
network with the log (graph.build), check its output against onnxruntime (the graph exported with
Graph.to_onnx, same weights) and PyTorch (the same graph run op by op with torch.nn.functional), then time
all three in this process on the same input, in turn over --rounds alternating rounds (the best of each is
reported, and the range of the per-round ratios beside it), --round-gap-s seconds apart: a shared host that
slows down for tens of seconds then slows one round, not all of them. Prints the trial budget and wall time of
tuning, and latency ratios peer / autosched (above 1: autosched is faster). Peers that are not installed are reported
and skipped (`pip install onnx onnxruntime torch==2.13.0`). --cost-model scratch and --no-transfer-seeds turn off
the pretrained cost model and the seeds from similar tasks, for a run to compare with; the estimated total
latency after each scheduler round is printed against the tuning time (the curve). Not a test: figures vary
with the machine's load.

--checkpoints-s 600 keeps a copy of the log as it stood after 600 s of tuning; after tuning, the network built
from that copy is timed too (the figure at 10 minutes of a longer run: the scheduler spread those 10 minutes
knowing the whole budget, so a run stopped at 10 minutes can differ). After each model: where the tuning time
went (measuring, search, cost model), the tasks' table (weight, trials, best kernel, its share of the estimate)
and onnxruntime's profile of the same graph by operator type, the per-task comparison behind the ratio; and
per task, its share of the estimate beside its kernels' time inside runs of the built network (what the
estimate misses: caches as the other kernels leave them, each weight read once per run) and onnxruntime's
profiled time for the same graph nodes, with the share of onnxruntime's time no task holds (bench/_ort_profile.py
matches its nodes, renamed and fused as it runs them, to the tasks'; bench_models.py --ort-table prints the same).

--tiny runs the models at a tiny size (TINY_OPTIONS) with timings of a few runs: a check that the script works
(tests/python/test_bench.py), whose figures mean nothing.
"""
import argparse
import collections
import os
import shlex
import shutil
import sys
import tempfile
import time

import _env  # bench/, the script's folder, is on sys.path

_env.set_openblas_coretype()  # before numpy loads OpenBLAS

import numpy as np  # noqa: E402

import _ort_profile  # noqa: E402
import autosched as ans  # noqa: E402
from autosched import graph as agraph  # noqa: E402
from autosched.graph import zoo  # noqa: E402
from autosched.graph.extract import constant_bytes, last_level_cache_bytes  # noqa: E402


# zoo.get_model options of each model for --tiny: a few channels and tokens, so a run takes seconds.
TINY_OPTIONS = {"resnet18": dict(image_size=32, num_classes=10), "resnet50": dict(image_size=32, num_classes=10),
                "mobilenet_v2": dict(image_size=32, num_classes=10),
                "bert_layer": dict(seq_len=8, hidden=32, heads=2, ffn=64),
                "lightglue_block": dict(num_keypoints=8, dim=16, heads=2)}


def zoo_model(name, tiny=False):
    return zoo.get_model(name, **(TINY_OPTIONS[name] if tiny else {}))


def alternate(runs, rounds, min_seconds=1.0, gap_seconds=0.0):
    """Times each of runs (name -> fn) with best_of, in turn, `rounds` times over, gap_seconds between rounds: a
    machine that drifts between the first and the last timing (other tenants of a VM, clock changes) then weighs
    on all of them alike. Returns name -> [the best time of each round]."""
    times = {name: [] for name in runs}
    for r in range(rounds):
        if r > 0 and gap_seconds > 0:
            time.sleep(gap_seconds)
        for name, fn in runs.items():
            times[name].append(_env.best_of(fn, min_seconds, min_runs=5))
    return times


def close(a, b):
    scale = max(float(np.abs(b).max()), 1e-6)
    return float(np.abs(a - b).max()) / scale


def onnxruntime_peer(g, inputs, threads):
    try:
        import onnxruntime as ort
    except ImportError:
        return None, "onnxruntime is not installed"
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    sess = ort.InferenceSession(g.to_onnx().SerializeToString(), opts, providers=["CPUExecutionProvider"])
    feed = dict(zip(g.inputs, inputs))
    run = lambda: sess.run(None, feed)  # noqa: E731
    return (run, run()), ""


def torch_peer(g, inputs, threads):
    try:
        import torch
        from autosched.graph.torch_runner import TorchGraph
    except ImportError:
        return None, "torch is not installed"
    torch.set_num_threads(threads)
    net = TorchGraph(g)
    tensors = [torch.from_numpy(x) for x in inputs]
    return (lambda: net.run(*tensors), net(*inputs)), ""


class TuningCurve:
    """A measure callback: after every batch, the tuning time and the sum of weight x best latency of the tasks
    (once each has a valid schedule), the scheduler's estimate without the time outside the kernels."""

    def __init__(self, tasks, weights):
        self.weights = {t.workload_key: w for t, w in zip(tasks, weights)}
        self.best, self.points, self.start = {}, [], time.monotonic()

    def __call__(self, policy, inputs, results):
        for inp, res in zip(inputs, results):
            key = inp.task.workload_key
            if res.error == "none" and res.costs:  # error names (MeasureErrorNo)
                cost = sum(res.costs) / len(res.costs)
                self.best[key] = min(cost, self.best.get(key, cost))
        if len(self.best) == len(self.weights):
            total = sum(w * self.best[k] for k, w in self.weights.items())
            self.points.append((time.monotonic() - self.start, total * 1e3))


class LogCheckpoints:
    """A measure callback that copies the log the first time the tuning time passes each checkpoint (seconds).
    The record writer appends a batch's records before the callbacks run, so each copy holds whole records."""

    def __init__(self, log, seconds):
        self.log, self.pending, self.start = log, sorted(seconds), time.monotonic()
        self.copies = []  # (checkpoint s, tuning s when copied, path)

    def __call__(self, policy, inputs, results):
        elapsed = time.monotonic() - self.start
        while self.pending and elapsed >= self.pending[0]:
            at = self.pending.pop(0)
            path = f"{self.log[:-len('.json')]}.at{at:.0f}s.json"
            shutil.copyfile(self.log, path)
            self.copies.append((at, elapsed, path))


def task_table(result):
    """Per task: weight, trials, best kernel and its share of the estimated total, largest share first."""
    rows = []
    for task, weight, res in zip(result.tasks, result.weights, result.task_results):
        cost = res.best_cost
        rows.append((weight * cost if cost else 0.0, task.desc, weight, res.trials, cost, res.best_gflops))
    total = sum(r[0] for r in rows) or 1.0
    print(f"  tasks by their share of the estimate ({len(rows)}):")
    print(f"    {'task':44}{'weight':>7}{'trials':>7}{'best ms':>10}{'GFLOP/s':>9}{'w x ms':>9}{'share':>7}")
    for share, desc, weight, trials, cost, gflops in sorted(rows, reverse=True):
        print(f"    {desc[:43]:44}{weight:>7}{trials:>7}" + (f"{cost * 1e3:10.4f}" if cost else f"{'-':>10}")
              + (f"{gflops:9.1f}" if gflops else f"{'-':>9}") + f"{share * 1e3:9.4f}{share / total:7.1%}")


def time_split(result, wall_s):
    """Where the tuning wall time went, summed over the tasks."""
    spent = collections.Counter()
    for res in result.task_results:
        spent.update(res.seconds)
    parts = ", ".join(f"{what} {spent[what]:.0f} s ({spent[what] / wall_s:.0%})"
                      for what in ("measure", "search", "cost_model"))
    model = (spent["search"] + spent["cost_model"]) / wall_s
    print(f"  tuning wall time {wall_s:.0f} s: {parts}; search + cost model {model:.0%} of the wall time")


def tune_and_build(name, g, args, log_dir):
    log = os.path.join(log_dir, f"{name}.json")
    tasks, weights = agraph.extract_tasks(g, "llvm")
    trials = args.trials_per_task * len(tasks)
    print(f"\n== {name}: {len(g.nodes)} nodes, {len(tasks)} tasks ({sum(weights)} groups), "
          f"{sum(t.compute_dag.flop_ct * w for t, w in zip(tasks, weights)) / 1e9:.3g} GFLOP; "
          f"{trials} trials, log {log} ==", flush=True)
    weight_mb = constant_bytes(g) / 1e6
    cache_mib = last_level_cache_bytes("llvm") / 2**20
    cold = sum(t.cold_constants for t in tasks)
    network_caches = sum(t.network_caches for t in tasks)
    print(f"  weights {weight_mb:.1f} MB, last-level cache {cache_mib:.0f} MiB: "
          + (f"{cold} of {len(tasks)} tasks timed with their weights evicted before each run" if cold
             else "no task evicts its weights")
          + f"; {network_caches} of {len(tasks)} timed with the caches as the network leaves them", flush=True)
    curve = TuningCurve(tasks, weights)
    checkpoints = LogCheckpoints(log, args.checkpoints_s)
    opts = ans.TuningOptions(num_measure_trials=trials, num_measures_per_round=args.per_round,
                             measure_callbacks=[ans.RecordToFile(log), curve, checkpoints], verbose=args.verbose,
                             time_budget_s=args.time_budget_s, transfer_seeds=not args.no_transfer_seeds)
    start = time.monotonic()
    timing = agraph.NetworkTiming(g, "llvm", every_s=args.network_timing_s) if args.network_timing_s > 0 else None
    result = ans.TaskScheduler(tasks, weights, cost_model=args.cost_model,
                               outside_kernels_s=agraph.outside_kernels_seconds(g, "llvm"),
                               network_timing=timing).tune(opts)
    tune_s = time.monotonic() - start
    net = agraph.build(g, "llvm", log)
    time_split(result, tune_s)
    task_table(result)
    shown = curve.points[::max(1, len(curve.points) // 16)] + curve.points[-1:]
    print("  curve (tuning s, estimated ms of the tuned kernels):", ", ".join(f"{t:.0f} {ms:.3f}" for t, ms in shown))
    print(f"  estimated total {result.latency_after * 1e3:.3f} ms (of which {result.outside_kernels_s * 1e3:.3f} ms "
          "outside the kernels)" if result.latency_after is not None else "  estimated total: unknown", flush=True)
    if result.network_timings:
        last = result.network_timings[-1]
        print(f"  network timing: {len(result.network_timings)} times in "
              f"{sum(t['seconds'] for t in result.network_timings):.0f} s; the last at {last['at_s']:.0f} s: built "
              f"{last['run_s'] * 1e3:.3f} ms, kernels {last['kernel_scale']:.2f}x their tuner times", flush=True)
    return net, result, tune_s, len(tasks), result.latency_after, checkpoints.copies


def bench_model(name, args, log_dir):
    g = zoo_model(name, args.tiny)
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(g.shape(i)).astype(g.dtype(i)) for i in g.inputs]
    net, result, tune_s, num_tasks, estimate, copies = tune_and_build(name, g, args, log_dir)
    ours = net(*inputs)
    row = {"model": name, "tasks": num_tasks, "trials": result.trials, "tune_s": tune_s}
    if estimate:
        built = _env.best_of(lambda: net(*inputs), args.min_seconds, min_runs=5)
        print(f"  built network {built * 1e3:.3f} ms; the estimate is {estimate / built:.2f} of it", flush=True)
    ort = _ort_profile.onnxruntime_profile(g.to_onnx().SerializeToString(), dict(zip(g.inputs, inputs)),
                                           args.threads)
    if ort is not None:
        print(_ort_profile.by_type_line(ort), flush=True)
    print("\n".join(_ort_profile.in_network_lines(net, inputs, result, ort)), flush=True)
    runs = {"autosched": lambda: net(*inputs)}
    for at, elapsed, path in copies:
        early = agraph.build(g, "llvm", path, verbose=False)
        runs[f"at {at:.0f} s"] = lambda early=early: early(*inputs)
    for peer, make in (("onnxruntime", onnxruntime_peer), ("pytorch", torch_peer)):
        made, why = make(g, inputs, args.threads)
        if made is None:
            print(f"  {peer}: skipped ({why})")
            continue
        run, outputs = made
        err = max(close(a, np.asarray(b)) for a, b in zip(ours, outputs))
        print(f"  output vs {peer}: max abs difference {err:.2e} of the output's largest magnitude"
              + ("" if err < 1e-3 else "  ** MISMATCH **"), flush=True)
        runs[peer] = run
    times = alternate(runs, args.rounds, min_seconds=args.min_seconds, gap_seconds=args.round_gap_s)
    for key, per_round in times.items():
        row[key] = min(per_round)
        row[f"{key} rounds"] = per_round
        print(f"  {key}: " + ", ".join(f"{t * 1e3:.3f}" for t in per_round) + " ms in the alternating rounds",
              flush=True)
    return row


def round_ratios(row, peer, key):
    """The range of peer / ours over the alternating rounds (each round times both)."""
    ratios = [p / a for p, a in zip(row[f"{peer} rounds"], row[f"{key} rounds"])]
    return f"{min(ratios):.2f}-{max(ratios):.2f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet18,mobilenet_v2,bert_layer",
                        help=f"comma-separated, of: {', '.join(zoo.MODELS)}")
    parser.add_argument("--trials-per-task", type=int, default=64)
    parser.add_argument("--per-round", type=int, default=16, help="measurements per scheduler round")
    parser.add_argument("--time-budget-s", type=float, default=None, help="tuning wall-clock limit per model")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="threads of the peers")
    parser.add_argument("--log-dir", default="", help="keep (and resume) the record logs here")
    parser.add_argument("--verbose", type=int, default=1)
    parser.add_argument("--cost-model", default="auto", choices=["auto", "scratch"],
                        help="auto: the pretrained model on llvm targets; scratch: learn from this run alone")
    parser.add_argument("--no-transfer-seeds", action="store_true",
                        help="no seeds from similar tasks in a task's first population")
    parser.add_argument("--network-timing-s", type=float, default=120,
                        help="build the network from the best schedules and time its kernels in it every this "
                             "many seconds of tuning, scaling the scheduler's estimate and rounds by what each "
                             "task takes there (graph.NetworkTiming); 0: never")
    parser.add_argument("--rounds", type=int, default=3,
                        help="alternating rounds in which the built networks and the peers are timed in turn")
    parser.add_argument("--round-gap-s", type=float, default=10.0,
                        help="seconds between two alternating rounds (0: none)")
    parser.add_argument("--checkpoints-s", default="600",
                        help="comma-separated tuning times (s) at which the network built from the log so far is "
                             "timed too; '' for none")
    parser.add_argument("--tiny", action="store_true",
                        help="tiny models and timings (a check that the script works; the figures mean nothing)")
    args = parser.parse_args()
    args.min_seconds = 0.01 if args.tiny else 1.0  # each timing: the best of runs over this long
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}")
    if not args.round_gap_s >= 0:  # NaN too
        parser.error(f"--round-gap-s must be 0 or more seconds, got {args.round_gap_s}")
    args.checkpoints_s = [float(x) for x in args.checkpoints_s.split(",") if x.strip()]
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    unknown = [n for n in names if n not in zoo.MODELS]
    if unknown:
        raise SystemExit(f"unknown model(s) {', '.join(unknown)}: choose from {', '.join(zoo.MODELS)}")
    print(f"command: {' '.join(shlex.quote(a) for a in [sys.executable] + sys.argv)}")
    print(f"CPU: {_env.cpu_text()}; load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        log_dir = args.log_dir or tmp
        os.makedirs(log_dir, exist_ok=True)
        rows = [bench_model(n, args, log_dir) for n in names]
    print(f"\nLatency (ms, the best of {args.rounds} alternating rounds, each the best of runs over >= 1 s) and "
          "peer / autosched (above 1: autosched is faster; 'per round': the range over the rounds)")
    print(f"{'model':16}{'tasks':>6}{'trials':>8}{'tuning':>9}{'autosched':>11}{'onnxruntime':>13}{'ratio':>7}"
          f"{'per round':>11}{'pytorch':>9}{'ratio':>7}{'per round':>11}")
    for r in rows:
        line = f"{r['model']:16}{r['tasks']:>6}{r['trials']:>8}{r['tune_s'] / 60:8.1f}m{r['autosched'] * 1e3:11.2f}"
        for peer, width in (("onnxruntime", 13), ("pytorch", 9)):
            if peer in r:
                line += (f"{r[peer] * 1e3:{width}.2f}{r[peer] / r['autosched']:7.2f}"
                         f"{round_ratios(r, peer, 'autosched'):>11}")
            else:
                line += f"{'-':>{width}}{'-':>7}{'-':>11}"
        print(line)
        for key in [k for k in r if k.startswith("at ") and not k.endswith(" rounds")]:
            ratios = "".join(f", {p} {r[p] / r[key]:.2f}x ({round_ratios(r, p, key)} per round)"
                             for p in ("onnxruntime", "pytorch") if p in r)
            print(f"{'':16}{'':>6}{'':>8}{key:>9}{r[key] * 1e3:11.2f}   (peer / autosched{ratios})")
    print(_env.load_note())


if __name__ == "__main__":
    main()
