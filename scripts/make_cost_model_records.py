"""Tunes a corpus of tasks into record logs: the training data of the cost model shipped in the package.

    python3 scripts/make_cost_model_records.py --out DIR [--trials-per-task 64] [--jobs 1] [--time-budget-s S]
        [--target llvm] [--networks resnet18,mobilenet_v2,bert_layer] [--no-ops] [--random-tasks N]
        [--shape-seed S] [--holdout] [--list] [--suite cnn,mobile,vit,encoder,decoder|all]

The tasks: those of the zoo networks (extract_tasks with layout="auto", so the channel-blocked convolutions of
the target's vector width) and a spread of operator-library tasks (matmul, dense, batch_matmul, conv2d in NHWC,
NCHW and NCHWc, depthwise, pooling, softmax, layer_norm; varied shapes, awkward ones among them). --holdout
tunes instead the held-out tasks, which are never part of the corpus (their log tests the shipped model).

--suite FAMILIES adds the tasks of the model suite (bench/_models.py: its models of those families at their
published size, exported by torch.onnx.export, imported by from_onnx, extract_tasks(graph, target) with
layout="auto" as graph.build does). Exporting a model takes up to a minute: the tasks of each model are kept in
DIR/suite_tasks.json as they are extracted (a second run with the same --out reads them). Every task is tagged
with the families it belongs to (a suite family, "ops" for the operator library, "zoo" for --networks) in
DIR/task_families.json (workload key -> families, description), so that the training script can hold out whole
families; a workload shared by two families is one task tagged with both.

--random-tasks N adds N operator-library tasks of the same families with shapes drawn at random (seeded by
--shape-seed; another seed, other shapes): extents from 1 to a few thousand, round ones (multiples of 8 to 64),
primes and any others; kernels 1, 3, 5 and 7, strides 1 and 2, padding "same" or none; channel blocks of 8
and 16. Sizes are log-uniform (a compute task does 0.1 to 200 MFLOP, a pooling, softmax or layer_norm task
reads 4 K to 4 M elements), so that the slow candidates of a search stay well under 50 ms.
No drawn task has the workload key of a held-out one: the tasks of --holdout and those of bert_layer (which
the training script holds out by default), whatever --networks names; nor of another task of the corpus.

--target may turn vector features off, e.g. "llvm -mattr=-avx512f" on an AVX-512 host: code for AVX2, and
hardware parameters that follow (vector_unit_bytes 32, 16 vector registers; the host's caches). Such a
target is another CPU for the cost model: its logs and CPU file are named after the CPU and the widest vector
extension the target keeps, where that differs from the CPU's own (records_sapphirerapids-avx2_job0.json),
so that the training script normalises its labels apart from those of the full CPU.

--tasks-per-family N keeps the first N tasks of each family in that order (a task shared by families counts for
the first of them by name), so that a corpus of a bounded time covers every family alike.

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
import math
import os
import random
import subprocess
import sys
import time
import warnings

import autosched as ans
from autosched import ops, te
from autosched.graph import extract_tasks, zoo

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUITE_FAMILIES = ("cnn", "mobile", "vit", "encoder", "decoder")  # bench/_models.py's FAMILIES
OPS_FAMILY, ZOO_FAMILY = "ops", "zoo"  # the family tags of the operator library and of --networks

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


HOLDOUT_NETWORK = "bert_layer"  # --holdout-network of earlier trainings: no drawn task is one of its

# Random shapes (--random-tasks): the families of OP_TASKS with relative weights, and the sizes they may have
# (a task's size is drawn log-uniform in its range, then shapes until one is within a factor of 2 of it).
FLOP_RANGE = (1e5, 2e8)        # compute tasks (matmul, dense, convolutions)
ELEMENT_RANGE = (4096, 4 << 20)  # memory-bound tasks (pooling, softmax, layer_norm): input elements


def _is_prime(n):
    return n >= 2 and all(n % d for d in range(2, int(n ** 0.5) + 1))


def _extent(rng, lo, hi):
    """An extent in [lo, hi], log-uniform: round (a multiple of 8 to 64) half the time, else a prime or any."""
    x = int(round(2 ** rng.uniform(math.log2(lo), math.log2(hi + 1) - 1e-9)))
    x = min(max(x, lo), hi)
    kind = rng.random()
    if kind < 0.5:
        for step in rng.choice(((64, 32, 16, 8), (32, 16, 8), (16, 8), (8,))):
            if x >= step and lo <= x // step * step <= hi:
                return x // step * step
    elif kind < 0.75:
        p = x
        while p <= hi and not _is_prime(p):
            p += 1
        if p <= hi:
            return p
    return x


def _conv_geometry(rng, lo=4, hi=112, depthwise=False):
    """(h, w, kernel, stride, pad) with at least one output pixel; square images mostly."""
    while True:
        h = _extent(rng, lo, hi)
        w = h if rng.random() < 0.8 else _extent(rng, lo, hi)
        kh = rng.choices((1, 3, 5, 7), weights=(0, 6, 2, 1) if depthwise else (3, 5, 2, 1))[0]
        stride = rng.choice((1, 1, 2))
        pad = kh // 2 if rng.random() < 0.8 else 0
        if min(h, w) + 2 * pad >= kh:
            return h, w, kh, stride, pad


def _draw_matmul(rng):
    n, k, m = _extent(rng, 1, 1024), _extent(rng, 4, 2048), _extent(rng, 4, 2048)
    return f"matmul {n}x{k}x{m}", lambda: _matmul(n, k, m)


def _draw_dense(rng):
    m, n, k = _extent(rng, 1, 256), _extent(rng, 8, 4096), _extent(rng, 8, 4096)
    return f"dense_relu {m}x{n}x{k}", lambda: _dense(m, n, k)


def _draw_batch_matmul(rng):
    b, m, n, k = _extent(rng, 1, 16), _extent(rng, 4, 512), _extent(rng, 4, 512), _extent(rng, 4, 512)
    return f"batch_matmul {b}x{m}x{n}x{k}", lambda: _batch_matmul(b, m, n, k)


def _stride_text(stride):
    return f" s{stride}" if stride > 1 else ""


def _draw_conv_nhwc(rng):
    h, w, kh, stride, pad = _conv_geometry(rng)
    ci = 3 if rng.random() < 0.1 else _extent(rng, 1, 512)
    co = _extent(rng, 4, 512)
    return (f"conv2d_nhwc {h}x{w}x{ci}->{co} {kh}x{kh}{_stride_text(stride)}",
            lambda: _conv_nhwc(h, w, ci, co, kh, stride, pad))


def _draw_conv_nchw_relu(rng):
    h, w, kh, stride, pad = _conv_geometry(rng)
    ci, co = _extent(rng, 1, 512), _extent(rng, 4, 512)
    return (f"conv2d_nchw_relu {ci}x{h}x{w}->{co} {kh}x{kh}{_stride_text(stride)}",
            lambda: _conv_nchw_relu(ci, h, w, co, kh, stride, pad))


def _draw_conv_nchwc(rng, block):
    h, w, kh, stride, pad = _conv_geometry(rng, 4, 64)
    ci, co = block * _extent(rng, 1, 64), block * _extent(rng, 1, 64)
    return (f"conv2d_nchwc{block} {ci}x{h}x{w}->{co} {kh}x{kh}{_stride_text(stride)}",
            lambda: _conv_nchwc(ci, h, w, co, kh, stride, pad, block))


def _draw_depthwise_nhwc(rng):
    h, w, kh, stride, pad = _conv_geometry(rng, depthwise=True)
    c = _extent(rng, 4, 1024)
    return (f"depthwise_nhwc {h}x{w}x{c} {kh}x{kh}{_stride_text(stride)}",
            lambda: _depthwise_nhwc(h, w, c, kh, stride, pad))


def _draw_depthwise_nchwc(rng):
    block = rng.choice((8, 16))
    h, w, kh, stride, pad = _conv_geometry(rng, depthwise=True)
    c = block * _extent(rng, 1, 64)
    return (f"depthwise_nchwc{block} {c}x{h}x{w} {kh}x{kh}{_stride_text(stride)}",
            lambda: _depthwise_nchwc(c, h, w, kh, stride, pad, block))


def _draw_max_pool(rng):
    c, h = _extent(rng, 1, 512), _extent(rng, 4, 224)
    size, stride = rng.choice((2, 3)), rng.choice((1, 2, 2))
    pad = rng.choice((0, size // 2))
    if h + 2 * pad < size:
        h = size
    return (f"max_pool nchw {c}x{h}x{h} {size}x{size}{_stride_text(stride)}",
            lambda: _max_pool(c, h, h, size, stride, pad))


def _draw_avg_pool_nhwc(rng):
    h, c = _extent(rng, 4, 224), _extent(rng, 1, 512)
    size = rng.choice((2, 3))
    stride = rng.choice((1, size))
    return (f"avg_pool nhwc {h}x{h}x{c} {size}x{size}{_stride_text(stride)}",
            lambda: _avg_pool_nhwc(h, h, c, size, stride))


def _draw_global_avg(rng):
    c, h = _extent(rng, 1, 2048), _extent(rng, 1, 56)
    return f"global_avg_pool {c}x{h}x{h}", lambda: _global_avg(c, h, h)


def _draw_softmax(rng):
    m, n = _extent(rng, 1, 4096), _extent(rng, 2, 8192)
    return f"softmax {m}x{n}", lambda: _softmax(m, n)


def _draw_layer_norm(rng):
    m, n = _extent(rng, 1, 2048), _extent(rng, 2, 8192)
    return f"layer_norm {m}x{n}", lambda: _layer_norm(m, n)


# (drawer, weight, memory-bound): the families of OP_TASKS; matrix products and convolutions most often.
RANDOM_FAMILIES = [
    (_draw_matmul, 2.0, False), (_draw_dense, 2.0, False), (_draw_batch_matmul, 1.5, False),
    (_draw_conv_nhwc, 1.5, False), (_draw_conv_nchw_relu, 1.0, False),
    (lambda rng: _draw_conv_nchwc(rng, 8), 1.0, False), (lambda rng: _draw_conv_nchwc(rng, 16), 1.0, False),
    (_draw_depthwise_nhwc, 1.0, False), (_draw_depthwise_nchwc, 1.0, False),
    (_draw_max_pool, 0.5, True), (_draw_avg_pool_nhwc, 0.5, True), (_draw_global_avg, 0.3, True),
    (_draw_softmax, 1.0, True), (_draw_layer_norm, 1.0, True),
]


def random_op_tasks(n, seed, target, exclude_keys):
    """`n` tasks of RANDOM_FAMILIES with random shapes (deterministic in `seed`), none of whose workload keys
    is in `exclude_keys` or repeats; sizes log-uniform in FLOP_RANGE / ELEMENT_RANGE."""
    rng = random.Random(seed)
    tasks, seen = [], set(exclude_keys)
    weights = [w for _, w, _ in RANDOM_FAMILIES]
    while len(tasks) < n:
        draw, _, memory_bound = rng.choices(RANDOM_FAMILIES, weights=weights)[0]
        lo, hi = ELEMENT_RANGE if memory_bound else FLOP_RANGE
        want = 2 ** rng.uniform(math.log2(lo), math.log2(hi))
        for _ in range(200):  # else another family and size
            desc, make = draw(rng)
            tensors = make()
            size = math.prod(tensors[0].shape) if memory_bound else ans.ComputeDAG(tensors).flop_ct
            if lo <= size <= hi and want / 2 <= size <= want * 2:
                break
        else:
            continue
        task = ans.SearchTask(compute_dag=ans.ComputeDAG(tensors), target=target, desc=f"{desc} (random)")
        if task.workload_key in seen:
            continue
        seen.add(task.workload_key)
        tasks.append(task)
    return tasks


def holdout_keys(target):
    """The workload keys that no corpus task may have: HOLDOUT_TASKS and the tasks of HOLDOUT_NETWORK."""
    keys = {ans.SearchTask(compute_dag=ans.ComputeDAG(make()), target=target).workload_key
            for _, make in HOLDOUT_TASKS}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net_tasks, _ = extract_tasks(zoo.get_model(HOLDOUT_NETWORK), target, layout="auto")
    return keys | {t.workload_key for t in net_tasks}


def job_target(text, threads):
    """The target each job tunes for: `text` with -num-cores=<threads> unless it names a count."""
    return text if "-num-cores=" in text else f"{text} -num-cores={threads}"


def _suite_module():
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    try:
        import _models
    finally:
        sys.path.pop(0)
    return _models


def _extract_suite_model(models, name, target):
    """The tasks of suite model `name` at its published size, as JSON texts; or the error (a line)."""
    from autosched import frontends
    try:
        module, example = models.SUITE[name].make(tiny=False)
        data = models.onnx_bytes(module, (example,), ["input"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            graph = frontends.from_onnx(data)
            tasks, _ = extract_tasks(graph, target, layout="auto")
    except Exception as err:  # a model that does not import is left out, not the end of the corpus
        return None, f"{type(err).__name__}: {str(err).strip().splitlines()[0] if str(err).strip() else ''}"[:200]
    return [t.to_json() for t in tasks], None


def suite_tasks(families, target, cache_dir=None):
    """[(family, task)] of the suite models of `families`, the model's name in each task's description. With
    `cache_dir`, the tasks of each model are read from (and, once extracted, written to) its suite_tasks.json."""
    models = _suite_module()
    cache_path = os.path.join(cache_dir, "suite_tasks.json") if cache_dir else None
    cache = {}
    if cache_path and os.path.exists(cache_path):
        with open(cache_path) as f:
            cache = json.load(f)
        if cache.get("target") != target:
            cache = {}
    cache.setdefault("target", target)
    cache.setdefault("models", {})
    out = []
    for name, spec in models.SUITE.items():
        if spec.family not in families:
            continue
        entry = cache["models"].get(name)
        if entry is None:
            t0 = time.monotonic()
            texts, error = _extract_suite_model(models, name, target)
            entry = {"family": spec.family, "tasks": texts or [], "error": error,
                     "extract_s": round(time.monotonic() - t0, 1)}
            print(f"suite: {name} ({spec.family}): "
                  + (f"left out, {error}" if error else f"{len(texts)} tasks, {entry['extract_s']} s"), flush=True)
            cache["models"][name] = entry
            if cache_path:
                with open(cache_path + ".tmp", "w") as f:
                    json.dump(cache, f)
                os.replace(cache_path + ".tmp", cache_path)
        for i, text in enumerate(entry["tasks"]):
            t = ans.SearchTask.from_json(text)
            out.append((spec.family, ans.SearchTask(
                compute_dag=t.compute_dag, workload_key=t.workload_key, target=target,
                hardware_params=t.hardware_params, desc=f"{name}.{i} {t.desc}"[:80],
                constant_args=t.constant_args, cold_constants=t.cold_constants,
                network_caches=t.network_caches)))
    return out


def parse_suite(text):
    """The families named by --suite ("all": every one); ValueError naming an unknown one."""
    names = list(SUITE_FAMILIES) if text.strip() == "all" else [f for f in text.split(",") if f]
    unknown = [f for f in names if f not in SUITE_FAMILIES]
    if unknown:
        raise ValueError(f"unknown family {', '.join(unknown)} (families: {', '.join(SUITE_FAMILIES)}, or all)")
    return names


def tagged_corpus_tasks(target, networks, with_ops, holdout=False, random_tasks=0, shape_seed=0, suite=(),
                        cache_dir=None, per_family=None):
    """(tasks, families): the tasks deduplicated by workload key in a fixed shuffled order (with per_family,
    at most that many of each family, a task counting for the first of its families), and workload key ->
    the sorted families of every task of that key."""
    tagged = []
    if holdout:
        specs = HOLDOUT_TASKS
    else:
        specs = OP_TASKS if with_ops else []
        tagged += suite_tasks(suite, target, cache_dir) if suite else []
        for name in networks:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                net_tasks, _ = extract_tasks(zoo.get_model(name), target, layout="auto")
            for i, t in enumerate(net_tasks):
                tagged.append((ZOO_FAMILY, ans.SearchTask(compute_dag=t.compute_dag, workload_key=t.workload_key,
                                                          target=target, desc=f"{name}.{i} {t.desc}"[:80])))
    for desc, make in specs:
        tagged.append((OPS_FAMILY, ans.SearchTask(compute_dag=ans.ComputeDAG(make()), target=target, desc=desc)))
    if random_tasks and not holdout:
        tagged += [(OPS_FAMILY, t) for t in random_op_tasks(
            random_tasks, shape_seed, target, holdout_keys(target) | {t.workload_key for _, t in tagged})]
    families, unique = {}, []
    for family, t in tagged:
        if t.workload_key not in families:
            families[t.workload_key] = set()
            unique.append(t)
        families[t.workload_key].add(family)
    random.Random(0).shuffle(unique)
    if per_family:  # the first per_family tasks of each family (by its first tag) in the shuffled order
        taken = {}
        for t in unique:
            taken.setdefault(min(families[t.workload_key]), []).append(t)
        keep = {t.workload_key for ts in taken.values() for t in ts[:per_family]}
        unique = [t for t in unique if t.workload_key in keep]
    return unique, {k: sorted(v) for k, v in families.items()}


def corpus_tasks(target, networks, with_ops, holdout=False, random_tasks=0, shape_seed=0, suite=(),
                 cache_dir=None, per_family=None):
    """The tasks, deduplicated by workload key, in a fixed shuffled order."""
    return tagged_corpus_tasks(target, networks, with_ops, holdout, random_tasks, shape_seed, suite, cache_dir,
                               per_family)[0]


def write_families_file(out, tasks, families):
    """DIR/task_families.json: workload key -> {"families", "desc"} of the corpus's tasks (merged with those of
    an earlier run into the same folder)."""
    path = os.path.join(out, "task_families.json")
    doc = {}
    if os.path.exists(path):
        with open(path) as f:
            doc = json.load(f)
    for t in tasks:
        old = doc.get(t.workload_key, {}).get("families", [])
        doc[t.workload_key] = {"families": sorted(set(old) | set(families[t.workload_key])), "desc": t.desc}
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f, indent=0, sort_keys=True)
    os.replace(path + ".tmp", path)


def _vector_isa(features):
    """The widest x86 vector extension among `features` ('' where none is known)."""
    return next((isa for isa in ("avx512f", "avx2", "avx", "sse4.2") if isa in features), "")


def cpu_slug(target):
    """The CPU's name in file names; a target whose -mattr takes away vector extensions of the CPU adds the
    widest extension it keeps ("sapphirerapids-avx2"): its timings are another CPU's."""
    t = ans.Target(target)
    name = t.cpu
    if t.mattr:
        kept = _vector_isa(t.features)
        if kept != _vector_isa(ans.Target(target.replace(f"-mattr={t.mattr}", "")).features):
            name += "-" + (kept.replace("512f", "512").replace(".", "") or "novec")
    return "".join(c if c.isalnum() else "-" for c in name) or "cpu"


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
    tasks = corpus_tasks(target, args.networks, not args.no_ops, args.holdout, args.random_tasks,
                         args.shape_seed, args.suite, args.out,
                         args.tasks_per_family)[:args.max_tasks][job::args.jobs]
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
    p.add_argument("--random-tasks", type=int, default=0,
                   help="add N operator-library tasks of random shapes (none of them a held-out task)")
    p.add_argument("--shape-seed", type=int, default=0, help="seed of the random shapes")
    p.add_argument("--suite", default="", help="families of the model suite (bench/_models.py) whose tasks to "
                   f"add, comma-separated ({','.join(SUITE_FAMILIES)}) or 'all'")
    p.add_argument("--holdout", action="store_true", help="tune the held-out tasks (never in the corpus)")
    p.add_argument("--min-repeat-ms", type=float, default=50, help="LocalRunner's min_repeat_ms")
    p.add_argument("--tasks-per-family", type=int, default=None,
                   help="tune at most N tasks of each family (suite families, ops, zoo), N of the shuffled order")
    p.add_argument("--max-tasks", type=int, default=None, help="tune only the first N tasks of the shuffled order")
    p.add_argument("--list", action="store_true", help="print the tasks and exit")
    p.add_argument("--job", type=int, default=None, help=argparse.SUPPRESS)  # a child process's index
    args = p.parse_args(argv)
    args.networks = [n for n in args.networks.split(",") if n]
    for n in args.networks:
        if n not in zoo.MODELS:
            p.error(f"--networks: unknown model {n!r} (models: {', '.join(zoo.MODELS)})")
    try:
        args.suite = parse_suite(args.suite)
    except ValueError as err:
        p.error(f"--suite: {err}")
    if args.list and args.suite:
        os.makedirs(args.out, exist_ok=True)  # the suite's tasks are kept there
    if args.random_tasks < 0:
        p.error("--random-tasks must be >= 0")
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
        tasks, families = tagged_corpus_tasks(target, args.networks, not args.no_ops, args.holdout,
                                              args.random_tasks, args.shape_seed, args.suite, args.out,
                         args.tasks_per_family)
        for i, t in enumerate(tasks[:args.max_tasks]):
            print(f"{i:3d} job {i % args.jobs}  {t.compute_dag.flop_ct / 1e6:10.2f} MFLOP  "
                  f"{','.join(families[t.workload_key]):12} {t.desc}")
        return 0
    os.makedirs(args.out, exist_ok=True)
    if args.job is not None:
        run_job(args, args.job)
        return 0
    target = job_target(args.target, args.threads_per_job)
    write_cpu_file(args.out, target)
    tasks, families = tagged_corpus_tasks(target, args.networks, not args.no_ops, args.holdout, args.random_tasks,
                                          args.shape_seed, args.suite, args.out,
                         args.tasks_per_family)  # extracts the suite's once
    write_families_file(args.out, tasks[:args.max_tasks], families)
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
