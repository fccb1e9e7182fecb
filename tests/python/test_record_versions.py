"""Records of every version keep loading and meaning what they meant (tests/records/ holds one fixture per
version; they are never regenerated)."""
import json
from pathlib import Path

import numpy as np

import autosched as ans

RECORDS = Path(__file__).resolve().parent.parent / "records"


def _load(name):
    doc = json.loads((RECORDS / name).read_text())
    dag = ans.ComputeDAG.from_json(json.dumps(doc["dag"]))
    return doc, dag, ans.State.from_json(dag, json.dumps(doc["steps"]))


def test_version_1_steps_with_annotation_ordinals_replay_to_the_same_loop_nest():
    doc, dag, state = _load("v1_state_matmul_relu.json")
    assert any(step[0] == "AN" and isinstance(step[3], int) for step in doc["steps"])
    assert str(dag.infer_bound(state)) == doc["loop_nest"]
    a = np.random.rand(64, 48).astype("float32")
    b = np.random.rand(48, 40).astype("float32")
    out = np.zeros((64, 40), "float32")
    ans.build(dag, state)(a, b, out)
    np.testing.assert_allclose(out, np.maximum(a @ b, 0), rtol=1e-4, atol=1e-4)


def test_annotations_are_written_by_name_and_read_back():
    _, dag, state = _load("v1_state_matmul_relu.json")
    steps = json.loads(state.to_json())
    names = [step[3] for step in steps if step[0] == "AN"]
    assert names == ["vectorize", "unroll", "parallel", "vectorize"]
    again = ans.State.from_json(dag, json.dumps(steps))
    assert str(again) == str(state)


def test_an_unknown_annotation_name_is_refused_with_the_known_ones():
    _, dag, state = _load("v1_state_matmul_relu.json")
    steps = json.loads(state.to_json())
    for step in steps:
        if step[0] == "AN":
            step[3] = "sideways"
    try:
        ans.State.from_json(dag, json.dumps(steps))
    except ValueError as e:
        assert "sideways" in str(e) and "vectorize" in str(e)
    else:
        raise AssertionError("an unknown annotation name was accepted")
