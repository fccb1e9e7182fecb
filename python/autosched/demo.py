"""autosched's main job, run by the README's first command.

Builds the compute DAGs of a few tasks users tune and prints, for each: the DAG
as text, its FLOP count and its workload key; checks one DAG against numpy
with the reference evaluator; then compiles a matmul twice, with the default
schedule and with a hand-written one, checks both against the reference and
times them next to numpy. Run it with `python -m autosched.demo`.
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
    _build_and_time()


def _tiled_schedule(dag):
    """Register tiles accumulated in a local buffer, vectorized columns, parallel rows."""
    s = dag.get_init_state()
    local = s.cache_write("T_matmul", "local")
    i, j = s["T_matmul"].iters
    io, ii = s.split("T_matmul", i, [8])
    jo, ji = s.split("T_matmul", j, [32])
    s.reorder("T_matmul", [io, jo, ii, ji])
    s.compute_at(local, "T_matmul", jo)
    li, lj, lk = s[local].iters
    lj_outer, lj_vec = s.split(local, lj, [16])
    s.reorder(local, [lk, li, lj_outer, lj_vec])
    s.unroll(local, li)
    s.unroll(local, lj_outer)
    s.vectorize(local, lj_vec)
    s.parallel("T_matmul", io)
    return s


def _build_and_time(n=512):
    if not ans._core.has_llvm():
        print("\nthis build has no LLVM backend: skipping code generation")
        return
    print(f"\n== matmul + relu {n}x{n}x{n}, compiled")
    tensors = _matmul_relu(n, n, n)
    dag = ans.ComputeDAG(tensors)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((n, n)).astype("float32")
    b = rng.standard_normal((n, n)).astype("float32")
    points = [(int(r), int(c)) for r, c in rng.integers(0, n, size=(64, 2))]
    reference = ans.evaluate_points(dag, [a, b], 0, points)
    expected = np.maximum(a @ b, 0)
    scratch = np.empty((n, n), "float32")
    numpy_seconds = min(_time(lambda: np.maximum(np.matmul(a, b, out=scratch), 0, out=scratch)) for _ in range(3))
    flop = 2.0 * n**3
    print(f"{'schedule':22}{'compile s':>10}{'run ms':>10}{'GFLOP/s':>10}{'vs numpy':>10}")
    for name, state in [("default", dag.get_init_state()), ("hand-written tiles", _tiled_schedule(dag))]:
        mod = ans.build(dag, state, "llvm")  # the host CPU, all its cores
        out = np.zeros((n, n), "float32")
        mod(a, b, out)
        got = np.array([out[p] for p in points])
        if not np.allclose(got, reference, rtol=1e-3, atol=1e-3) or not np.allclose(out, expected, rtol=1e-3, atol=1e-3):
            raise SystemExit(f"{name}: wrong result")
        seconds = min(mod.time_evaluator(number=1, repeat=3, min_repeat_ms=50)(a, b, out))
        print(f"{name:22}{mod.compile_seconds:10.3f}{seconds * 1e3:10.2f}{flop / seconds / 1e9:10.1f}"
              f"{numpy_seconds / seconds:10.2f}")
    print(f"{'numpy (OpenBLAS)':22}{'':10}{numpy_seconds * 1e3:10.2f}{flop / numpy_seconds / 1e9:10.1f}{1:10.2f}")
    print("both schedules match the reference evaluator at 64 sampled points and numpy everywhere")


def _time(fn, min_seconds=0.05):
    """Seconds per call, averaged over calls filling at least min_seconds."""
    calls, start = 0, time.perf_counter()
    while True:
        fn()
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            return elapsed / calls


if __name__ == "__main__":
    main()
