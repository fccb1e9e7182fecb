"""The command line: tune an ONNX model, then run and time it with the tuned schedules, without writing Python.

    autosched tasks model.onnx [--target llvm] [--shape data=1,3,224,224]
    autosched tune  model.onnx --log model.json [--target llvm] [--trials 2000] [--time-budget-s 3600]
    autosched run   model.onnx --log model.json [--target llvm] [--repeat 10]

(`python -m autosched ...` is the same.) `tune` extracts the model's tasks, tunes them with the task scheduler
under one trial budget (its table after every round) and appends every measurement to --log; run it again with
the same log to resume. `run` builds the model with the best record of each task in the log (tasks without
one get the baseline schedule and are listed), runs it on random inputs, checks the outputs against the
graph's reference evaluation and prints the end-to-end latency. Errors in the input (a missing file, an
operator that cannot be imported, a dynamic dimension left unbound) end with a message and exit status 2.
"""
import argparse
import importlib.util
import os
import re
import sys
import time
import warnings

import numpy as np

from . import plot
from .frontends import from_onnx
from .frontends.onnx import _import_onnx, _load
from .graph import build as build_graph
from .graph import extract_tasks
from .graph.extract import format_problems
from .task_scheduler import TaskScheduler
from .tuner import TuningOptions
from .records import RecordToFile


class CommandError(Exception):
    """A problem with the command's input, reported as one message."""


def _shape_dict(items):
    """["data=1,3,224,224", "batch=1"] -> {"data": (1, 3, 224, 224), "batch": (1,)}."""
    out = {}
    for item in items or ():
        name, sep, dims = item.partition("=")
        try:
            values = tuple(int(d) for d in dims.split(",") if d.strip())
        except ValueError:
            values = ()
        if not sep or not name or not values or any(v < 1 for v in values):
            raise CommandError(f"--shape {item!r}: expected NAME=D1,D2,... (an input) or NAME=N (a dimension) "
                               "with positive integers")
        out[name] = values
    return out


def _load_graph(path, shapes):
    if not os.path.exists(path):
        raise CommandError(f"model file '{path}' does not exist")
    if not path.endswith(".onnx"):
        raise CommandError(f"'{path}': only ONNX models (.onnx) are read from the command line; import other "
                           "models from Python (autosched.frontends.from_torch)")
    onnx = _import_onnx()
    model = _load(onnx, path)
    # Inputs take their shape as a tuple, dynamic dims their value as an int; both are bound at import, so
    # shape arithmetic on them folds (docs/frontends.md).
    constants = {t.name for t in model.graph.initializer}
    inputs = [vi.name for vi in model.graph.input if vi.name not in constants]
    shape_dict = {k: (v if k in inputs else v[0]) for k, v in shapes.items()}
    bad = [k for k, v in shapes.items() if k not in inputs and len(v) > 1]
    if bad:
        raise CommandError(f"--shape {bad[0]}=...: '{bad[0]}' is not an input of the model (inputs: "
                           f"{', '.join(inputs)}); a dimension name takes one value")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the problems are reported below, once
        try:
            graph = from_onnx(model, shape_dict=shape_dict)
        except ValueError as e:  # in the command line's words: --shape data=1,8, not shape_dict['data'] = (1, 8)
            raise CommandError(_in_shape_words(str(e))) from None
    problems = graph.problems()
    if problems:
        raise CommandError(f"'{path}': {len(problems)} node(s) cannot be compiled:\n"
                           f"{format_problems(problems, interface='cli')}")
    return graph


def _in_shape_words(message):
    """from_onnx's message about its shape_dict, with each "shape_dict['K'] = V" written as "--shape K=V"."""
    message = message[len("from_onnx: "):] if message.startswith("from_onnx: ") else message

    def option(m):
        return f"--shape {m[1]}={','.join(re.findall(r'-?[0-9]+', m[2]))}"
    message = re.sub(r"shape_dict\['([^']*)'\] = (\([^)]*\)|-?[0-9]+)", option, message)
    return message.replace("shape_dict key ", "--shape ")


def _print_tasks(tasks, weights):
    print(f"{len(tasks)} tasks")
    for i, (task, weight) in enumerate(zip(tasks, weights)):
        print(f"  {i:3}  weight {weight:3}  {task.compute_dag.flop_ct / 1e6:10.2f} MFLOP  {task.desc}")


def cmd_tasks(args):
    graph = _load_graph(args.model, _shape_dict(args.shape))
    tasks, weights = extract_tasks(graph, args.target)
    _print_tasks(tasks, weights)
    return 0


