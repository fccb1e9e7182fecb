"""autosched's main job, run by the README's first command.

Builds the compute DAGs of a few tasks users tune and prints, for each: the DAG
as text, its FLOP count and its workload key; then checks one DAG against numpy
with the reference evaluator. Run it with `python -m autosched.demo`.
"""
import time

import numpy as np

import autosched as ans
from autosched import ops, te


def _matmul_relu(n, m, k):
    a = te.placeholder((n, k), name="A")
    b = te.placeholder((k, m), name="B")
    return [a, b, ops.relu(ops.matmul(a, b))]


def _conv2d(n, h, w, ci, co, kh, kw, stride, pad):
    data = te.placeholder((n, h, w, ci), name="data")
    kernel = te.placeholder((kh, kw, ci, co), name="kernel")
    return [data, kernel, ops.conv2d_nhwc(data, kernel, stride, pad)]


def _softmax(rows, cols):
    x = te.placeholder((rows, cols), name="x")
    return [x, ops.softmax(x)]


def _layer_norm(rows, cols):
    x = te.placeholder((rows, cols), name="x")
    gamma = te.placeholder((cols,), name="gamma")
    beta = te.placeholder((cols,), name="beta")
    return [x, gamma, beta, ops.layer_norm(x, gamma, beta, axis=-1)]


TASKS = [
    ("matmul + relu 1024x1024x1024", lambda: _matmul_relu(1024, 1024, 1024)),
    ("conv2d NHWC 1x56x56x64 -> 64, 3x3, stride 1, pad 1", lambda: _conv2d(1, 56, 56, 64, 64, 3, 3, 1, 1)),
    ("softmax 128x1000", lambda: _softmax(128, 1000)),
    ("layer_norm 512x768", lambda: _layer_norm(512, 768)),
]


def main():
    print(f"autosched {ans.__version__}: compute DAGs of {len(TASKS)} tasks\n")
    for title, make in TASKS:
        dag = ans.ComputeDAG(make())
        print(f"== {title}")
        print(dag)
        print(f"FLOPs: {dag.flop_ct:.4g}   workload key: {dag.workload_key()}\n")

    # The reference evaluator, checked against numpy on a small task.
    tensors = _matmul_relu(33, 17, 29)
    dag = ans.ComputeDAG(tensors)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((33, 29)).astype("float32")
    b = rng.standard_normal((29, 17)).astype("float32")
    start = time.perf_counter()
    (out,) = ans.evaluate(dag, [a, b])
    elapsed = time.perf_counter() - start
    error = float(np.max(np.abs(out - np.maximum(a @ b, 0))))
    print(f"reference evaluator, matmul+relu 33x17x29: max |error| vs numpy = {error:.2e} ({elapsed * 1e3:.1f} ms)")


if __name__ == "__main__":
    main()
