"""from_torch of the ATen ops transformers and mobile nets need (comparisons, logic, where, masked_fill, index,
gather, expand, split / chunk / unbind / unflatten, conv1d, group_norm, cumsum, hardsigmoid / hardswish / silu /
mish / gelu, arange, new_ones, scaled_dot_product_attention with masks): each small module is exported,
imported, compiled untuned with graph.build and compared with torch itself, on awkward shapes."""
import pytest

from autosched import frontends
from autosched.frontends import UnsupportedOperatorWarning
from import_checks import check_torch_import

torch = pytest.importorskip("torch")
F = torch.nn.functional


class Fn(torch.nn.Module):
    def __init__(self, fn, **params):
        super().__init__()
        self.fn = fn
        for name, value in params.items():
            setattr(self, name, torch.nn.Parameter(value, requires_grad=False))

    def forward(self, *xs):
        return self.fn(self, *xs)


_check = check_torch_import


def _small_ints(*shape):
    return torch.randint(-2, 3, shape).float()


def test_comparisons_with_tensors_and_scalars():
    x, y = _small_ints(3, 1, 5), _small_ints(4, 1)
    _check(Fn(lambda m, a, b: (a == b, a != b, a > b, a >= 0.5, a < b, b <= 1)), x, y)


def test_int_against_float_scalar_compares_as_float():
    x = torch.arange(-3, 4, dtype=torch.int32).reshape(1, 7)
    _check(Fn(lambda m, a: (a > 0.5, a == 1)), x)


def test_logic_and_where_on_masks():
    x, y = torch.randn(3, 1, 5), torch.randn(4, 1)
    _check(Fn(lambda m, a, b: torch.where((a > 0) & ~(b > 0.5) | (a < -1) ^ (b < 0), a, b)), x, y)
    _check(Fn(lambda m, a: torch.where(a > 0, a, 0.0) + torch.logical_not(a > 1).float()), x)


def test_masked_fill_isnan_isinf():
    x = torch.randn(2, 3, 7)
    x.view(-1)[::4] = float("nan")
    x.view(-1)[1::5] = float("inf")
    _check(Fn(lambda m, a: (a.masked_fill(torch.isnan(a) | torch.isinf(a), -1.0), torch.isnan(a))), x)


def test_index_gather_and_expand():
    x = torch.randn(3, 7, 5)
    idx = torch.tensor([[-1, 0, 2], [6, 1, 1]])
    g = torch.randint(0, 7, (3, 2, 5))
    _check(Fn(lambda m, a, i, j: (a[:, i], torch.gather(a, 1, j), a[:, :1].expand(-1, 4, 5),
                                  a[0, :, :1].expand(2, 7, 3))), x, idx, g)


@pytest.mark.parametrize("fn", [lambda m, a: a.chunk(3, dim=-1), lambda m, a: a.chunk(4, dim=1),
                                lambda m, a: torch.split(a, 2, dim=1), lambda m, a: torch.split(a, [1, 4, 2], 1),
                                lambda m, a: a.unbind(0), lambda m, a: a.unflatten(1, (7, 1)),
                                lambda m, a: [p * 2 for p in a.split(3, dim=-1)]])
def test_pieces(fn):
    _check(Fn(fn), torch.randn(2, 7))


@pytest.mark.parametrize("kwargs", [dict(padding=1, stride=2), dict(padding="same", dilation=2),
                                    dict(groups=3)])
def test_conv1d(kwargs):
    weight, bias = torch.randn(6, 3 // kwargs.get("groups", 1), 3), torch.randn(6)
    _check(Fn(lambda m, a: F.conv1d(a, m.w, m.b, **kwargs), w=weight, b=bias), torch.randn(2, 3, 13), tol=1e-4)
    conv = torch.nn.Conv1d(3, 4, 5, padding=2)
    _check(conv, torch.randn(1, 3, 11), tol=1e-4)


def test_group_norm_and_instance_norm():
    gn = torch.nn.GroupNorm(3, 6)
    with torch.no_grad():
        gn.weight.normal_()
        gn.bias.normal_()
    _check(gn, torch.randn(2, 6, 5, 3), tol=1e-4)
    _check(Fn(lambda m, a: F.group_norm(a, 5, eps=1e-3)), torch.randn(1, 5, 7), tol=1e-4)
    _check(torch.nn.InstanceNorm2d(4, affine=True), torch.randn(2, 4, 3, 5), tol=1e-4)


def test_cumsum_and_arange():
    x = torch.randn(5, 3)
    _check(Fn(lambda m, a: (torch.cumsum(a, 0), a.cumsum(-1), a + torch.arange(3, dtype=torch.float32),
                            a * torch.arange(5).float().unsqueeze(1))), x)
    _check(Fn(lambda m, a: torch.cumsum(a, 1)), torch.randint(0, 5, (2, 7), dtype=torch.int32))


def test_activations_in_place_and_not():
    def fn(m, a):
        b = F.hardswish(a.clone(), inplace=True)
        c = F.silu(a.clone(), inplace=True)
        return b, c, F.hardsigmoid(a), F.mish(a), F.gelu(a, approximate="tanh"), F.gelu(a)
    _check(Fn(fn), torch.randn(3, 11) * 4, tol=2e-5)


def test_new_ones_and_constants_of_a_shape():
    def fn(m, a):
        ones = a.new_ones((3, 5))
        return a + ones + torch.zeros_like(a) + torch.full_like(a, 2.0), a.new_zeros(5) - 1
    graph = _check(Fn(fn), torch.randn(3, 5))
    assert {n.op for n in graph.nodes} <= {"add", "subtract"}


@pytest.mark.parametrize("mask", ["none", "bool", "float", "causal"])
def test_scaled_dot_product_attention(mask):
    q, k, v = torch.randn(2, 3, 5, 8), torch.randn(2, 3, 7, 8), torch.randn(2, 3, 7, 4)
    if mask == "causal":
        q = torch.randn(2, 3, 7, 8)
    attn = {"none": None, "bool": torch.rand(5, 7) > 0.3, "float": torch.randn(2, 1, 5, 7), "causal": None}[mask]
    if attn is not None and attn.dtype == torch.bool:
        attn[:, 0] = True  # no row without a key to attend to

    def fn(m, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn, is_causal=mask == "causal")
    _check(Fn(fn), q, k, v, tol=1e-5)


def test_what_stays_unsupported_is_named():
    with pytest.warns(UnsupportedOperatorWarning, match="2 index tensors"):
        frontends.from_torch(Fn(lambda m, a, i: a[i, i]), (torch.randn(4, 4), torch.tensor([0, 1])))
