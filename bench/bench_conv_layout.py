"""Benchmark: ResNet-18 convolutions (+ folded batch norm and relu) in NCHW and in the channel-blocked NCHW[x]c of
the layout pass (extract_tasks(layout=...)), as graph.build runs them: kernel time of the baseline schedule
(what an untuned build runs), of the expert schedule, and of the best of a brief tuning.

Run: python3 bench/bench_conv_layout.py [--trials 32] [--layers layer1.0.conv1,layer3.0.conv2] [--tiny]
     [--no-expert]

The layers are named as in the zoo (layer1.0.conv1: 64 channels at 56x56, 3x3). The blocked kernels exclude the
layout transforms, which the pass puts only at the network's boundaries. Not a test: figures vary with the
machine and its load (printed). --tiny takes ResNet-18 on 32x32 images: a check that the script works.
--no-expert tunes without the expert schedule (SearchParams.use_expert_schedule=False: neither measured nor
seeded) and leaves its column empty; the header line says which.
"""
import argparse
import os

import _env  # bench/, the script's folder, is on sys.path

_env.set_openblas_coretype()

import numpy as np  # noqa: E402

import autosched as ans  # noqa: E402
from autosched.core.build import build  # noqa: E402
from autosched.graph import zoo  # noqa: E402
from autosched.graph.extract import lower_graph  # noqa: E402
from autosched.search import SketchPolicy, baseline_states, expert_schedule, make_cost_model  # noqa: E402
from autosched.tune.share import round_search_params  # noqa: E402


def kernel_seconds(task, state):
    module = build(task, state)
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(tuple(t.shape)).astype(t.dtype) for t in task.compute_dag.tensors]
    return min(module.time_evaluator(number=5, repeat=5, min_repeat_ms=50)(*args).results)


def tuned_seconds(task, trials, use_expert):
    params = round_search_params(16)
    params.use_expert_schedule = use_expert
    policy = SketchPolicy(task, make_cost_model("auto"), params, seed=0)
    opts = ans.TuningOptions(num_measure_trials=trials, num_measures_per_round=16, verbose=0)
    return ans.tune.tune(task, opts, search_policy=policy).best_cost


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=32, help="tuning trials per kernel (0: untuned only)")
    parser.add_argument("--layers", default="layer1.0.conv1,layer3.0.conv2")
    parser.add_argument("--tiny", action="store_true", help="32x32 images (a check that the script works)")
    parser.add_argument("--no-expert", action="store_true",
                        help="tune without the expert schedule (SearchParams.use_expert_schedule=False)")
    args = parser.parse_args()
    target = ans.Target("llvm")
    print(f"CPU: {target.describe()}; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; expert schedule "
          + ("off (use_expert_schedule=False: not measured, not seeded)" if args.no_expert else "on"))
    graph = zoo.get_model("resnet18", image_size=32 if args.tiny else 224)
    print(f"{'layer':>16}{'layout':>8}{'task':>36}{'baseline ms':>13}{'expert ms':>11}{'tuned ms':>10}"
          f"{'GFLOP/s':>9}")
    for layout in ("NCHW", "NCHWc"):
        lowered = lower_graph(graph, target, layout=layout)
        for layer in args.layers.split(","):
            bn = layer.replace("conv", "bn")  # the folded conv takes its batch norm's name
            group = next(i for i, g in enumerate(lowered.groups) if any(n.name == bn for n in g.nodes))
            task = lowered.group_tasks[group]
            base = kernel_seconds(task, baseline_states(task)[-1])
            expert = None if args.no_expert else expert_schedule(task)
            exp_s = kernel_seconds(task, expert) if expert is not None else float("nan")
            best = tuned_seconds(task, args.trials, not args.no_expert) if args.trials else float("nan")
            flop = task.compute_dag.flop_ct
            fastest = min(t for t in (base, exp_s, best) if t == t)
            print(f"{layer:>16}{layout:>8}{task.desc:>36}{base * 1e3:13.3f}{exp_s * 1e3:11.3f}{best * 1e3:10.3f}"
                  f"{flop / fastest / 1e9:9.1f}", flush=True)


if __name__ == "__main__":
    main()
