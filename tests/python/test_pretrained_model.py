"""The cost model shipped in the package (autosched.pretrained, XGBModel(pretrained=...)).

The shipped model must rank the records of tasks it was never trained on: tests/records/
pretrained_holdout.json.gz holds the measured schedules of a conv2d and a matmul of shapes in no corpus
(scripts/make_cost_model_records.py --holdout; scripts/train_pretrained_model.py leaves them out), measured
once, so the bar holds on any CPU. The rest: "scratch" and the default per target kind, continued boosting
on top of the base (save / load keep it), the fallback of a feature-set mismatch, and a tuning session that
starts from the shipped model.
"""
import functools
import json
import os
import tempfile
import types
import warnings

import numpy as np
import pytest

import autosched as ans
from autosched import pretrained, search
from autosched.cost_model import RandomModel, XGBModel, pairwise_accuracy
from autosched.pretrained import PretrainedModelWarning
from autosched.record_log import read_log

import cost_model_data as data

pytestmark = pytest.mark.skipif(not ans._core.has_xgboost(), reason="built without XGBoost")

HOLDOUT = "pretrained_holdout.json.gz"  # in tests/records/
# Pairwise accuracy the shipped model must reach on each held-out task; RandomModel scores about 0.5.
BAR = 0.7


@functools.lru_cache(maxsize=None)
def holdout_records():
    with tempfile.TemporaryDirectory() as tmp:
        return read_log(data.recorded_log(HOLDOUT, os.path.join(tmp, "holdout.json"))).records


def holdout_tasks():
    """(task, states, costs) per task of the held-out log: its successful records."""
    by_key = {}
    for rec in holdout_records():
        if rec.result.ok:
            entry = by_key.setdefault(rec.task.workload_key, (rec.task, [], []))
            entry[1].append(rec.state)
            entry[2].append(rec.result.mean_cost)
    return list(by_key.values())


def test_the_shipped_model_is_in_the_package_and_matches_the_features():
    info = pretrained.manifest("llvm")
    assert info is not None, "no pretrained model in autosched/data/pretrained_models.json"
    path = pretrained.model_path("llvm")
    assert os.path.isfile(path) and os.path.getsize(path) < 3e6
    assert info["feature_set"] == pretrained.feature_set_id()
    assert info["num_features"] == len(ans._core.feature_names())
    assert info["records"] > 0 and info["tasks"] > 0 and info["cpus"]


def test_the_shipped_model_ranks_a_held_out_task():
    model = XGBModel(pretrained=True)
    assert model.has_base and not model.trained
    tasks = holdout_tasks()
    assert len(tasks) == 2
    for task, states, costs in tasks:
        assert "held out" in task.desc and len(states) >= 40
        accuracy = pairwise_accuracy(model.predict(task, states), costs)
        chance = pairwise_accuracy(RandomModel(seed=3).predict(task, states), costs)
        assert accuracy >= BAR > chance, (task.desc, accuracy, chance)
        # Scores of the base are the same at every call (no warm-up randomness).
        assert model.predict(task, states[:5]) == model.predict(task, states[:5])


def test_scratch_and_the_default_per_target():
    llvm = search.make_cost_model("auto", target="llvm")
    assert isinstance(llvm, XGBModel) and llvm.has_base
    for spec in ("scratch", "xgb"):
        model = search.make_cost_model(spec, target="llvm")
        assert isinstance(model, XGBModel) and not model.has_base
    assert not search.make_cost_model("auto", target=ans.Target("opencl -device=pocl")).has_base
    assert search.make_cost_model("pretrained").has_base
    assert not XGBModel().has_base and not XGBModel(pretrained=False).has_base
    with pytest.raises(ValueError, match="pretrained cost model is for 'llvm' targets"):
        XGBModel(pretrained=True).check_target("opencl -device=pocl")
    with pytest.raises(TypeError, match="pretrained must be"):
        XGBModel(pretrained=3)
    with pytest.raises(ValueError, match="'scratch'"):
        search.make_cost_model("fresh")


def test_online_updates_boost_on_top_of_the_base(tmp_path):
    (task, states, costs), _ = holdout_tasks()
    model = XGBModel(pretrained=True, num_warmup_samples=16)
    base = np.array(model.predict(task, states))
    inputs = [types.SimpleNamespace(task=task, state=s) for s in states[:24]]
    model.update(inputs, [types.SimpleNamespace(costs=[c], error_no=0) for c in costs[:24]])
    assert model.trained and model.has_base
    scores = np.array(model.predict(task, states))
    assert not np.allclose(scores, base)
    # The session's own trees learnt its labels: on the programs it measured it ranks at least as well.
    assert pairwise_accuracy(scores[:24], costs[:24]) >= pairwise_accuracy(base[:24], costs[:24])
    model.save(tmp_path / "m.json")
    loaded = XGBModel()
    loaded.load(tmp_path / "m.json")
    assert loaded.has_base and np.allclose(loaded.predict(task, states), scores)


def test_a_model_of_other_features_is_refused_or_falls_back(tmp_path, monkeypatch):
    doc = json.load(open(pretrained.model_path("llvm")))
    doc["feature_names"] = doc["feature_names"][:-1]
    other = tmp_path / "other.json"
    other.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="trained on other features"):
        XGBModel(pretrained=other)
    with pytest.raises(ValueError, match="not an autosched cost model"):
        (tmp_path / "junk.json").write_text("{}")
        XGBModel(pretrained=tmp_path / "junk.json")
    # A build whose feature set differs from the shipped model's: "auto" warns and learns from scratch.
    monkeypatch.setattr(pretrained, "feature_set_id", lambda: "0123456789ab")
    with pytest.raises(ValueError, match="trained on other features"):
        XGBModel(pretrained=True)
    with pytest.warns(PretrainedModelWarning, match="learns from scratch"):
        model = search.make_cost_model("auto", target="llvm")
    assert isinstance(model, XGBModel) and not model.has_base


def test_no_shipped_model_falls_back(tmp_path, monkeypatch):
    monkeypatch.setattr(pretrained, "MANIFEST", str(tmp_path / "none.json"))
    assert pretrained.model_path("llvm") is None
    with pytest.raises(ValueError, match="ships no pretrained cost model"):
        XGBModel(pretrained=True)
    with pytest.warns(PretrainedModelWarning):
        assert not search.make_cost_model("auto", target="llvm").has_base


@pytest.mark.skipif(not ans._core.has_llvm(), reason="needs the LLVM backend")
def test_tuning_starts_from_the_shipped_model(monkeypatch):
    made = []
    original = XGBModel._set_base
    monkeypatch.setattr(XGBModel, "_set_base", lambda self, p: made.append(p) or original(self, p))
    A = ans.te.placeholder((24, 40), name="A")
    B = ans.te.placeholder((40, 17), name="B")
    C = ans.ops.matmul(A, B)
    task = ans.SearchTask(compute_dag=ans.ComputeDAG([A, B, C]), target="llvm -num-cores=1")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PretrainedModelWarning)
        result = task.tune(ans.TuningOptions(num_measure_trials=10, num_measures_per_round=4, verbose=0))
    assert made == [True]
    assert result.trials >= 5 and result.best_cost is not None
