"""scripts/make_cost_model_records.py: the random-shape tasks (--random-tasks) are the same for a seed, never a
held-out task's workload and within their size ranges; a target that turns the CPU's widest vector extension
off names its logs apart; a negative count is refused."""
import importlib.util
import math
import pathlib

import pytest

import autosched as ans

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def corpus():
    spec = importlib.util.spec_from_file_location("make_cost_model_records",
                                                  ROOT / "scripts" / "make_cost_model_records.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_random_tasks_are_seeded_new_and_sized(corpus):
    target = "llvm -num-cores=2"
    held_out = corpus.holdout_keys(target)
    tasks = corpus.random_op_tasks(12, 3, target, held_out)
    keys = [t.workload_key for t in tasks]
    assert len(set(keys)) == 12 and not set(keys) & held_out
    assert keys == [t.workload_key for t in corpus.random_op_tasks(12, 3, target, held_out)]
    assert keys != [t.workload_key for t in corpus.random_op_tasks(12, 4, target, held_out)]
    for t in tasks:
        assert t.desc.endswith("(random)")
        flop = t.compute_dag.flop_ct
        elements = math.prod(t.compute_dag.tensors[0].shape)
        lo_f, hi_f = corpus.FLOP_RANGE
        lo_e, hi_e = corpus.ELEMENT_RANGE
        assert lo_f <= flop <= hi_f or lo_e <= elements <= hi_e, t.desc


def test_a_target_without_the_widest_vector_extension_is_another_cpu(corpus):
    plain = corpus.cpu_slug("llvm")
    widest = corpus._vector_isa(ans.Target("llvm").features)
    if not widest:
        pytest.skip("no known x86 vector extension on this host")
    narrower = corpus.cpu_slug(f"llvm -mattr=-{widest}")
    assert narrower.startswith(plain + "-") and narrower != plain


def test_a_negative_random_task_count_is_refused(corpus, capsys):
    with pytest.raises(SystemExit):
        corpus.parse_args(["--out", "x", "--random-tasks", "-1"])
    assert "--random-tasks must be >= 0" in capsys.readouterr().err
