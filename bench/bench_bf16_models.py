"""Benchmark: bfloat16 models of the suite, built untuned, with and without the bfloat16 dot product, against
PyTorch's bfloat16 run, in one process.

Run: python3 bench/bench_bf16_models.py [--models resnet50,bert_base] [--rounds 5] [--tiny]

Each model (bench/_models.py, random weights) is cast to bfloat16 in PyTorch, imported with from_torch and built
for the host ("llvm": where the CPU has AVX512-BF16 or AMX-BF16, its dense layers, matmuls on constant weights
and direct convolutions run on vdpbf16ps / tdpbf16ps over weights packed in pairs, docs/quantized.md) and for
the host without those features ("llvm -mattr=-avx512bf16,-amx-bf16": the plain float32 code over bfloat16
operands). Each is checked against PyTorch's bfloat16 output (the largest difference over the largest
magnitude), then the three are timed in turn over --rounds alternating rounds on the threads this process may
run on (`taskset -c 0,1` for two); the best of each is printed, with PyTorch's time over ours. Not a test.
"""
import argparse
import os
import sys

import _env  # bench/, the script's folder, is on sys.path

_env.set_openblas_coretype()

import numpy as np  # noqa: E402

import autosched as ans  # noqa: E402
from autosched import frontends  # noqa: E402

import _models  # noqa: E402

WITHOUT_DOT = "llvm -mattr=-avx512bf16,-amx-bf16"


def as_numpy(tensor):
    import ml_dtypes
    import torch
    return tensor.detach().contiguous().view(torch.int16).numpy().view(ml_dtypes.bfloat16)


def relative_difference(got, want):
    got, want = got.astype(np.float64), want.astype(np.float64)
    return float(np.max(np.abs(got - want)) / (np.max(np.abs(want)) + 1e-30))


def bench_model(name, args):
    import torch
    torch.manual_seed(0)
    module, example = _models.SUITE[name].make(tiny=args.tiny)
    module = module.eval().to(torch.bfloat16)
    if example.dtype.is_floating_point:
        example = example.to(torch.bfloat16)
    graph = frontends.from_torch(module, (example,))
    with torch.no_grad():
        output = module(example)
        want = as_numpy(output if isinstance(output, torch.Tensor) else output[0])
    feed = as_numpy(example) if example.dtype == torch.bfloat16 else example.numpy()
    rows = []
    for label, target in (("with the dot product", "llvm"), ("without it", WITHOUT_DOT)):
        net = ans.graph.build(graph, target, verbose=False)
        packed = sum("bf16_dot" in str(group) for group in net.groups)
        (got,) = net(feed)
        evaluator = net.time_evaluator(number=args.number, repeat=1)
        rows.append((label, lambda e=evaluator: min(e(feed)),
                     f"diff {relative_difference(got, want):.1e}; {packed} of {len(net.groups)} kernels on packed pairs"))

    def torch_run():
        with torch.no_grad():
            module(example)
    rows.append(("PyTorch bfloat16", lambda: _env.best_mean(torch_run, repeat=1), ""))
    best = [float("inf")] * len(rows)
    for _ in range(args.rounds):
        for i, (_, run, _) in enumerate(rows):
            best[i] = min(best[i], run())
    print(f"\n{name} ({_models.SUITE[name].family}), bfloat16:")
    for (label, _, note), seconds in zip(rows, best):
        print(f"  {label:22} {seconds * 1e3:9.3f} ms   PyTorch / this {best[-1] / seconds:5.2f}   {note}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet50,bert_base", help=f"of: {', '.join(_models.SUITE)}")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--number", type=int, default=3, help="runs per timing")
    parser.add_argument("--tiny", action="store_true", help="the models' tiny configurations (a quick check)")
    args = parser.parse_args()
    import torch
    threads = len(os.sched_getaffinity(0))
    torch.set_num_threads(threads)
    print(f"CPU: {_env.cpu_text()}; {threads} threads; {_env.load_note()}; PyTorch {torch.__version__}")
    target = ans.Target("llvm")
    print("bfloat16 dot product on this CPU:", ", ".join(f for f in ("avx512bf16", "amx-bf16")
                                                         if f in target.features) or "none")
    for name in args.models.split(","):
        if name not in _models.SUITE:
            sys.exit(f"unknown model '{name}': one of {', '.join(_models.SUITE)}")
        bench_model(name, args)


if __name__ == "__main__":
    main()
