"""tanh of float32 on CPU is emitted inline (an odd polynomial below |x| = 0.625, 1 - 2 / (exp(2|x|) + 1) with
x's sign above), so that a vectorized GELU in its tanh form stays vectorized instead of calling libm lane by
lane; float64 keeps libm's tanh. Checked against float64 tanh on a dense grid around the switch between the
two forms, tiny and huge inputs and the special values, scalar and vectorized."""
import numpy as np
import pytest

from autosched import te

from schedule_helpers import unary_module

N = 1 << 14


def _inputs(dtype):
    special = [0.0, -0.0, 1e-30, -1e-30, 1e-7, -1e-7, 0.625, -0.625, np.nextafter(np.float32(0.625), 0),
               0.6249, 0.6251, 1.0, -1.0, 9.0, -9.0, 20.0, -20.0, 44.5, 89.0, 1e30, -1e30, np.inf, -np.inf, np.nan,
               0.5, -0.5, 3.0, -3.0, 2.5e-8, 1e-40, -1e-40, 0.25]
    half = (N - len(special)) // 2
    dense = np.concatenate([np.linspace(-12.0, 12.0, half), np.linspace(-0.7, 0.7, N - len(special) - half)])
    return np.concatenate([dense, special]).astype(dtype)


@pytest.mark.parametrize("lanes", [1, 8, 16, 5])
def test_float32_tanh_is_within_two_ulps_and_keeps_signs_and_nan(lanes):
    x = _inputs("float32")
    y = np.empty_like(x)
    unary_module(te.tanh, N, "float32", lanes)(x, y)
    want = np.tanh(x.astype(np.float64))
    assert np.array_equal(np.isnan(y), np.isnan(want))
    ok = ~np.isnan(want)
    spacing = np.spacing(np.abs(want[ok]).astype(np.float32)).astype(np.float64)
    ulps = np.abs(y[ok].astype(np.float64) - want[ok]) / spacing
    assert ulps.max() <= 2.0, f"{ulps.max():.2f} ulps at x={x[ok][ulps.argmax()]!r}"
    assert np.array_equal(np.signbit(y[ok]), np.signbit(want)[ok]), "tanh keeps the sign of x, -0 included"
    assert y[x == np.inf][0] == 1.0 and y[x == -np.inf][0] == -1.0


def test_float64_tanh_keeps_libm():
    x = _inputs("float64")
    y = np.empty_like(x)
    unary_module(te.tanh, N, "float64", 4)(x, y)
    np.testing.assert_allclose(y, np.tanh(x), rtol=1e-15, atol=0)


def test_vectorized_float32_tanh_calls_no_libm():
    text = unary_module(te.tanh, N, "float32", 8).get_source("asm")
    assert "tanhf" not in text, "a vectorized tanh should not call libm lane by lane"
