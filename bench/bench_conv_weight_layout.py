"""Benchmark: the layout of a convolution's constant weight in the tuned kernel, on ResNet-18 conv shapes.

Run: python3 bench/bench_conv_weight_layout.py [--trials 64] [--shapes 256x14x3x1,128x28x3x1]

For each shape (channels x size x kernel x stride, batch 1, same channels in and out, padding kernel // 2)
and each layout, tunes the conv2d + bias + relu (rounds of 16, XGBModel, the task scheduler's search
params) for --trials measurements and prints the best latency:
  OIHW     the weight as the graph holds it (what extract_tasks gives today);
  OIHW8o   the weight re-laid out ahead of the kernel as [O/8, I, kh, kw, 8] (a kernel input);
  spatial  conv2d_nchw_spatial_pack's computation with its kernel_vec [O/8, I, kh, kw, 8] as a kernel input
           (the weight re-laid out ahead; the conv vectorised over 8 output channels, output unpacked).
Not a test: figures vary with the machine's load.
"""
import argparse

import _env  # bench/, the script's folder, is on sys.path

_env.set_openblas_coretype()

import autosched as ans  # noqa: E402
from autosched import te  # noqa: E402
from autosched.ops.injective import pad  # noqa: E402
from autosched.search import SketchPolicy, make_cost_model  # noqa: E402
from autosched.tune.share import round_search_params  # noqa: E402

VC = 8


def _bias_relu(conv, bias, c):
    return te.compute(conv.shape, lambda n, o, y, x: te.max(conv[n, o, y, x] + bias[o], te.const(0.0, "float32")),
                      name="relu")


def direct(c, size, k, stride, blocked):
    data = te.placeholder((1, c, size, size), name="data")
    shape = (c // VC, c, k, k, VC) if blocked else (c, c, k, k)
    weight = te.placeholder(shape, name="weight")
    bias = te.placeholder((c,), name="bias")
    p = k // 2
    padded = pad(data, (0, 0, p, p), (0, 0, p, p)) if p else data
    out = (size + 2 * p - k) // stride + 1

    def fconv(n, o, y, x):
        rc, ry, rx = (te.reduce_axis((0, e), name=nm) for e, nm in ((c, "rc"), (k, "ry"), (k, "rx")))
        w = weight[o // VC, rc, ry, rx, o % VC] if blocked else weight[o, rc, ry, rx]
        return te.sum(padded[n, rc, y * stride + ry, x * stride + rx] * w, axis=[rc, ry, rx])

    conv = te.compute((1, c, out, out), fconv, name="conv")
    return [data, weight, bias, _bias_relu(conv, bias, c)]


def spatial(c, size, k, stride, tile=(2, 2)):
    vh, vw = tile
    data = te.placeholder((1, c, size, size), name="data")
    kvec = te.placeholder((c // VC, c, k, k, VC), name="kernel_vec")
    bias = te.placeholder((c,), name="bias")
    p = k // 2
    out = (size + 2 * p - k) // stride + 1
    th, tw = -(-out // vh), -(-out // vw)
    wh, ww = (vh - 1) * stride + k, (vw - 1) * stride + k
    extra = max(0, (th - 1) * vh * stride + wh - (size + 2 * p))
    padded = pad(data, (0, 0, p, p), (0, 0, p + extra, p + extra))
    dvec = te.compute((1, th, tw, c, wh, ww),
                      lambda b, h, w, ci, y, x: padded[b, ci, h * (vh * stride) + y, w * (vw * stride) + x],
                      name="data_vec")

    def fconv(b, co, h, w, y, x, v):
        ci, ky, kx = (te.reduce_axis((0, e), name=nm) for e, nm in ((c, "ci"), (k, "ky"), (k, "kx")))
        return te.sum(dvec[b, h, w, ci, y * stride + ky, x * stride + kx] * kvec[co, ci, ky, kx, v],
                      axis=[ci, ky, kx])

    conv = te.compute((1, c // VC, th, tw, vh, vw, VC), fconv, name="conv")
    unpack = te.compute((1, c, out, out),
                        lambda b, o, y, x: conv[b, o // VC, y // vh, x // vw, y % vh, x % vw, o % VC],
                        name="unpack")
    return [data, kvec, bias, _bias_relu(unpack, bias, c)]


def tune(tensors, trials):
    task = ans.SearchTask(compute_dag=ans.ComputeDAG(tensors), target="llvm")
    policy = SketchPolicy(task, make_cost_model("auto"), round_search_params(16), seed=0)
    opts = ans.TuningOptions(num_measure_trials=trials, num_measures_per_round=16, verbose=0)
    return ans.tune.tune(task, opts, search_policy=policy)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=64)
    parser.add_argument("--shapes", default="256x14x3x1,128x28x3x1")
    args = parser.parse_args()
    print(f"{'shape':>14}{'layout':>9}{'trials':>8}{'best (ms)':>11}{'GFLOP/s':>9}")
    for shape in args.shapes.split(","):
        c, size, k, stride = (int(v) for v in shape.split("x"))
        for name, tensors in (("OIHW", direct(c, size, k, stride, False)),
                              ("OIHW8o", direct(c, size, k, stride, True)),
                              ("spatial", spatial(c, size, k, stride))):
            r = tune(tensors, args.trials)
            flop = 2.0 * c * c * k * k * ((size + 2 * (k // 2) - k) // stride + 1) ** 2
            print(f"{shape:>14}{name:>9}{r.trials:>8}{r.best_cost * 1e3:11.3f}{flop / r.best_cost / 1e9:9.1f}",
                  flush=True)


if __name__ == "__main__":
    main()
