"""Benchmark: the GPU expert's groups against its register tiles, on ResNet-50's convolutions.

Run: python3 bench/bench_gpu_expert_groups.py [--target "opencl -device=nvidia"] [--units 132,33,8]
                                             [--convs 3x3_256_14,3x3_512_7,...] [--tiny]

The GPU expert (docs/search.md, "The expert schedule") sizes a group and its register tiles so that a stage
makes at least two groups on each compute unit: on a convolution with few outputs (ResNet-50's at 14 x 14 and
7 x 7) that leaves each work item one or two outputs. This script plans each convolution's expert as if the
device had --units compute units (HardwareParams(num_cores=N): fewer groups asked for, so larger register
tiles), times each plan on the target's device (autosched.measure), and prints microseconds per run beside
PyTorch's convolution on the same GPU where PyTorch has CUDA (TF32 off; the faster of a CUDA graph replay and
eager launches, bench_opencl_gpu.torch_seconds). The default units are the device's, a quarter and a
sixteenth of it. --tiny: one small convolution, a check that the script works (e.g. on PoCL). Not a test:
figures vary with the device and its clocks.
"""
import argparse
import os
import platform

import _env  # bench/, the script's folder, is on sys.path

_env.set_openblas_coretype()  # before numpy loads OpenBLAS

import autosched as ans  # noqa: E402
from autosched import ops, search, te  # noqa: E402
from autosched.measure.local import LocalRunner, measure  # noqa: E402

import numpy as np  # noqa: E402
from bench_opencl_gpu import torch_seconds  # noqa: E402

# name: (input channels, output channels, input size, kernel size, stride); NCHW, batch 1, padding k // 2.
CONVS = {
    "3x3_256_14": (256, 256, 14, 3, 1),
    "3x3_512_7": (512, 512, 7, 3, 1),
    "1x1_1024_2048_s2": (1024, 2048, 14, 1, 2),
    "1x1_1024_256_14": (1024, 256, 14, 1, 1),
    "1x1_256_1024_14": (256, 1024, 14, 1, 1),
    "3x3_128_28": (128, 128, 28, 3, 1),
    "3x3_64_56": (64, 64, 56, 3, 1),
}
TINY = {"3x3_8_7": (8, 8, 7, 3, 1)}


def conv_tensors(cin, cout, size, k, stride):
    data = te.placeholder((1, cin, size, size), name="data")
    weight = te.placeholder((cout, cin, k, k), name="weight")
    return [data, weight, ops.conv2d_nchw(data, weight, stride=stride, padding=k // 2)]


def conv_flop(cin, cout, size, k, stride):
    out = (size + 2 * (k // 2) - k) // stride + 1
    return 2.0 * cin * cout * k * k * out * out


def torch_conv_us(torch, cin, cout, size, k, stride):
    x = torch.randn(1, cin, size, size, device="cuda")
    w = torch.randn(cout, cin, k, k, device="cuda")
    fn = lambda torch, a, b: torch.nn.functional.conv2d(a, b, stride=stride, padding=k // 2)  # noqa: E731
    return 1e6 * torch_seconds(torch, fn, (x, w))


def plan_and_time(target, shape, units, runner):
    """(microseconds per run or None, the plan's first line or why there is none) of the expert planned for
    `units` compute units; timed as a task of the target's own parameters."""
    dag = ans.ComputeDAG(conv_tensors(*shape))
    hw = ans.HardwareParams(num_cores=units, target=target)
    state, reason, note = search.expert_schedule_info(
        ans.SearchTask(compute_dag=dag, target=target, hardware_params=hw))
    if state is None:
        return None, f"no expert: {reason}"
    task = ans.SearchTask(compute_dag=dag, target=target)
    result = measure(task, [state], runner=runner)[0]
    plan = note.splitlines()[0].split(": ", 1)[-1]
    if result.error != "none":
        return None, f"{result.error}: {result.error_msg[:120]}"
    return 1e6 * float(np.mean(result.costs)), plan


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="opencl -device=nvidia")
    parser.add_argument("--units", default="", help="compute units to plan for (default: the device's, /4, /16)")
    parser.add_argument("--convs", default="", help=f"comma-separated, of: {', '.join(CONVS)}")
    parser.add_argument("--tiny", action="store_true", help="one small convolution: a check that it works")
    args = parser.parse_args()
    if not ans.opencl.available():
        raise SystemExit("no OpenCL device (or autosched built without OpenCL): see docs/opencl.md")
    table = TINY if args.tiny else CONVS
    names = [n for n in args.convs.split(",") if n] or list(table)
    unknown = [n for n in names if n not in table]
    if unknown:
        raise SystemExit(f"unknown convolution {unknown[0]!r}; known: {', '.join(table)}")
    device_units = ans.HardwareParams(target=args.target).num_cores
    units = ([int(u) for u in args.units.split(",") if u] if args.units
             else sorted({device_units, max(1, device_units // 4), max(1, device_units // 16)}, reverse=True))
    print(f"host: {platform.processor() or platform.machine()}, {os.cpu_count()} hardware threads")
    print(f"target: {args.target} ({device_units} compute units); expert planned for: "
          + ", ".join(str(u) for u in units))
    torch = _env.torch_cuda()
    print("peer: " + (f"PyTorch {torch.__version__} on {torch.cuda.get_device_name()} (TF32 off)"
                      if torch else "none (no PyTorch with CUDA)"))
    runner = LocalRunner(number=20, repeat=3)
    for name in names:
        shape = table[name]
        peer = f"PyTorch {torch_conv_us(torch, *shape):.1f} us" if torch else "PyTorch -"
        print(f"{name} ({conv_flop(*shape) / 1e6:.0f} MFLOP), {peer}")
        for u in units:
            us, plan = plan_and_time(args.target, shape, u, runner)
            figure = f"{us:9.1f} us {conv_flop(*shape) / us / 1e6:6.2f} TFLOP/s" if us else f"{'-':>9s}"
            print(f"  planned for {u:4d} units: {figure}  {plan}", flush=True)
    print(_env.load_note())


if __name__ == "__main__":
    main()
