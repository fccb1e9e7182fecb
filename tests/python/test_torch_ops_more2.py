"""from_torch of the ops real models still lacked: pad (constant with crops, reflect, replicate), interpolate
(nearest, bilinear with align_corners both ways, by size and by scale factor), type_as, sin / cos / floor /
ceil / round / sign / reciprocal, softplus / elu / selu / leaky_relu / prelu, log_softmax, amin / prod / argmax
/ argmin, einsum, transposed convolutions (2-D and 1-D) and 1-D pooling. Each module is imported whole, built
untuned with graph.build and compared with torch itself on awkward shapes (size-1 and prime dims, negative
dims). The graph's numpy reference and its PyTorch evaluation (TorchGraph, the ops' `torch` functions) are
checked on the same graphs."""
import warnings

import numpy as np
import pytest

from autosched import frontends
from autosched.frontends import UnsupportedOperatorWarning
from autosched.graph import build
from autosched.graph.torch_runner import TorchGraph

torch = pytest.importorskip("torch")
F = torch.nn.functional


def _check(module, *args, tol=1e-5, ops=()):
    """from_torch imports every node, the untuned build equals torch; the graph holds ``ops``."""
    with torch.no_grad():
        want = module(*args)
    want = [w.numpy() for w in (want if isinstance(want, tuple) else (want,))]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnsupportedOperatorWarning)
        graph = frontends.from_torch(module, args)
    got = build(graph, "llvm", verbose=False)(*[a.numpy() for a in args])
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        scale = max(float(np.abs(w).max()), 1.0)
        assert np.abs(g.astype(np.float64) - w).max() <= tol * scale
    assert set(ops) <= {n.op for n in graph.nodes}, [n.op for n in graph.nodes]
    evaluated = graph.evaluate(*[a.numpy() for a in args])
    evaluated = evaluated if isinstance(evaluated, list) else [evaluated]
    for e, t, w in zip(evaluated, TorchGraph(graph)(*[a.numpy() for a in args]), want):
        scale = max(float(np.abs(w).max()), 1.0)
        assert np.abs(e.astype(np.float64) - w).max() <= tol * scale
        assert np.abs(t.astype(np.float64) - w).max() <= tol * scale
    return graph


class _Lambda(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def _x(*shape, scale=1.0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(3)) * scale


def test_pad_modes():
    x = _x(2, 3, 5, 7)
    _check(_Lambda(lambda x: (F.pad(x, (1, -2, 0, 3), value=0.5), F.pad(x, (2, 1, 3, 0), mode="reflect"),
                              F.pad(x, (1, 2, 1, 1), mode="replicate"), F.pad(x, (1, 1, 1, 1, 1, 0)))), x,
           ops=["pad"])


@pytest.mark.parametrize("kwargs", [dict(size=(9, 4), mode="nearest"), dict(scale_factor=2, mode="nearest"),
                                    dict(size=(3, 11), mode="bilinear", align_corners=False),
                                    dict(scale_factor=(1.5, 2), mode="bilinear", align_corners=False),
                                    dict(size=(8, 13), mode="bilinear", align_corners=True),
                                    dict(size=(1, 5), mode="bilinear", align_corners=True)])
def test_interpolate(kwargs):
    _check(_Lambda(lambda x: F.interpolate(x, **kwargs)), _x(1, 2, 5, 7), ops=["resize"])


def test_elementwise_ops_and_type_as():
    x = _x(3, 1, 5, scale=4.0)
    x[0, 0] = torch.tensor([0.5, 1.5, -2.5, -0.5, 2.0])  # round's halves go to the even integer
    slope = torch.nn.PReLU(5)  # one slope per channel (axis 1)
    torch.nn.init.uniform_(slope.weight, -1, 1, generator=torch.Generator().manual_seed(1))

    def fn(x, idx):
        return (torch.sin(x * 300), torch.cos(x), torch.floor(x), torch.ceil(x), torch.round(x), torch.sign(x),
                torch.reciprocal(x), F.softplus(x, beta=2.0), F.elu(x, alpha=0.5), F.selu(x),
                F.leaky_relu(x, 0.2), slope(x.reshape(3, 5, 1)), idx.type_as(x) * x)
    _check(_Lambda(fn), x, torch.arange(5), ops=["sin", "cos", "round", "softplus", "elu", "prelu", "cast"])


def test_log_softmax_and_reductions():
    x = torch.randint(-3, 4, (2, 7, 1, 5), generator=torch.Generator().manual_seed(5)).float()
    _check(_Lambda(lambda x: (F.log_softmax(x, dim=-3), torch.amin(x, dim=(1, -1)), torch.prod(x, 1, keepdim=True),
                              torch.argmax(x, dim=-1), torch.argmin(x, dim=1, keepdim=True), torch.argmax(x))), x,
           ops=["log_softmax", "reduce_min", "reduce_prod", "argmax", "argmin"])


@pytest.mark.parametrize("equation, shapes", [("bij,bjk->bik", [(2, 3, 5), (2, 5, 7)]),
                                              ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)]),
                                              ("ij->ji", [(3, 5)])])
def test_einsum(equation, shapes):
    args = [_x(*s) for s in shapes]
    _check(_Lambda(lambda *t: torch.einsum(equation, *t)), *args, tol=1e-4)


@pytest.mark.parametrize("layer, shape", [
    (torch.nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1), (1, 3, 5, 6)),
    (torch.nn.ConvTranspose2d(4, 6, (2, 3), stride=(1, 2), padding=(0, 2), dilation=(2, 1), groups=2), (2, 4, 3, 5)),
    (torch.nn.ConvTranspose1d(3, 2, 4, stride=3, padding=1), (2, 3, 7)),
])
def test_transposed_convolution(layer, shape):
    _check(layer.eval(), _x(*shape), tol=1e-4, ops=["conv2d"])


def test_pooling_in_1d():
    _check(_Lambda(lambda x: (F.max_pool1d(x, 3, 2, padding=1), F.avg_pool1d(x, 2, ceil_mode=True))), _x(2, 3, 11),
           ops=["max_pool2d", "avg_pool2d"])


def test_roll():
    _check(_Lambda(lambda x: (torch.roll(x, (2, -1), (1, -1)), torch.roll(x, 3))), _x(2, 5, 7),
           ops=["strided_slice", "concat"])


class _MaskWrittenInPlace(torch.nn.Module):
    """A mask written into slices of a fresh tensor, as torchvision's Swin builds its attention mask."""

    def forward(self, x):
        mask = x.new_zeros((5, 7))
        count = 0
        for rows in (slice(0, 2), slice(2, 5)):
            for cols in (slice(0, 3), slice(3, 7)):
                mask[rows, cols] = count
                count += 1
        return x + mask


def test_in_place_writes_into_a_constant_fold():
    _check(_MaskWrittenInPlace(), torch.randn(2, 5, 7))
