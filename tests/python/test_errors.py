"""Which Python exception a core failure arrives as (docs/errors.md): bad input is ValueError / TypeError,
a failed invariant of autosched is autosched.InternalError, and both name the step or pass they came from."""
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
