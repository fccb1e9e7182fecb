"""Benchmark of the cost model: ranking accuracy on measured schedules, and the time to score a population.

Run: python3 bench/bench_cost_model.py [--states 1100] [--data /tmp/cost_model_data.jsonl] [--population 1024]
Measures --states random schedules of a matmul and of a conv2d (tests/python/cost_model_data.py, the
generator the CI test uses; measured data is kept in --data and reused by later runs), trains XGBModel on a
random 80% of each task and prints the pairwise ranking accuracy on the other 20% (pairs within a task)
next to RandomModel's; then times features + prediction of --population states of each task (2,048 in all). Not a test: figures vary with the
machine and its load.
"""
import argparse
import json
import os
import pathlib
import platform
import sys
import time
import types

import _env  # bench/, the script's folder, is on sys.path

_env.set_openblas_coretype()  # before numpy loads OpenBLAS

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "python"))

import autosched as ans  # noqa: E402
from autosched.search.cost_model import RandomModel, XGBModel, extract_features  # noqa: E402

import cost_model_data as data  # noqa: E402


def cpu_description():
    name, flags = platform.processor() or "?", set()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
            elif line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    except OSError:
        pass
    simd = [f for f in ("avx512f", "avx2", "fma", "neon") if f in flags]
    return f"{name}, {os.cpu_count()} hardware threads, {'/'.join(simd) or 'no AVX'}"


def load_or_measure(tasks, count, path):
    """Measured (inputs, results) of `count` states per task, from `path` when it holds them."""
    stored = {}
    if path and os.path.exists(path):
        for line in open(path):
            rec = json.loads(line)
            stored.setdefault(rec["task"], []).append(rec)
    inputs, results = [], []
    for task in tasks:
        records = stored.get(task.desc, [])
        if len(records) < count:
            start = time.perf_counter()
            states = data.random_states(task, count, seed=len(records))
            known = {r["state"] for r in records}
            states = [s for s in states if s.to_json() not in known][:count - len(records)]
            new_inputs, new_results = data.measure(task, states)
            print(f"measured {len(states)} states of {task.desc} in {time.perf_counter() - start:.0f} s")
            records += [{"task": task.desc, "state": i.state.to_json(), "costs": r.costs, "error_no": r.error_no}
                        for i, r in zip(new_inputs, new_results)]
            if path:
                with open(path, "a") as f:
                    for rec in records[-len(states):]:
                        f.write(json.dumps(rec) + "\n")
        for rec in records[:count]:
            state = ans.State.from_json(task.compute_dag, rec["state"])
            inputs.append(types.SimpleNamespace(task=task, state=state))
            results.append(types.SimpleNamespace(costs=rec["costs"], error_no=rec["error_no"]))
    return inputs, results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--states", type=int, default=1100, help="measured states per task")
    parser.add_argument("--data", default="/tmp/autosched_cost_model_data.jsonl",
                        help="JSON lines of measured states, reused and extended ('' to keep nothing)")
    parser.add_argument("--seeds", type=int, default=3, help="train / test splits to average over")
    parser.add_argument("--population", type=int, default=1024, help="states of each task scored at once")
    args = parser.parse_args()
    print(f"CPU: {cpu_description()}")

    tasks = [data.matmul_task(128), data.conv2d_task(16, 28, 32)]
    inputs, results = load_or_measure(tasks, args.states, args.data)
    ok = sum(r.error_no == 0 for r in results)
    print(f"{len(inputs)} measured states ({ok} ok) of {', '.join(t.desc for t in tasks)}")

    print(f"{'split':>6}{'XGBModel':>10}{'Random':>10}{'train s':>9}{'rounds':>8}")
    xgb_acc, rnd_acc = [], []
    for seed in range(args.seeds):
        (train_in, train_res), (test_in, test_res) = data.split_train_test(inputs, results, 0.2, seed)
        model = XGBModel(num_warmup_samples=0)
        start = time.perf_counter()
        model.update(train_in, train_res)
        train_seconds = time.perf_counter() - start
        xgb_acc.append(data.pairwise_accuracy_of(model, test_in, test_res))
        rnd_acc.append(data.pairwise_accuracy_of(RandomModel(seed), test_in, test_res))
        print(f"{seed:>6}{xgb_acc[-1]:>10.3f}{rnd_acc[-1]:>10.3f}{train_seconds:>9.2f}"
              f"{model.last_training.rounds:>8}")
    print(f"pairwise accuracy on held-out 20% (pairs within a task), mean of {args.seeds} splits: "
          f"XGBModel {sum(xgb_acc) / len(xgb_acc):.3f}, RandomModel {sum(rnd_acc) / len(rnd_acc):.3f}")

    # Scoring a population: what the search does every round.
    halves = [(task, data.random_states(task, args.population, seed=99)) for task in tasks]
    population = [s for _, states in halves for s in states]
    best, best_cpu = float("inf"), float("inf")
    for _ in range(3):
        start, start_cpu = time.perf_counter(), time.process_time()
        for task, states in halves:
            model.predict(task, states)
        best = min(best, time.perf_counter() - start)
        best_cpu = min(best_cpu, time.process_time() - start_cpu)
    features_only = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for task, states in halves:
            extract_features(task, states)
        features_only = min(features_only, time.perf_counter() - start)
    print(f"features + prediction of {len(population)} states: {best:.3f} s wall, {best_cpu:.3f} s CPU on all "
          f"threads (features alone {features_only:.3f} s wall); load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
