"""erf of float32 on CPU is a rational approximation the code generator emits inline (so that a vectorized loop
stays vectorized); float64 keeps libm's erf. Both are checked against math.erf on a dense grid and on the
special values, scalar and vectorized."""
import math

import numpy as np
import pytest

from autosched import te

from schedule_helpers import unary_module

N = 1 << 14


def _inputs(dtype):
    dense = np.linspace(-6.0, 6.0, N - 16)
    special = [0.0, -0.0, 1e-30, -1e-30, 1e-7, 3.9, -3.9, 3.8999, 4.0, 1e30, -1e30,
               np.inf, -np.inf, np.nan, 0.5, -0.5]
    return np.concatenate([dense, special]).astype(dtype)


@pytest.mark.parametrize("dtype,tolerance", [("float32", 5e-7), ("float64", 1e-15)])
@pytest.mark.parametrize("lanes", [1, 8, 16])
def test_erf_matches_math_erf(dtype, tolerance, lanes):
    x = _inputs(dtype)
    y = np.empty_like(x)
    unary_module(te.erf, N, dtype, lanes)(x, y)
    want = np.array([math.erf(float(v)) if not math.isnan(v) else math.nan for v in x])
    assert np.array_equal(np.isnan(y), np.isnan(want))
    ok = ~np.isnan(want)
    err = np.abs(y[ok].astype(np.float64) - want[ok])
    assert err.max() <= tolerance, f"max error {err.max():.3g} at x={x[ok][err.argmax()]}"
    assert y[x == 0.0][0] == 0.0 and np.all(np.abs(y[np.isinf(x)]) == 1.0)
    assert np.all(np.sign(y[ok & (x != 0)]) == np.sign(x[ok & (x != 0)]))  # odd, no sign flip near 0


def test_vectorized_float32_erf_calls_no_libm():
    text = unary_module(te.erf, N, "float32", 8).get_source("asm")
    assert "erff" not in text, "a vectorized erf should not call libm lane by lane"
