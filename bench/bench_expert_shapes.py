"""Benchmark: the untuned CPU expert schedule on convolutions of every layout and on batched, transposed and
small-M matmuls, against PyTorch and numpy (OpenBLAS) in the same process.

Run: python3 bench/bench_expert_shapes.py [--shapes conv,matmul,smallm,odd] [--only NAME,...] [--tune]
     [--trials 64] [--no-torch] [--tiny]

Each shape is a CPU task (float32, batch 1) built the way the graph or a user builds it: NCHWc convolutions as
layout="auto" gives them (1x1, 3x3, 7x7 stride 2, the stride-2 1x1 downsampling, grouped), plain NCHW and NHWC
convolutions tuned alone, the batch matmuls of BERT and GPT-2's attention ([12, 128, 64] x [12, 64, 128] with
the key transposed, then [12, 128, 128] x [12, 128, 64]), matmuls with a transposed operand (weights stored
[N, K] as PyTorch's Linear), small M (1 to 16 rows: decoder steps, the classifier head; weights [N, K] and, as
GPT-2's Conv1D stores them, [K, N]), and shapes nothing was
tuned for (primes, odd channel counts), reported beside the named ones. For each: the expert schedule
(search.expert_schedule) built, checked against numpy and timed; with --tune, the best schedule after --trials
measurements (seeded with the expert); PyTorch on the CPU (one thread per core; the NCHW convolution of the
same channels for an NCHWc one) and numpy/OpenBLAS for the matmuls. The table gives milliseconds, GFLOP/s and
each peer's time divided by the expert's (above 1: the expert is faster). Not a test: timings vary with the
machine and its load (the header prints it). --tiny shrinks every shape (a check that the script works).
"""
import argparse
import os
import sys
import tempfile

import _env  # bench/, the script's folder, is on sys.path

_env.set_openblas_coretype()  # before numpy loads OpenBLAS

import numpy as np  # noqa: E402

import autosched as ans  # noqa: E402
from autosched import ops, search, te  # noqa: E402
from autosched.ops import nchwc  # noqa: E402


