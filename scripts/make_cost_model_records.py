"""Tunes a corpus of tasks into record logs: the training data of the cost model shipped in the package.

    python3 scripts/make_cost_model_records.py --out DIR [--trials-per-task 64] [--jobs 1] [--time-budget-s S]
        [--target llvm] [--networks resnet18,mobilenet_v2,bert_layer] [--no-ops] [--holdout] [--list]

The tasks: those of the zoo networks (extract_tasks with layout="auto", so the channel-blocked convolutions of
the target's vector width) and a spread of operator-library tasks (matmul, dense, batch_matmul, conv2d in NHWC,
NCHW and NCHWc, depthwise, pooling, softmax, layer_norm; varied shapes, awkward ones among them). --holdout
tunes instead the held-out tasks, which are never part of the corpus (their log tests the shipped model).

--jobs J starts J processes, each pinned (os.sched_setaffinity) to its own pair of the cores this process may
use and tuning its share of the tasks (every J-th one, in a shuffled order that spreads networks and operators
over the jobs) with 2 threads (--threads-per-job; the target gets -num-cores=2 unless it names a count); one
process alone is not pinned. Each process appends its records to its own log, DIR/records_<cpu>_job<k>.json
(--holdout: records_<cpu>_holdout_job<k>.json), as it goes (a process killed at any moment leaves a usable
log; run again with the same --out to resume), and writes DIR/cpu_<cpu>.json naming the CPU (LLVM's name and
features, the hardware parameters). --time-budget-s is each process's budget: a task gets an equal share of
what is left when it starts; --max-tasks N tunes the first N tasks only. Tuning starts from scratch
(cost_model="scratch"), so that the corpus does not lean towards what an earlier shipped model liked.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import time
import warnings

import autosched as ans
from autosched import ops, te
from autosched.graph import extract_tasks, zoo

THREADS_PER_JOB = 2  # the default of --threads-per-job
NETWORKS = ("resnet18", "mobilenet_v2", "bert_layer")


# ---- the operator-library tasks: (desc, builder of the tensors) ----

def _ph(shape, name):
    return te.placeholder(shape, name=name, dtype="float32")


def _matmul(n, k, m):
    a, b = _ph((n, k), "A"), _ph((k, m), "B")
    return [a, b, ops.matmul(a, b)]


def _dense(m, n, k):
    x, w, bias = _ph((m, k), "data"), _ph((n, k), "weight"), _ph((n,), "bias")
    return [x, w, bias, ops.relu(ops.dense(x, w, bias))]


def _batch_matmul(b, m, n, k):
    x, y = _ph((b, m, k), "x"), _ph((b, n, k), "y")
    return [x, y, ops.batch_matmul(x, y)]


def _conv_nhwc(h, w, ci, co, kh, stride, pad):
    x, k = _ph((1, h, w, ci), "data"), _ph((kh, kh, ci, co), "kernel")
    return [x, k, ops.conv2d_nhwc(x, k, stride, pad)]


def _conv_nchw_relu(ci, h, w, co, kh, stride, pad):
    x, k, b = _ph((1, ci, h, w), "data"), _ph((co, ci, kh, kh), "kernel"), _ph((co,), "bias")
    return [x, k, b, ops.relu(ops.bias_add(ops.conv2d_nchw(x, k, stride, pad), b, axis=1))]


def _conv_nchwc(ci, h, w, co, kh, stride, pad, block):
    x = _ph((1, ci // block, h, w, block), "data")
    k = _ph((co // block, ci // block, kh, kh, block, block), "kernel")
    return [x, k, ops.conv2d_nchwc(x, k, stride, pad)]


def _depthwise_nhwc(h, w, c, kh, stride, pad):
    x, k = _ph((1, h, w, c), "data"), _ph((kh, kh, c, 1), "kernel")
    return [x, k, ops.depthwise_conv2d_nhwc(x, k, stride, pad)]


def _depthwise_nchwc(c, h, w, kh, stride, pad, block):
    x, k = _ph((1, c // block, h, w, block), "data"), _ph((c // block, kh, kh, block), "kernel")
    return [x, k, ops.depthwise_conv2d_nchwc(x, k, stride, pad)]


def _max_pool(c, h, w, size, stride, pad):
    x = _ph((1, c, h, w), "data")
    return [x, ops.max_pool2d(x, size, stride, pad)]


def _avg_pool_nhwc(h, w, c, size, stride):
    x = _ph((1, h, w, c), "data")
    return [x, ops.avg_pool2d(x, size, stride, 0, layout="NHWC")]


def _global_avg(c, h, w):
    x = _ph((1, c, h, w), "data")
    return [x, ops.global_avg_pool2d(x)]


def _softmax(m, n):
    x = _ph((m, n), "x")
    return [x, ops.softmax(x)]


def _layer_norm(m, n):
    x, g, b = _ph((m, n), "x"), _ph((n,), "gamma"), _ph((n,), "beta")
    return [x, g, b, ops.layer_norm(x, g, b, axis=-1)]


OP_TASKS = [
    ("matmul 512x512x512", lambda: _matmul(512, 512, 512)),
    ("matmul 128x768x768", lambda: _matmul(128, 768, 768)),
    ("matmul 1x1024x1000", lambda: _matmul(1, 1024, 1000)),
    ("matmul 257x129x67", lambda: _matmul(257, 129, 67)),
    ("matmul 64x3072x256", lambda: _matmul(64, 3072, 256)),
    ("dense_relu 1x1000x512", lambda: _dense(1, 1000, 512)),
    ("dense_relu 16x256x1024", lambda: _dense(16, 256, 1024)),
    ("dense_relu 100x37x300", lambda: _dense(100, 37, 300)),
    ("batch_matmul 12x128x128x64", lambda: _batch_matmul(12, 128, 128, 64)),
    ("batch_matmul 4x50x70x33", lambda: _batch_matmul(4, 50, 70, 33)),
    ("conv2d_nhwc 56x56x64->64 3x3", lambda: _conv_nhwc(56, 56, 64, 64, 3, 1, 1)),
    ("conv2d_nhwc 28x28x128->256 3x3 s2", lambda: _conv_nhwc(28, 28, 128, 256, 3, 2, 1)),
    ("conv2d_nhwc 14x14x256->256 1x1", lambda: _conv_nhwc(14, 14, 256, 256, 1, 1, 0)),
    ("conv2d_nhwc 17x17x48->40 5x5", lambda: _conv_nhwc(17, 17, 48, 40, 5, 1, 2)),
    ("conv2d_nhwc 224x224x3->32 3x3 s2", lambda: _conv_nhwc(224, 224, 3, 32, 3, 2, 1)),
    ("conv2d_nchw_relu 64x28x28->96 3x3", lambda: _conv_nchw_relu(64, 28, 28, 96, 3, 1, 1)),
    ("conv2d_nchw_relu 32x7x7->64 1x1", lambda: _conv_nchw_relu(32, 7, 7, 64, 1, 1, 0)),
    ("conv2d_nchwc8 64x30x30->64 3x3", lambda: _conv_nchwc(64, 30, 30, 64, 3, 1, 1, 8)),
    ("conv2d_nchwc16 128x14x14->128 3x3", lambda: _conv_nchwc(128, 14, 14, 128, 3, 1, 1, 16)),
    ("depthwise_nhwc 112x112x32 3x3", lambda: _depthwise_nhwc(112, 112, 32, 3, 1, 1)),
    ("depthwise_nhwc 28x28x144 3x3 s2", lambda: _depthwise_nhwc(28, 28, 144, 3, 2, 1)),
    ("depthwise_nhwc 15x15x61 5x5", lambda: _depthwise_nhwc(15, 15, 61, 5, 1, 2)),
    ("depthwise_nchwc8 96x28x28 3x3", lambda: _depthwise_nchwc(96, 28, 28, 3, 1, 1, 8)),
    ("max_pool nchw 64x112x112 3x3 s2", lambda: _max_pool(64, 112, 112, 3, 2, 1)),
    ("avg_pool nhwc 28x28x32 2x2 s2", lambda: _avg_pool_nhwc(28, 28, 32, 2, 2)),
    ("global_avg_pool 512x7x7", lambda: _global_avg(512, 7, 7)),
    ("softmax 128x1000", lambda: _softmax(128, 1000)),
    ("layer_norm 128x768", lambda: _layer_norm(128, 768)),
]

# Never in the corpus: the shipped model's tests rank records of these (tests/records/).
HOLDOUT_TASKS = [
    ("conv2d_nhwc 20x20x24->40 3x3 (held out)", lambda: _conv_nhwc(20, 20, 24, 40, 3, 1, 1)),
    ("matmul 96x200x72 (held out)", lambda: _matmul(96, 200, 72)),
]


def job_target(text, threads):
    """The target each job tunes for: `text` with -num-cores=<threads> unless it names a count."""
    return text if "-num-cores=" in text else f"{text} -num-cores={threads}"


def corpus_tasks(target, networks, with_ops, holdout=False):
    """The tasks, deduplicated by workload key, in a fixed shuffled order."""
    tasks = []
    if holdout:
        specs = HOLDOUT_TASKS
    else:
        specs = OP_TASKS if with_ops else []
        for name in networks:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                net_tasks, _ = extract_tasks(zoo.get_model(name), target, layout="auto")
            for i, t in enumerate(net_tasks):
                tasks.append(ans.SearchTask(compute_dag=t.compute_dag, workload_key=t.workload_key,
                                            target=target, desc=f"{name}.{i} {t.desc}"[:80]))
    for desc, make in specs:
        tasks.append(ans.SearchTask(compute_dag=ans.ComputeDAG(make()), target=target, desc=desc))
    seen, unique = set(), []
    for t in tasks:
        if t.workload_key not in seen:
            seen.add(t.workload_key)
            unique.append(t)
    random.Random(0).shuffle(unique)
    return unique


def cpu_slug(target):
    return "".join(c if c.isalnum() else "-" for c in ans.Target(target).cpu) or "cpu"


def write_cpu_file(out, target):
    t = ans.Target(target)
    task = ans.SearchTask(compute_dag=ans.ComputeDAG(_matmul(8, 8, 8)), target=target)
    hw = task.hardware_params
    doc = {"cpu": t.cpu, "features": list(t.features), "target": t.text, "host_cores": os.cpu_count(),
           "hardware_params": {f: getattr(hw, f) for f in ("num_cores", "vector_unit_bytes", "cache_line_bytes",
                                                             "l1_cache_bytes", "l2_cache_bytes", "l3_cache_bytes",
                                                             "num_vector_registers", "fma_units")}}
    path = os.path.join(out, f"cpu_{cpu_slug(target)}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(path + ".tmp", path)


def run_job(args, job):
    """One process: pins itself, tunes every jobs-th task into its own log."""
    cores = sorted(os.sched_getaffinity(0))
    mine = set(cores)
    if args.jobs > 1:  # one process alone may run on any core (the OS moves it away from other load)
        mine = set(cores[args.threads_per_job * job:args.threads_per_job * (job + 1)])
        os.sched_setaffinity(0, mine)
    start = time.monotonic()
    target = job_target(args.target, args.threads_per_job)
    tasks = corpus_tasks(target, args.networks, not args.no_ops, args.holdout)[:args.max_tasks][job::args.jobs]
    tag = f"holdout_job{job}" if args.holdout else f"job{job}"
    log = os.path.join(args.out, f"records_{cpu_slug(target)}_{tag}.json")
    print(f"[job {job}] cores {sorted(mine)}, {len(tasks)} tasks, target '{target}', log {log}", flush=True)
    builder = ans.LocalBuilder(n_parallel=args.threads_per_job)
    runner = ans.LocalRunner(min_repeat_ms=args.min_repeat_ms)
    for i, task in enumerate(tasks):
        budget = None
        if args.time_budget_s is not None:
            left = args.time_budget_s - (time.monotonic() - start)
            if left < 5:
                print(f"[job {job}] time budget used: {i} of {len(tasks)} tasks tuned", flush=True)
                break
            budget = left / (len(tasks) - i)
        opts = ans.TuningOptions(num_measure_trials=args.trials_per_task,
                                 num_measures_per_round=args.per_round, time_budget_s=budget,
                                 builder=builder, runner=runner, measure_callbacks=[ans.RecordToFile(log)],
                                 verbose=0)
        t0 = time.monotonic()
        try:
            # From scratch: the corpus must not lean towards what an earlier shipped model liked.
            res = task.tune(opts, cost_model="scratch")
            best = f"best {res.best_cost * 1e3:.4g} ms" if res.best_cost else "no valid schedule"
            print(f"[job {job}] {i + 1}/{len(tasks)} {task.desc}: {res.trials} trials, {best}, "
                  f"{time.monotonic() - t0:.0f} s", flush=True)
        except Exception as err:  # one task's failure must not end the corpus
            print(f"[job {job}] {i + 1}/{len(tasks)} {task.desc}: failed: {err}", flush=True)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True, help="folder of the logs")
    p.add_argument("--trials-per-task", type=int, default=64)
    p.add_argument("--per-round", type=int, default=16,
                   help="measurements per search round (small rounds waste less at the end of a task's budget)")
    p.add_argument("--jobs", type=int, default=1, help="processes, each on its own pair of cores")
    p.add_argument("--time-budget-s", type=float, default=None, help="each process's budget in seconds")
    p.add_argument("--target", default="llvm")
    p.add_argument("--threads-per-job", type=int, default=THREADS_PER_JOB,
                   help="cores each process is pinned to and threads its kernels use")
    p.add_argument("--networks", default=",".join(NETWORKS), help="zoo models, comma-separated ('' for none)")
    p.add_argument("--no-ops", action="store_true", help="leave out the operator-library tasks")
    p.add_argument("--holdout", action="store_true", help="tune the held-out tasks (never in the corpus)")
    p.add_argument("--min-repeat-ms", type=float, default=50, help="LocalRunner's min_repeat_ms")
    p.add_argument("--max-tasks", type=int, default=None, help="tune only the first N tasks of the shuffled order")
    p.add_argument("--list", action="store_true", help="print the tasks and exit")
    p.add_argument("--job", type=int, default=None, help=argparse.SUPPRESS)  # a child process's index
    args = p.parse_args(argv)
    args.networks = [n for n in args.networks.split(",") if n]
    for n in args.networks:
        if n not in zoo.MODELS:
            p.error(f"--networks: unknown model {n!r} (models: {', '.join(zoo.MODELS)})")
    if min(args.jobs, args.trials_per_task, args.per_round, args.threads_per_job) < 1:
        p.error("--jobs, --trials-per-task, --per-round and --threads-per-job must be >= 1")
    if args.time_budget_s is not None and args.time_budget_s <= 0:
        p.error("--time-budget-s must be positive")
    if args.jobs * args.threads_per_job > len(os.sched_getaffinity(0)) and args.jobs > 1:
        p.error(f"--jobs {args.jobs} needs {args.jobs * args.threads_per_job} cores; this process may use "
                f"{len(os.sched_getaffinity(0))}")
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.list:
        target = job_target(args.target, args.threads_per_job)
        tasks = corpus_tasks(target, args.networks, not args.no_ops, args.holdout)[:args.max_tasks]
        for i, t in enumerate(tasks):
            print(f"{i:3d} job {i % args.jobs}  {t.compute_dag.flop_ct / 1e6:10.2f} MFLOP  {t.desc}")
        return 0
    os.makedirs(args.out, exist_ok=True)
    if args.job is not None:
        run_job(args, args.job)
        return 0
    write_cpu_file(args.out, job_target(args.target, args.threads_per_job))
    if args.jobs == 1:
        run_job(args, 0)
        return 0
    argv = sys.argv[1:] if argv is None else list(argv)
    children = [subprocess.Popen([sys.executable, os.path.abspath(__file__), *argv, "--job", str(j)])
                for j in range(args.jobs)]
    try:
        codes = [c.wait() for c in children]
    except KeyboardInterrupt:
        for c in children:
            c.terminate()
        codes = [c.wait() for c in children]
    return max(codes)


if __name__ == "__main__":
    sys.exit(main())
