"""Which Python exception a core failure arrives as (docs/errors.md): bad input is ValueError / TypeError,
a failed invariant of autosched is autosched.InternalError, and both name the step or pass they came from."""
import numpy as np
import pytest

import autosched as ans
from autosched import te


def test_internal_check_arrives_as_internal_error_with_its_location():
    with pytest.raises(ans.InternalError, match=r"internal error: check .* failed at .*module\.cc:\d+"):
        ans._core._testing.fail_internal_check()


def test_internal_error_is_not_a_value_error():
    assert not issubclass(ans.InternalError, ValueError)
    assert issubclass(ans.InternalError, RuntimeError)


def test_bad_input_arrives_as_value_error():
    with pytest.raises(ValueError, match="bad input raised on purpose"):
        ans._core._testing.fail_user_check()


def test_invalid_step_names_the_step():
    A = te.placeholder((8, 8), name="A")
    B = te.compute((8, 8), lambda i, j: A[i, j] * 2, name="B")
    s = ans.ComputeDAG([A, B]).get_init_state()
    with pytest.raises(ValueError, match=r"step 0 \(reorder\)"):
        s.reorder("B", [0, 0])


def test_time_evaluator_refuses_tvm_arguments_in_one_short_message():
    """TVM's mod.time_evaluator(mod.entry_name, dev, ...) and wrong counts: a short error, not the core's
    overload list."""
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1, name="B")
    mod = ans.build(ans.ComputeDAG([A, B]))
    with pytest.raises(TypeError, match=r"takes no function name .*mod\.time_evaluator\(number=10") as err:
        mod.time_evaluator("default_function")
    assert len(str(err.value)) < 300 and "\n" not in str(err.value)
    for kwargs, exc, arg in (({"number": 0}, ValueError, "number"), ({"repeat": 2.5}, TypeError, "repeat"),
                             ({"min_repeat_ms": -1}, ValueError, "min_repeat_ms"),
                             ({"flush_cache": "yes"}, TypeError, "flush_cache")):
        with pytest.raises(exc, match=rf"Module.time_evaluator: {arg} must be") as err:
            mod.time_evaluator(**kwargs)
        assert len(str(err.value)) < 200
    a, b = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    assert len(mod.time_evaluator(number=np.int64(2), repeat=2)(a, b).results) == 2
