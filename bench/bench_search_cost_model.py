"""Benchmark: the search guided by XGBModel against RandomModel, with equal trial budgets; and transfer.

Run: python3 bench/bench_search_cost_model.py [--trials 1000] [--seeds 2] [--tasks matmul512,conv2d]
                                               [--per-round 64] [--transfer] [--log-dir DIR]
Tunes every task with each model and seed (a fresh model per run) and prints, per task and model, the best
GFLOP/s found after 50, 100, 200, 400, ... trials and at the end, the best at 200 trials, the trial at which
the run first reached 90% of its own final best, and the cost model's share of the tuning time (the tuner's
time report). --transfer then tunes the second task of --tasks again, its XGBModel starting from the log of
the first task's XGBModel run (TuningOptions(transfer_logs=...)), and reports the trial at which the runs
from scratch and with transfer first reach RandomModel's final best of that task.

Tasks: matmulN (NxNxN float32, e.g. matmul512), conv2d (NHWC 1x28x28x128 -> 128 filters 3x3, stride 1,
padding 1, float32). Not a test: figures vary with the machine and its load. `--trials 64 --seeds 1` checks
the script in a few minutes; note that XGBModel scores at random until it has 100 measurements
(num_warmup_samples), so below that both models search alike.
"""
import argparse
import os
import re
import shlex
import sys
import tempfile
import time

import _env  # bench/, the script's folder, is on sys.path

_env.set_openblas_coretype()  # before numpy loads OpenBLAS

import autosched as ans  # noqa: E402
from autosched import ops, search, te  # noqa: E402

MODELS = ("xgb", "random")


def make_task(name, target):
    m = re.fullmatch(r"matmul(\d+)", name)
    if m:
        n = int(m.group(1))
        A = te.placeholder((n, n), name="A")
        B = te.placeholder((n, n), name="B")
        k = te.reduce_axis((0, n), name="k")
        C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
        return ans.SearchTask(compute_dag=ans.ComputeDAG([A, B, C]), target=target, desc=name)
    if name == "conv2d":
        data = te.placeholder((1, 28, 28, 128), name="data")
        kernel = te.placeholder((3, 3, 128, 128), name="kernel")
        out = ops.conv2d_nhwc(data, kernel, stride=1, padding=1)
        return ans.SearchTask(compute_dag=ans.ComputeDAG([data, kernel, out]), target=target, desc=name)
    raise SystemExit(f"unknown task '{name}': use matmulN (e.g. matmul512) or conv2d")


class Curve:
    """A measure callback keeping the best cost after every trial, in the order measured."""

    def __init__(self):
        self.best = []  # seconds (inf while nothing succeeded)

    def __call__(self, policy, inputs, results):
        for res in results:
            last = self.best[-1] if self.best else float("inf")
            cost = res.mean_cost if res.ok else float("inf")
            self.best.append(min(last, cost))


class Run:
    def __init__(self, task, model, seed, curve, result, log):
        self.task, self.model, self.seed, self.log = task, model, seed, log
        flop = task.compute_dag.flop_ct
        self.gflops = [flop / c / 1e9 if c != float("inf") else 0.0 for c in curve.best]
        self.result = result

    def at(self, trials):
        """Best GFLOP/s after `trials` trials (the end when the run was shorter)."""
        if not self.gflops:
            return 0.0
        return self.gflops[min(trials, len(self.gflops)) - 1]

    @property
    def final(self):
        return self.at(len(self.gflops))

    def first_reaching(self, gflops):
        """The first trial (1-based) whose best reaches `gflops`; None when the run never does."""
        for i, g in enumerate(self.gflops):
            if g >= gflops:
                return i + 1
        return None

    @property
    def cost_model_share(self):
        s = self.result.seconds
        return s["cost_model"] / s["total"] if s.get("total") else 0.0


def tune(task, model, seed, args, log_dir, transfer_logs=()):
    tag = "transfer" if transfer_logs else model
    log = os.path.join(log_dir, f"{task.desc}_{tag}_seed{seed}.json")
    if os.path.exists(log):
        os.remove(log)
    curve = Curve()
    opts = ans.TuningOptions(num_measure_trials=args.trials, num_measures_per_round=args.per_round,
                             measure_callbacks=[ans.RecordToFile(log), curve], verbose=args.verbose,
                             transfer_logs=list(transfer_logs))
    cost_model = ans.XGBModel(num_warmup_samples=args.warmup) if model == "xgb" else search.make_cost_model(model)
    policy = search.SketchPolicy(task, cost_model, seed=seed)
    start = time.monotonic()
    result = task.tune(opts, search_policy=policy)
    run = Run(task, model, seed, curve, result, log)
    print(f"  {task.desc:10} {tag:8} seed {seed}: {result.trials} trials in {time.monotonic() - start:.0f} s, "
          f"best {run.final:.1f} GFLOP/s, cost model {100 * run.cost_model_share:.0f}% of the time", flush=True)
    return run


def checkpoints(trials):
    points, t = [], 50
    while t < trials:
        points.append(t)
        t *= 2
    return points + [trials]


