"""The built module: the time evaluator's result object, sources by name, failing runs inside the timing loop."""
import numpy as np
import pytest

import autosched as ans
from autosched import te

pytestmark = pytest.mark.needs_llvm


def _scale_dag(n=64):
    a = te.placeholder((n,), name="a")
    b = te.compute((n,), lambda i: a[i] * 3.0, name="b")
    return ans.ComputeDAG([a, b])


def test_time_evaluator_returns_mean_and_results():
    mod = ans.build(_scale_dag())
    a, b = np.ones(64, "float32"), np.zeros(64, "float32")
    res = mod.time_evaluator(number=3, repeat=4)(a, b)
    assert len(res) == 4 and res.results == tuple(res) and all(t > 0 for t in res)
    assert res.mean == pytest.approx(sum(res.results) / 4) and min(res) == res[res.results.index(min(res))]
    assert "mean=" in repr(res)
    assert (b == 3).all()


def test_get_source_names_the_known_formats():
    mod = ans.build(_scale_dag())
    assert mod.source_formats == ["asm", "ll", "lowered"]
    assert mod.get_source("s") == mod.get_source("asm") and mod.get_source("llvm") == mod.get_source("ll")
    with pytest.raises(ValueError, match="unknown source format 'cl' \\(this module has 'asm', 'll', 'lowered'\\)"):
        mod.get_source("cl")
    assert mod.cannot_run == ""


def test_build_takes_a_target_or_its_text():
    dag = _scale_dag()
    for target in ("llvm -num-cores=1", ans.Target("llvm -num-cores=1"), None):
        mod = ans.build(dag, target=target)
        a, b = np.ones(64, "float32"), np.zeros(64, "float32")
        mod(a, b)
        assert (b == 3).all()
    with pytest.raises(TypeError, match="target must be a Target"):
        ans.build(dag, target=3)
