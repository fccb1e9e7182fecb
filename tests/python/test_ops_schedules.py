"""End-to-end schedule correctness over the whole operator library: for every operator the default
schedule, the rule-generated schedules of schedule_helpers.generated_schedules (tiling by factors that do
not divide the shapes, reorder, fuse, compute_at, inlining, cache_write, rfactor, parallel, vectorize,
unroll) and targeted schedules per operator family are built with the LLVM backend and compared with the
reference evaluator on random inputs, in float32 and, where meaningful, float16 and int32.
"""
import pytest

import autosched as ans

from op_cases import CASES
from schedule_helpers import TARGETED, check, generated_schedules


def _schedules(dag, targeted):
    return [("default", None)] + generated_schedules(dag) + [(name, TARGETED[name]) for name in targeted]


def _params():
    for case, (builder, dtypes, positive, targeted) in CASES.items():
        for dtype in dtypes:
            yield pytest.param(case, dtype, id=f"{case}-{dtype}")


@pytest.mark.parametrize("case, dtype", list(_params()))
def test_every_schedule_matches_reference(case, dtype):
    builder, _, positive, targeted = CASES[case]
    dag = ans.ComputeDAG(builder(dtype))
    for seed, (name, schedule) in enumerate(_schedules(dag, targeted)):
        s = dag.get_init_state()
        if schedule is not None:
            schedule(s)
        try:
            check(dag, s, seed=seed, positive=positive)
        except AssertionError as err:
            raise AssertionError(f"schedule '{name}' of {case} in {dtype}:\n"
                                 f"{dag.print_python_steps(s)}\n{err}") from None


@pytest.mark.parametrize("case", sorted(CASES))
def test_case_stage_names_are_unique(case):
    """The schedules address stages by name, so every DAG of the cases names its stages apart."""
    builder, dtypes, _, _ = CASES[case]
    names = [op.name for op in ans.ComputeDAG(builder(dtypes[0])).ops]
    assert len(set(names)) == len(names), names


def test_generator_covers_every_step_kind():
    """The generated and targeted schedules of the library together use every step the issue lists."""
    used = set()
    for builder, dtypes, _, targeted in CASES.values():
        dag = ans.ComputeDAG(builder(dtypes[0]))
        for _, schedule in _schedules(dag, targeted)[1:]:
            s = dag.get_init_state()
            schedule(s)
            used.update(line.split("(")[0] for line in dag.print_python_steps(s).splitlines())
    expected = {"s.split", "s.reorder", "s.fuse", "s.compute_at", "s.compute_inline", "s.cache_write",
                "s.rfactor", "s.parallel", "s.vectorize", "s.unroll", "s.pragma"}
    assert expected <= used, expected - used
