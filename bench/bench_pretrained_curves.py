"""Benchmark: tuning suite models with the pretrained cost model against one learning from scratch.

Run: python3 bench/bench_pretrained_curves.py [--models resnet18,mobilenet_v2,bert_base] [--seconds 150]
                                              [--pretrained MODEL=PATH ...] [--every 15] [--target llvm]

Each model of the suite (bench/_models.py, at its published size, exported to ONNX and imported by from_onnx)
is tuned with TaskScheduler for --seconds with cost_model="scratch", then with the pretrained model (the one
shipped in the package, or per model the file --pretrained MODEL=PATH names: a model trained with the
model's family held out, scripts/train_pretrained_model.py --save-holdout-models), and prints the estimated
network latency (the sum over tasks of weight x best measured cost) against the tuning time, every --every
seconds from the moment every task has a measured schedule. Not a test: the figures vary with the machine
and its load.
"""
import argparse
import os
import sys
import tempfile
import time
import warnings

import _env  # bench/, the script's folder, is on sys.path

_env.set_openblas_coretype()  # before numpy loads OpenBLAS

import _models  # noqa: E402
import autosched as ans  # noqa: E402
from autosched import frontends  # noqa: E402
from autosched.graph import extract_tasks  # noqa: E402
from autosched.search.cost_model import XGBModel  # noqa: E402


class Estimate:
    """A measure callback: the estimated latency (sum of weight x best cost) after each round, with its time."""

    def __init__(self, tasks, weights):
        self.weight = {t.workload_key: w for t, w in zip(tasks, weights)}
        self.best = {}
        self.start = time.monotonic()
        self.points = []  # (seconds, estimate in s or None while a task has no measured schedule)

    def __call__(self, policy, inputs, results):
        for inp, res in zip(inputs, results):
            if int(res.error_no) == 0 and res.costs:
                cost = sum(res.costs) / len(res.costs)
                key = inp.task.workload_key
                self.best[key] = min(self.best.get(key, float("inf")), cost)
        done = len(self.best) == len(self.weight)
        total = sum(w * self.best[k] for k, w in self.weight.items()) if done else None
        self.points.append((time.monotonic() - self.start, total))

    def at(self, seconds):
        """The estimate at `seconds` into the tuning (None before every task was measured)."""
        value = None
        for t, total in self.points:
            if t > seconds:
                break
            value = total
        return value


def network_tasks(name, target, tiny=False):
    module, example = _models.SUITE[name].make(tiny=tiny)
    data = _models.onnx_bytes(module, (example,), ["input"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return extract_tasks(frontends.from_onnx(data), target)


def tune(tasks, weights, cost_model, seconds, log):
    estimate = Estimate(tasks, weights)
    opts = ans.TuningOptions(num_measure_trials=100000, num_measures_per_round=16, time_budget_s=seconds,
                             measure_callbacks=[ans.RecordToFile(log), estimate], verbose=0)
    ans.TaskScheduler(tasks, weights, cost_model=cost_model).tune(opts)
    return estimate


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="resnet18,mobilenet_v2,bert_base", help="suite models, comma-separated")
    p.add_argument("--seconds", type=float, default=150, help="tuning budget of each run")
    p.add_argument("--every", type=float, default=15, help="seconds between the printed points")
    p.add_argument("--pretrained", action="append", default=[],
                   help="MODEL=PATH: the pretrained model file to start from for that suite model")
    p.add_argument("--target", default="llvm")
    p.add_argument("--tiny", action="store_true", help="tiny models (a check that the script works)")
    args = p.parse_args()
    files = {}
    for item in args.pretrained:
        name, sep, path = item.partition("=")
        if not sep or not os.path.isfile(path):
            p.error(f"--pretrained {item!r}: expected MODEL=PATH of an existing model file")
        files[name] = path
    names = _models.select(args.models)
    for name in names:
        tasks, weights = network_tasks(name, args.target, args.tiny)
        family = _models.SUITE[name].family
        source = files.get(name, "the shipped model")
        print(f"{name} ({family}): {len(tasks)} tasks, {args.seconds:.0f} s each run; pretrained: {source}",
              flush=True)
        curves = {}
        with tempfile.TemporaryDirectory() as tmp:
            for label in ("scratch", "pretrained"):
                model = "scratch" if label == "scratch" else XGBModel(pretrained=files.get(name, True))
                curves[label] = tune(tasks, weights, model, args.seconds, os.path.join(tmp, f"{label}.json"))
        print(f"  {'seconds':>8}  {'scratch ms':>11}  {'pretrained ms':>14}")
        t = args.every
        while t <= args.seconds + args.every / 2:
            row = [curves[label].at(t) for label in ("scratch", "pretrained")]
            print(f"  {t:8.0f}  " + "  ".join(f"{v * 1e3:{w}.3f}" if v else f"{'-':>{w}}"
                                               for v, w in zip(row, (11, 14))), flush=True)
            t += args.every
    return 0


if __name__ == "__main__":
    sys.exit(main())
