"""Benchmark: the evolutionary search's population per round against what a fixed wall-clock budget buys.

Run: python3 bench/bench_search_population.py [--budget-s 90] [--per-round 16] [--tasks 2,7]
                                              [--configs 2048x4,512x4,256x4] [--tiny]

Tunes ResNet-18 tasks (zoo, batch 1) with task.tune-like rounds of --per-round measurements, a fresh XGBModel
and SearchParams(evolutionary_search_population=P, evolutionary_search_num_iters=I) for each config PxI, for
--budget-s seconds of wall clock each; prints the trials measured, trials per minute, the time spent in
search and cost model, and the best latency found. Not a test: figures vary with the machine's load. --tiny
takes ResNet-18 on 32x32 images: a check that the script works.
"""
import argparse
import time

import _env  # bench/, the script's folder, is on sys.path

_env.set_openblas_coretype()

import autosched as ans  # noqa: E402
from autosched.graph import zoo  # noqa: E402
from autosched.search import SearchParams, SketchPolicy, make_cost_model  # noqa: E402


def run(task, per_round, budget_s, population, iters):
    params = SearchParams(num_measures_per_round=per_round, evolutionary_search_population=population,
                          evolutionary_search_num_iters=iters)
    policy = SketchPolicy(task, make_cost_model("auto"), params, seed=0)
    opts = ans.TuningOptions(num_measure_trials=100000, num_measures_per_round=per_round, time_budget_s=budget_s,
                             verbose=0)
    start = time.monotonic()
    result = ans.tune.tune(task, opts, search_policy=policy)
    return result, time.monotonic() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget-s", type=float, default=90)
    parser.add_argument("--per-round", type=int, default=16)
    parser.add_argument("--tasks", default="2,7", help="indices among ResNet-18's extracted tasks")
    parser.add_argument("--configs", default="2048x4,512x4,256x4", help="population x iterations, comma-separated")
    parser.add_argument("--tiny", action="store_true", help="32x32 images (a check that the script works)")
    args = parser.parse_args()
    tasks, _ = ans.extract_tasks(zoo.get_model("resnet18", image_size=32 if args.tiny else 224), "llvm")
    configs = [tuple(int(v) for v in c.split("x")) for c in args.configs.split(",")]
    print(f"{'task':34}{'config':>10}{'trials':>8}{'per min':>9}{'search+model':>14}{'best (ms)':>11}")
    for i in (int(t) for t in args.tasks.split(",")):
        for population, iters in configs:
            r, wall = run(tasks[i], args.per_round, args.budget_s, population, iters)
            spent = r.seconds["search"] + r.seconds["cost_model"]
            print(f"{tasks[i].desc:34}{f'{population}x{iters}':>10}{r.trials:>8}{r.trials / wall * 60:9.1f}"
                  f"{spent:13.1f}s{r.best_cost * 1e3:11.3f}", flush=True)


if __name__ == "__main__":
    main()
