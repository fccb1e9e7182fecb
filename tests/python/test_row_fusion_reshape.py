"""A layer norm or softmax whose output is reshaped by dropping or adding leading unit axes (GPT-2's layer norms
of 1 x 128 x 768 read as the 128 x 768 input of the next dense layer) keeps the row-fusion sketch: the rows are
the reshape's rows, each computed in one pass with its reductions factored over vectors, instead of a parallel
pass per stage with scalar reductions. Checked against the reference evaluator on awkward shapes, with the
expert's schedule and sampled states."""
import pytest

import autosched as ans
from autosched import ops, search
from autosched.core.build import lower
from autosched.search.policy import expert_schedule_info

from schedule_helpers import check

te = ans.te

# (leading shape of the rows, row length, shape of the reshaped output)
SHAPES = [((1, 7), 197, (7, 197)), ((1, 1), 5, (1, 5)), ((1, 129), 48, (129, 48)), ((3,), 768, (1, 3, 768)),
          ((1, 2, 3), 17, (6, 17))]


def _normalised_then_reshaped(kind, rows, length, out_shape):
    x = te.placeholder(rows + (length,), name="x")
    if kind == "layer_norm":
        gamma, beta = te.placeholder((length,), name="gamma"), te.placeholder((length,), name="beta")
        inputs, normalised = [x, gamma, beta], ops.layer_norm(x, gamma, beta)
    else:
        inputs, normalised = [x], ops.softmax(x)
    return ans.ComputeDAG(inputs + [ops.injective.reshape(normalised, out_shape)])


@pytest.mark.parametrize("kind", ["layer_norm", "softmax"])
@pytest.mark.parametrize("rows,length,out_shape", SHAPES)
def test_a_reshaped_row_normalisation_is_fused_per_row_and_exact(kind, rows, length, out_shape):
    dag = _normalised_then_reshaped(kind, rows, length, out_shape)
    task = ans.SearchTask(compute_dag=dag, target="llvm")
    state, why, note = expert_schedule_info(task)
    assert state is not None, why
    assert note.startswith("rows:"), note
    code = lower(state)
    assert code.count("parallel for") <= 1, code  # one pass over the rows (none for one row), every stage in it
    check(dag, state)
    states, _ = search.sample_init_population(task, 6, seed=2)
    assert states
    for sampled in states:
        check(dag, sampled)


def test_a_reshape_that_regroups_the_rows_stays_exact():
    """1 x 6 x 8 normalised rows read as 12 x 4: an output row is half an input row, so the per-row sketch does
    not apply; whatever schedules the task gets stay exact."""
    dag = _normalised_then_reshaped("softmax", (1, 6), 8, (12, 4))
    task = ans.SearchTask(compute_dag=dag, target="llvm")
    state, why, _ = expert_schedule_info(task)
    assert state is not None, why
    check(dag, state)
    for sampled in search.sample_init_population(task, 6, seed=2)[0]:
        check(dag, sampled)