class Shape:
    """A task's tensors (inputs first, output last), its FLOPs, a numpy reference of the output from the inputs,
    and the peers: {name: fn(inputs) -> a callable that computes it}."""

    def __init__(self, name, group, tensors, flop, reference, peers):
        self.name, self.group, self.tensors, self.flop = name, group, tensors, flop
        self.reference, self.peers = reference, peers


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def _conv_reference(data, weight, stride, pad, groups=1):
    """NCHW convolution in numpy (im2col per group), float64 accumulation."""
    n, c, h, w = data.shape
    o, cg, kh, kw = weight.shape
    x = np.pad(data.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (w + 2 * pad - kw) // stride + 1
    cols = np.empty((n, c, kh, kw, oh, ow))
    for i in range(kh):
        for j in range(kw):
            cols[:, :, i, j] = x[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride]
    og = o // groups
    out = np.empty((n, o, oh, ow))
    for g in range(groups):
        patch = cols[:, g * cg:(g + 1) * cg].reshape(n, cg * kh * kw, oh * ow)
        out[:, g * og:(g + 1) * og] = np.einsum("pk,nkq->npq", weight[g * og:(g + 1) * og].reshape(og, -1),
                                                patch).reshape(n, og, oh, ow)
    return out


def _torch_conv(stride, pad, groups, channels_last=False):
    def make(data, weight):
        torch = _torch()
        d, w = torch.from_numpy(data), torch.from_numpy(weight)
        if channels_last:
            d = d.contiguous(memory_format=torch.channels_last)
        return lambda: torch.nn.functional.conv2d(d, w, stride=stride, padding=pad, groups=groups)
    return make


def conv_nchwc(name, cin, cout, hw, k, stride, groups=1, block=8):
    """An NCHWc convolution (data (1, C/x, H, W, x), weights (O/y, (C/groups)/x, KH, KW, x, y)); its peers run
    the same convolution in NCHW."""
    pad = k // 2
    data = te.placeholder((1, cin // block, hw, hw, block), name="data")
    kernel = te.placeholder((cout // block, cin // groups // block, k, k, block, block), name="kernel")
    out = nchwc.conv2d_nchwc(data, kernel, stride, pad, groups=groups)
    oh = (hw + 2 * pad - k) // stride + 1

    def to_nchw(d, w):
        nchw = d.transpose(0, 1, 4, 2, 3).reshape(1, cin, hw, hw)
        oihw = w.transpose(0, 5, 1, 4, 2, 3).reshape(cout, cin // groups, k, k)
        return nchw, oihw

    def reference(d, w):
        r = _conv_reference(*to_nchw(d, w), stride, pad, groups)
        return r.reshape(1, cout // block, block, oh, oh).transpose(0, 1, 3, 4, 2)

    peers = {"PyTorch": lambda d, w: _torch_conv(stride, pad, groups)(*to_nchw(d, w))}
    return Shape(name, "conv", [data, kernel, out], 2 * oh * oh * cout * cin // groups * k * k, reference, peers)


def conv_plain(name, layout, cin, cout, hw, k, stride):
    """conv2d_nchw (OIHW weights) or conv2d_nhwc (HWIO weights) tuned alone."""
    pad = k // 2
    oh = (hw + 2 * pad - k) // stride + 1
    if layout == "NCHW":
        data, kernel = te.placeholder((1, cin, hw, hw), name="data"), te.placeholder((cout, cin, k, k), name="kernel")
        out = ops.conv2d_nchw(data, kernel, stride, pad)
        to_nchw = (lambda d, w: (d, w))
        from_nchw = (lambda r: r)
    else:
        data, kernel = te.placeholder((1, hw, hw, cin), name="data"), te.placeholder((k, k, cin, cout), name="kernel")
        out = ops.conv2d_nhwc(data, kernel, stride, pad)
        to_nchw = (lambda d, w: (d.transpose(0, 3, 1, 2), w.transpose(3, 2, 0, 1)))
        from_nchw = (lambda r: r.transpose(0, 2, 3, 1))

    def reference(d, w):
        return from_nchw(_conv_reference(*to_nchw(d, w), stride, pad))

    def torch_peer(d, w):
        nd, nw = to_nchw(d, w)
        return _torch_conv(stride, pad, 1, channels_last=layout == "NHWC")(np.ascontiguousarray(nd),
                                                                            np.ascontiguousarray(nw))

    return Shape(name, "conv", [data, kernel, out], 2 * oh * oh * cout * cin * k * k, reference,
                 {"PyTorch": torch_peer})


def matmul(name, group, batch, m, n, k, transpose_a=False, transpose_b=False):
    """[B,] M x K times K x N with either operand stored transposed (ops.matmul / ops.batch_matmul)."""
    lead = (batch,) if batch else ()
    a = te.placeholder(lead + ((k, m) if transpose_a else (m, k)), name="A")
    b = te.placeholder(lead + ((n, k) if transpose_b else (k, n)), name="B")
    if batch:
        out = ops.batch_matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b)
    else:
        out = ops.matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b)

    def operands(x, y):
        return (np.swapaxes(x, -1, -2) if transpose_a else x), (np.swapaxes(y, -1, -2) if transpose_b else y)

    def reference(x, y):
        xa, yb = operands(x, y)
        return np.matmul(xa.astype(np.float64), yb.astype(np.float64))

    def numpy_peer(x, y):
        xa, yb = operands(x, y)  # views: OpenBLAS reads the transposed operand in place
        result = np.empty(out.shape, "float32")
        return lambda: np.matmul(xa, yb, out=result)

    def torch_peer(x, y):
        torch = _torch()
        xa, yb = (torch.from_numpy(v) for v in (x, y))
        xa, yb = (xa.transpose(-1, -2) if transpose_a else xa), (yb.transpose(-1, -2) if transpose_b else yb)
        result = torch.empty(tuple(int(s) for s in out.shape))
        return lambda: torch.matmul(xa, yb, out=result)

    return Shape(name, group, [a, b, out], 2 * max(batch, 1) * m * n * k, reference,
                 {"numpy": numpy_peer, "PyTorch": torch_peer})


def shapes(tiny):
    """Every benchmark shape; --tiny divides the sizes (keeping blocks whole)."""
    s = (lambda v, lo=8: max(lo, v // 8)) if tiny else (lambda v, lo=8: v)
    out = [
        conv_nchwc("nchwc 1x1 256->64 56x56", s(256), s(64), s(56), 1, 1),
        conv_nchwc("nchwc 3x3 64->64 56x56", s(64), s(64), s(56), 3, 1),
        conv_nchwc("nchwc 3x3 256->256 14x14", s(256), s(256), s(14), 3, 1),
        conv_nchwc("nchwc 7x7/2 8->64 224x224", 8, s(64), s(224, 16), 7, 2),
        conv_nchwc("nchwc 1x1/2 256->512 56x56", s(256), s(512), s(56), 1, 2),
        conv_nchwc("nchwc 3x3 g4 128->128 28x28", s(128, 32), s(128, 32), s(28), 3, 1, groups=4),
        conv_plain("nchw 3x3 96->160 20x20", "NCHW", s(96), s(160), s(20), 3, 1),
        conv_plain("nhwc 3x3 96->160 20x20", "NHWC", s(96), s(160), s(20), 3, 1),
        matmul("dense 128x3072x768 (x W^T)", "matmul", 0, s(128), s(3072), s(768), transpose_b=True),
        matmul("matmul 128x3072x768", "matmul", 0, s(128), s(3072), s(768)),
        matmul("matmul A^T 128x768x768", "matmul", 0, s(128), s(768), s(768), transpose_a=True),
        matmul("bmm 12x128x128x64 (Q K^T)", "matmul", 12, s(128), s(128), s(64), transpose_b=True),
        matmul("bmm 12x128x64x128 (P V)", "matmul", 12, s(128), s(64), s(128)),
        matmul("bmm 12x128x128x64 NN", "matmul", 12, s(128), s(128), s(64)),
    ]
    for m in (1, 2, 4, 8, 16):
        for n, k in ((768, 768), (3072, 768), (768, 3072)):
            out.append(matmul(f"small M {m}x{n}x{k} (x W^T)", "smallm", 0, m, s(n), s(k), transpose_b=True))
    for m in (1, 4, 16):  # GPT-2's Conv1D stores its weights [K, N]
        out.append(matmul(f"small M {m}x2304x768 (x W)", "smallm", 0, m, s(2304), s(768)))
    out += [
        conv_nchwc("odd nchwc 3x3 24->40 17x17", 24, 40, s(17, 5), 3, 1),
        conv_nchwc("odd nchwc 1x1/2 40->72 23x23", 40, 72, s(23, 5), 1, 2),
        conv_plain("odd nchw 3x3 37->53 19x19", "NCHW", 37, 53, s(19, 5), 3, 1),
        conv_plain("odd nhwc 5x5 13->29 31x31", "NHWC", 13, 29, s(31, 7), 5, 1),
        matmul("odd matmul 127x131x257", "odd", 0, s(127, 7), s(131, 7), s(257, 7)),
        # The same work with the register tile's edges one at a time: what the guarded edge tiles cost.
        matmul("odd matmul 128x144x257 (tiles divide)", "odd", 0, s(128, 8), s(144, 8), s(257, 7)),
        matmul("odd matmul 127x144x257 (row edge)", "odd", 0, s(127, 7), s(144, 8), s(257, 7)),
        matmul("odd matmul 128x131x257 (column edge)", "odd", 0, s(128, 8), s(131, 7), s(257, 7)),
        matmul("odd bmm 7x61x53x29 (x^T)", "odd", 7, 61, 53, 29, transpose_b=True),
        matmul("odd small M 3x1000x768 (x W^T)", "odd", 0, 3, s(1000), s(768), transpose_b=True),
    ]
    return out


def relative_error(got, want):
    return float(np.abs(got - want).max() / max(1e-30, np.abs(want).max()))


def checked_seconds(shape, module, inputs, want):
    """(seconds, note) of a built module checked against the reference and timed; (None, why) when wrong."""
    result = np.zeros([int(d) for d in shape.tensors[-1].shape], "float32")
    module(*inputs, result)
    err = relative_error(result, want)
    if err > 1e-3:
        return None, f"wrong result (max rel. error {err:.1e})"
    return min(module.time_evaluator(number=10, repeat=5, min_repeat_ms=100)(*inputs, result)), ""


def build_and_time(shape, task, state, inputs, want):
    """(seconds, note) of a state built, checked against the reference and timed; (None, why) on failure."""
    return checked_seconds(shape, ans.build(task, state), inputs, want)


def tuned_seconds(shape, task, inputs, want, trials, log_dir):
    log = os.path.join(log_dir, "".join(c if c.isalnum() else "_" for c in shape.name) + ".json")
    options = ans.TuningOptions(num_measure_trials=trials, num_measures_per_round=min(trials, 32),
                                measure_callbacks=[ans.RecordToFile(log)], verbose=0)
    task.tune(options)
    return checked_seconds(shape, task.build_best(log), inputs, want)


def run_shape(shape, args, log_dir):
    """[(implementation, seconds or None, note)] for one shape, the expert first."""
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal([int(d) for d in t.shape]).astype("float32") for t in shape.tensors[:-1]]
    want = shape.reference(*inputs)
    task = ans.SearchTask(compute_dag=ans.ComputeDAG(shape.tensors), target="llvm", desc=shape.name)
    state, reason, _ = search.expert_schedule_info(task)
    rows = [("expert",) + (build_and_time(shape, task, state, inputs, want) if state is not None
                           else (None, f"no expert schedule: {reason}"))]
    if args.tune:
        rows.append((f"tuned {args.trials}",) + tuned_seconds(shape, task, inputs, want, args.trials, log_dir))
    for name, make in shape.peers.items():
        if name == "PyTorch" and (args.no_torch or _torch() is None):
            continue
        rows.append((name, _env.best_mean(make(*inputs)), ""))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="conv,matmul,smallm,odd", help="groups: conv, matmul, smallm, odd")
    parser.add_argument("--only", default="", help="comma-separated substrings of the shape names to run")
    parser.add_argument("--tune", action="store_true", help="also tune each shape for --trials measurements")
    parser.add_argument("--trials", type=int, default=64)
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--tiny", action="store_true", help="tiny shapes (a check that the script works)")
    args = parser.parse_args()
    groups = set(args.shapes.split(","))
    unknown = groups - {"conv", "matmul", "smallm", "odd"}
    if unknown:
        parser.error(f"unknown --shapes {sorted(unknown)}; choose from conv, matmul, smallm, odd")
    cores = os.cpu_count() or 1
    torch = None if args.no_torch else _torch()
    if torch is not None:
        torch.set_num_threads(cores)
    print(f"command: {' '.join(sys.argv)}")
    print(f"CPU: {_env.cpu_text()}; target {ans.Target('llvm')}; "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}; {_env.load_text()}")
    print(f"peers: numpy {np.__version__} (OpenBLAS, its own threads)"
          + ("" if torch is None else f", PyTorch {torch.__version__} ({cores} threads)"))
    picked = [s for s in shapes(args.tiny) if s.group in groups
              and (not args.only or any(o in s.name for o in args.only.split(",")))]
    print(f"\n{'shape':38}{'impl':>12}{'ms':>10}{'GFLOP/s':>9}{'peer/expert':>12}  note")
    with tempfile.TemporaryDirectory() as log_dir:
        for shape in picked:
            rows = run_shape(shape, args, log_dir)
            expert = rows[0][1]
            for i, (impl, seconds, note) in enumerate(rows):
                label = shape.name if i == 0 else ""
                if seconds is None:
                    print(f"{label:38}{impl:>12}{'-':>10}{'-':>9}{'-':>12}  {note}")
                    continue
                ratio = f"{seconds / expert:.2f}" if expert and i > 0 else ""
                print(f"{label:38}{impl:>12}{seconds * 1e3:10.3f}{shape.flop / seconds / 1e9:9.1f}{ratio:>12}  {note}",
                      flush=True)
    print(f"\n{_env.load_text()} at the end")


if __name__ == "__main__":
    main()
