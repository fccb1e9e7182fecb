"""exp of float32 on CPU is a polynomial the code generator emits inline (so that a vectorized loop such as a
softmax's stays vectorized instead of calling libm lane by lane); float64 keeps libm's exp. Both are checked
against float64 exp on a dense grid, the overflow and underflow edges and the special values, scalar and
vectorized, and sigmoid (built on exp) with them."""
import numpy as np
import pytest

from autosched import te

from schedule_helpers import unary_module

N = 1 << 14


def _inputs(dtype):
    dense = np.linspace(-110.0, 95.0, N - 32)
    special = [0.0, -0.0, 1e-30, -1e-30, 1e-7, -1e-7, 1.0, -1.0, 0.34657359, -0.34657359,
               88.72283, 88.7229, 89.0, 1e30, -87.33654, -87.4, -100.0, -103.9, -103.98, -104.0, -1e30,
               np.inf, -np.inf, np.nan, 0.5, -0.5, 20.0, -20.0, 709.0, -745.0, 2.5e-8, 60.0]
    return np.concatenate([dense, special]).astype(dtype)


def _ulps_float32(got, want):
    """Distance in float32 units in the last place (of the exact value's binade; subnormal spacing below)."""
    spacing = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - want) / spacing


# The host, and the AVX2 form (two power-of-two factors) on any host: AVX-512 hosts apply 2^n by scalef.
@pytest.mark.parametrize("target", ["llvm", "llvm -mcpu=haswell"])
@pytest.mark.parametrize("lanes", [1, 8, 16, 5])
def test_float32_exp_is_within_two_ulps(lanes, target):
    x = _inputs("float32")
    y = np.empty_like(x)
    unary_module(te.exp, N, "float32", lanes, target)(x, y)
    with np.errstate(over="ignore"):
        want = np.exp(x.astype(np.float64))
    assert np.array_equal(np.isnan(y), np.isnan(want))
    overflow = want > np.finfo(np.float32).max
    assert np.all(np.isposinf(y[overflow])), "results beyond float32's range are inf"
    underflow = want < np.finfo(np.float32).smallest_subnormal / 2
    assert np.all(y[underflow] == 0.0), "results below half the smallest subnormal are 0"
    ok = ~np.isnan(want) & ~overflow & ~underflow
    ulps = _ulps_float32(y[ok], want[ok])
    assert ulps.max() <= 2.0, f"{ulps.max():.2f} ulps at x={x[ok][ulps.argmax()]!r}"
    assert y[x == 0.0][0] == 1.0 and y[x == 1.0][0] == np.float32(np.e)


def test_float64_exp_keeps_libm():
    x = _inputs("float64")
    y = np.empty_like(x)
    unary_module(te.exp, N, "float64", 4)(x, y)
    with np.errstate(over="ignore"):
        np.testing.assert_allclose(y, np.exp(x), rtol=1e-15)


@pytest.mark.parametrize("lanes", [1, 8])
def test_float32_sigmoid_uses_the_inline_exp(lanes):
    x = _inputs("float32")
    y = np.empty_like(x)
    unary_module(te.sigmoid, N, "float32", lanes)(x, y)
    with np.errstate(over="ignore"):
        want = 1.0 / (1.0 + np.exp(-x.astype(np.float64)))
    assert np.array_equal(np.isnan(y), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_allclose(y[ok], want[ok], rtol=4e-7, atol=1e-38)


def test_vectorized_float32_exp_calls_no_libm():
    text = unary_module(te.exp, N, "float32", 8).get_source("asm")
    assert "expf" not in text, "a vectorized exp should not call libm lane by lane"


@pytest.mark.parametrize("lanes", [4, 8, 16])
def test_avx512_exp_scales_by_scalef(lanes):
    """With AVX-512 the power of two is applied by one scalef; an AVX2 CPU keeps the two exact factors."""
    def asm(target):
        return unary_module(te.exp, N, "float32", lanes, target).get_source("asm")

    assert "vscalefps" in asm("llvm -mcpu=skylake-avx512 -no-host-check")
    assert "vscalefps" not in asm("llvm -mcpu=haswell")