def print_table(task, runs_by_model, trials):
    points = checkpoints(trials)
    flop = task.compute_dag.flop_ct
    print(f"\n== {task.desc}: {flop / 1e9:.3g} GFLOP per run, best GFLOP/s after N trials ==")
    header = f"{'model':8}{'seed':>6}" + "".join(f"{'@' + str(p):>9}" for p in points)
    header += f"{'best@200':>10}{'final':>9}{'90%@':>7}{'model %':>9}"
    print(header)
    for model, runs in runs_by_model.items():
        rows = [(str(r.seed), [r.at(p) for p in points], r.at(200), r.final,
                 r.first_reaching(0.9 * r.final), r.cost_model_share) for r in runs]
        if len(runs) > 1:
            n = len(runs)
            reach = [r[4] for r in rows if r[4] is not None]
            rows.append(("mean", [sum(r[1][i] for r in rows) / n for i in range(len(points))],
                         sum(r[2] for r in rows) / n, sum(r[3] for r in rows) / n,
                         sum(reach) / len(reach) if reach else None, sum(r[5] for r in rows) / n))
        for seed, curve, at200, final, reach90, share in rows:
            reach = "-" if reach90 is None else f"{reach90:.0f}"
            print(f"{model:8}{seed:>6}" + "".join(f"{g:9.1f}" for g in curve)
                  + f"{at200:10.1f}{final:9.1f}{reach:>7}{100 * share:8.1f}%")


def seed_range(args):
    return range(args.first_seed, args.first_seed + args.seeds)


def transfer_experiment(tasks, runs, args, log_dir):
    a, b = tasks[0], tasks[1]
    source = runs[a.desc]["xgb"][0]
    random_runs = runs[b.desc]["random"]
    target = sum(r.final for r in random_runs) / len(random_runs)
    print(f"\n== transfer: {b.desc} from scratch vs starting from the log of {a.desc} "
          f"({os.path.basename(source.log)}, {source.result.trials} records) ==")
    seeds = ", ".join(str(r.seed) for r in random_runs)
    print(f"RandomModel's final best of {b.desc} (mean over seeds {seeds}): {target:.1f} GFLOP/s")
    scratch = runs[b.desc]["xgb"]
    transferred = [tune(b, "xgb", seed, args, log_dir, transfer_logs=[source.log]) for seed in seed_range(args)]
    print(f"{'run':16}{'seed':>6}{'reaches it at':>15}{'best@200':>10}{'final':>9}")
    for name, group in (("xgb from scratch", scratch), ("xgb + transfer", transferred)):
        for r in group:
            at = r.first_reaching(target)
            print(f"{name:16}{r.seed:>6}{'never' if at is None else f'trial {at}':>15}{r.at(200):10.1f}"
                  f"{r.final:9.1f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000, help="measurements per run")
    parser.add_argument("--seeds", type=int, default=2, help="runs per task and model (search seeds first-seed..first-seed+N-1)")
    parser.add_argument("--first-seed", type=int, default=0, help="the first search seed (seeds N..N+seeds-1)")
    parser.add_argument("--tasks", default="matmul512,conv2d", help="comma-separated: matmulN, conv2d")
    parser.add_argument("--per-round", type=int, default=64, help="measurements per search round")
    parser.add_argument("--transfer", action="store_true",
                        help="also tune the second task starting from the first task's XGBModel log")
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated: xgb, random")
    parser.add_argument("--warmup", type=int, default=ans.XGBModel().params.num_warmup_samples,
                        help="XGBModel's num_warmup_samples (random scores until this many measurements)")
    parser.add_argument("--target", default="llvm")
    parser.add_argument("--log-dir", default="", help="keep the record logs here (default: a temporary folder)")
    parser.add_argument("--verbose", type=int, default=0, help="the tuner's verbosity (0: one line per run)")
    args = parser.parse_args()
    if not ans._core.has_xgboost():
        raise SystemExit("autosched was built without XGBoost: XGBModel is not available")
    names = [n.strip() for n in args.tasks.split(",") if n.strip()]
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    if not models or any(m not in MODELS for m in models):
        raise SystemExit(f"--models takes a comma-separated list of {', '.join(MODELS)}, got '{args.models}'")
    if args.transfer and models != list(MODELS):
        raise SystemExit("--transfer needs both models (it compares with RandomModel's final best)")
    if args.transfer and len(names) < 2:
        raise SystemExit("--transfer needs two tasks in --tasks (the first is the source)")

    print(f"command: {' '.join(shlex.quote(a) for a in [sys.executable] + sys.argv)}")
    print(f"CPU: {_env.cpu_text()}; target {args.target}; XGBModel num_warmup_samples {args.warmup}; "
          f"load average {os.getloadavg()[0]:.1f}")
    tasks = [make_task(n, args.target) for n in names]
    with tempfile.TemporaryDirectory() as tmp:
        log_dir = args.log_dir or tmp
        os.makedirs(log_dir, exist_ok=True)
        runs = {}
        for task in tasks:
            runs[task.desc] = {m: [tune(task, m, seed, args, log_dir) for seed in seed_range(args)]
                               for m in models}
            print_table(task, runs[task.desc], args.trials)
        if args.transfer:
            transfer_experiment(tasks, runs, args, log_dir)


if __name__ == "__main__":
    main()
