"""Benchmark: the uint8 x int8 -> int32 matmul against onnxruntime's MatMulInteger and float32 matmuls, in one run.

Run: python3 bench/bench_int8.py [--size 1024] [--trials 0] [--log-dir DIR] [--tiny]

autosched computes the product over a weight packed for the CPU's int8 dot-product instruction
(ops.matmul_dot_packed: [N/16, K/4, 16, 4], panels of 16 columns); where the CPU has VNNI the code generator emits vpdpbusd, elsewhere the same
sums in ordinary vector code. With --trials 0 (the default) the expert schedule is timed as it is; with more, the
task is tuned (seeded with the expert) and the best schedule is timed. Peers in this process, on the same threads
(the cores this process may run on; run under `taskset -c 0,1` for two): onnxruntime's MatMulInteger (weight an
initializer, zero points 0), autosched's own float32 matmul (its expert schedule, or tuned with the same trials)
and numpy's float32 matmul (OpenBLAS). Prints the CPU, its dot-product features, the instructions the int8
kernel uses, times, GOP/s and ratios (peer / autosched int8: above 1, autosched is faster). Not a test.
"""
import argparse
import os
import re
import sys
import tempfile

import _env  # bench/, the script's folder, is on sys.path

_env.set_openblas_coretype()  # before numpy loads OpenBLAS

import numpy as np  # noqa: E402

import autosched as ans  # noqa: E402
from autosched import search, te  # noqa: E402
from autosched.ops.quantized import pack_dot_weight  # noqa: E402

INSTRUCTIONS = ("vpdpbusd", "vpmaddwd", "vpmaddubsw", "vpmulld", "vfmadd231ps")


def cores():
    return len(os.sched_getaffinity(0))


def schedule(task, trials, log_dir, name):
    """The expert schedule (trials 0) or the best after tuning."""
    if trials <= 0:
        return search.expert_schedule(task)
    log = os.path.join(log_dir, f"{name}.json")
    task.tune(ans.TuningOptions(num_measure_trials=trials, num_measures_per_round=min(64, trials), verbose=0,
                                measure_callbacks=[ans.RecordToFile(log)]))
    return task.apply_best(log)


def time_module(mod, args, repeat=5):
    return float(np.min(mod.time_evaluator(number=5, repeat=repeat)(*args).results))


def float_matmul_task(n, target):
    a, b = te.placeholder((n, n), name="A"), te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    return ans.SearchTask(compute_dag=ans.ComputeDAG([a, b, c]), target=target)


def ort_matmul_integer_seconds(a, w, threads):
    try:
        import onnxruntime as ort
        from onnx import TensorProto, helper, numpy_helper
    except ImportError as e:
        return None, f"onnxruntime not installed ({e})"
    m, k = a.shape
    n = w.shape[1]
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["A", "W"], ["Y"])], "int8_matmul",
        [helper.make_tensor_value_info("A", TensorProto.UINT8, [m, k])],
        [helper.make_tensor_value_info("Y", TensorProto.INT32, [m, n])],
        initializer=[numpy_helper.from_array(w, "W")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8  # what every onnxruntime since 1.10 reads
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    (out,) = session.run(None, {"A": a})
    want = a.astype(np.int64) @ w.astype(np.int64)
    note = f"onnxruntime {ort.__version__}"
    if not np.array_equal(out, want):
        # Without VNNI, its u8 x s8 kernel sums pairs of products in int16 (pmaddubsw), which saturates.
        wrong = np.count_nonzero(out != want)
        note += f"; its result differs from the exact product in {wrong} of {out.size} elements (max |diff| " \
                f"{np.abs(out - want).max()})"
    seconds = _env.best_mean(lambda: session.run(None, {"A": a}))
    return seconds, note


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=1024, help="M = N = K")
    parser.add_argument("--trials", type=int, default=0, help="0: the expert schedule as it is")
    parser.add_argument("--log-dir", default=None)
    parser.add_argument("--target", default="llvm")
    parser.add_argument("--tiny", action="store_true", help="size 64 (a check that the script works)")
    args = parser.parse_args()
    n = 64 if args.tiny else args.size
    threads = cores()
    log_dir = args.log_dir or tempfile.mkdtemp(prefix="bench_int8_")
    print(f"CPU: {_env.cpu_text()}; {threads} cores for every implementation")
    print(f"target {args.target}")
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (n, n)).astype(np.uint8)
    w = rng.integers(-128, 128, (n, n)).astype(np.int8)
    want = a.astype(np.int64) @ w.astype(np.int64)
    gop = 2 * n ** 3 / 1e9

    task = ans.SearchTask(func="matmul_u8s8_packed", args=(n, n, n), target=args.target)
    state = schedule(task, args.trials, log_dir, "int8")
    mod = ans.build(task.compute_dag, state, args.target)
    out = np.zeros((n, -(-n // 16), 16), np.int32)
    int8_args = [a, pack_dot_weight(w), out]
    mod(*int8_args)
    if not np.array_equal(out.reshape(n, -1)[:, :n], want):
        sys.exit("autosched's int8 result differs from numpy's")
    asm = mod.get_source("asm")
    used = {i: len(re.findall(rf"\b{i}\b", asm)) for i in INSTRUCTIONS}
    print("int8 kernel's instructions: " + ", ".join(f"{i} {c}" for i, c in used.items() if c))
    ours = time_module(mod, int8_args)

    rows = [("autosched int8 (u8 x s8 -> s32)", ours, "")]
    seconds, note = ort_matmul_integer_seconds(a, w, threads)
    rows.append(("onnxruntime MatMulInteger", seconds, note))
    ftask = float_matmul_task(n, args.target)
    fmod = ans.build(ftask.compute_dag, schedule(ftask, args.trials, log_dir, "float32"), args.target)
    af, wf = a.astype(np.float32), w.astype(np.float32)
    fout = np.zeros((n, n), np.float32)
    rows.append(("autosched float32", time_module(fmod, [af, wf, fout]), ""))
    rows.append(("numpy float32 (OpenBLAS)", _env.best_mean(lambda: af @ wf), ""))

    print(f"\nmatmul {n}x{n}x{n} ({'expert schedule' if args.trials <= 0 else f'{args.trials} trials'}); "
          f"{_env.load_note()}")
    print(f"{'implementation':34}{'ms':>10}{'GOP/s':>9}{'peer / int8':>13}  note")
    for name, seconds, note in rows:
        if seconds is None:
            print(f"{name:34}{'-':>10}{'':>9}{'':>13}  {note}")
            continue
        ratio = f"{seconds / ours:.2f}" if name != rows[0][0] else ""
        print(f"{name:34}{seconds * 1e3:10.3f}{gop / seconds:9.1f}{ratio:>13}  {note}")


if __name__ == "__main__":
    main()