def cmd_tune(args):
    if args.plot and importlib.util.find_spec("matplotlib") is None:
        raise CommandError("--plot needs matplotlib (pip install matplotlib)")
    graph = _load_graph(args.model, _shape_dict(args.shape))
    tasks, weights = extract_tasks(graph, args.target)
    _print_tasks(tasks, weights)
    trials = args.trials if args.trials is not None else args.trials_per_task * len(tasks)
    options = TuningOptions(num_measure_trials=trials, num_measures_per_round=args.per_round,
                            time_budget_s=args.time_budget_s, measure_callbacks=[RecordToFile(args.log)],
                            verbose=args.verbose)
    resume = args.log if os.path.exists(args.log) and os.path.getsize(args.log) > 0 else None
    scheduler = TaskScheduler(tasks, weights, load_log_file=resume, cost_model=args.model_kind)
    start = time.perf_counter()
    result = scheduler.tune(options)
    print(f"tuned {len(tasks)} tasks in {time.perf_counter() - start:.0f} s; records in {args.log}")
    failed = [tasks[i].desc for i in result.failed_tasks]
    if failed:
        print(f"{len(failed)} task(s) without a valid schedule (they run with the baseline schedule): "
              f"{'; '.join(failed)}")
    if args.plot:
        plot.tuning_curve(args.log, args.plot)
        print(f"tuning curve in {args.plot}")
    return 0


def _random_inputs(graph, seed=0):
    rng = np.random.default_rng(seed)
    arrays = []
    for name in graph.inputs:
        dtype = np.dtype(graph.dtype(name))
        shape = tuple(graph.shape(name))
        if dtype.kind == "f":
            arrays.append(rng.standard_normal(shape).astype(dtype))
        else:
            arrays.append(rng.integers(0, 2, size=shape).astype(dtype))
    return arrays


def cmd_run(args):
    graph = _load_graph(args.model, _shape_dict(args.shape))
    if not os.path.exists(args.log):
        raise CommandError(f"log '{args.log}' does not exist (tune first: autosched tune {args.model} "
                           f"--log {args.log})")
    net = build_graph(graph, args.target, args.log)
    arrays = _random_inputs(graph)
    outputs = net(*arrays)
    expected = graph.evaluate(*arrays)
    for name, got, want in zip(graph.outputs, outputs, expected):
        if not np.allclose(got, want, rtol=1e-3, atol=1e-3, equal_nan=True):
            worst = float(np.max(np.abs(np.asarray(got, "float64") - np.asarray(want, "float64"))))
            raise CommandError(f"output '{name}' differs from the reference evaluation (max abs error {worst:.3g})")
    times = net.time_evaluator(number=args.number, repeat=args.repeat)(*arrays).results
    print(f"outputs match the reference evaluation ({', '.join(graph.outputs)})")
    print(f"latency: {min(times) * 1e3:.3f} ms best, {float(np.median(times)) * 1e3:.3f} ms median "
          f"of {len(times)} repeats x {args.number} runs ({args.target})")
    return 0


def _parser():
    parser = argparse.ArgumentParser(prog="autosched", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p):
        p.add_argument("model", help="an ONNX model file (.onnx)")
        p.add_argument("--target", default="llvm", help="target text (default: llvm, the host CPU)")
        p.add_argument("--shape", action="append", metavar="NAME=D1,D2,...",
                       help="an input's shape or a dynamic dimension's value (repeatable)")

    p = sub.add_parser("tasks", help="list the tuning tasks of a model")
    common(p)
    p.set_defaults(run=cmd_tasks)

    p = sub.add_parser("tune", help="tune a model's tasks, appending records to a log")
    common(p)
    p.add_argument("--log", required=True, help="record log (appended to; an existing one is resumed)")
    budget = p.add_mutually_exclusive_group()
    budget.add_argument("--trials", type=int, help="measurements in all (default: 64 per task)")
    budget.add_argument("--trials-per-task", type=int, default=64)
    p.add_argument("--time-budget-s", type=float, default=None, help="stop after this many seconds")
    p.add_argument("--per-round", type=int, default=16, help="measurements per task scheduler round")
    p.add_argument("--cost-model", dest="model_kind", default="auto", choices=["auto", "xgb", "random"])
    p.add_argument("--verbose", type=int, default=1)
    p.add_argument("--plot", metavar="FILE.png", default=None,
                   help="write the tuning curve of the log (best speed per task) to this image (needs matplotlib)")
    p.set_defaults(run=cmd_tune)

    p = sub.add_parser("run", help="build a model with a log's best schedules, check and time it")
    common(p)
    p.add_argument("--log", required=True, help="record log written by tune")
    p.add_argument("--number", type=int, default=10, help="runs per timed repeat")
    p.add_argument("--repeat", type=int, default=5, help="timed repeats")
    p.set_defaults(run=cmd_run)
    return parser


def main(argv=None):
    args = _parser().parse_args(argv)
    try:
        return args.run(args)
    except (CommandError, ValueError) as e:
        print(f"autosched {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
