"""scripts/make_cost_model_records.py: the random-shape tasks (--random-tasks) are the same for a seed, never a
held-out task's workload and within their size ranges; a target that turns the CPU's widest vector extension
off names its logs apart; a negative count is refused; the model suite's tasks (--suite) are tagged by family
and deduplicated by workload key."""
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


def _matmul_task(corpus, n, k, m, target):
    return ans.SearchTask(compute_dag=ans.ComputeDAG(corpus._matmul(n, k, m)), target=target, desc=f"mm {n}")


def test_suite_tasks_are_tagged_by_family_deduplicated_and_bounded(corpus, tmp_path):
    """The suite's tasks come from DIR/suite_tasks.json once extracted (here written by hand: a CNN and an
    encoder sharing one workload); a workload of two families is one task tagged with both, written to
    DIR/task_families.json; --tasks-per-family keeps N of each family."""
    import json
    target = "llvm -num-cores=2"
    shared, cnn_only, encoder_only = (_matmul_task(corpus, n, 16, 16, target) for n in (8, 9, 10))
    suite = corpus._suite_module().SUITE  # every model of the two families is in the cache: none is exported
    cache = {"target": target, "models": {name: {"family": spec.family, "tasks": [], "error": None}
                                          for name, spec in suite.items() if spec.family in ("cnn", "encoder")}}
    cache["models"]["resnet18"]["tasks"] = [shared.to_json(), cnn_only.to_json()]
    cache["models"]["bert_base"]["tasks"] = [encoder_only.to_json(), shared.to_json()]
    (tmp_path / "suite_tasks.json").write_text(json.dumps(cache))
    tasks, families = corpus.tagged_corpus_tasks(target, [], False, suite=["cnn", "encoder"], cache_dir=str(tmp_path))
    assert len(tasks) == 3
    assert families[shared.workload_key] == ["cnn", "encoder"]
    assert families[cnn_only.workload_key] == ["cnn"] and families[encoder_only.workload_key] == ["encoder"]
    assert {t.desc.split(".")[0] for t in tasks} == {"resnet18", "bert_base"}
    corpus.write_families_file(str(tmp_path), tasks, families)
    written = json.loads((tmp_path / "task_families.json").read_text())
    assert written[shared.workload_key]["families"] == ["cnn", "encoder"]
    # One task per family: the shared one counts for cnn (the first of its families by name).
    bounded, _ = corpus.tagged_corpus_tasks(target, [], False, suite=["cnn", "encoder"], cache_dir=str(tmp_path),
                                            per_family=1)
    assert len(bounded) == 2 and encoder_only.workload_key in {t.workload_key for t in bounded}
    only_cnn, _ = corpus.tagged_corpus_tasks(target, [], False, suite=["cnn"], cache_dir=str(tmp_path))
    assert len(only_cnn) == 2


def test_an_unknown_suite_family_is_refused(corpus, capsys):
    assert corpus.parse_suite("all") == list(corpus.SUITE_FAMILIES)
    with pytest.raises(SystemExit):
        corpus.parse_args(["--out", "x", "--suite", "cnn,rnn"])
    assert "--suite: unknown family rnn" in capsys.readouterr().err
