"""Every task of a zoo model gets a valid schedule from a small TaskScheduler budget, and the network built
from the log computes what onnxruntime (the graph exported to ONNX, same weights) and PyTorch (the same graph
run op by op) compute on random input.

CI tunes the BERT encoder layer; AUTOSCHED_ZOO_MODELS=all (or a comma-separated list of zoo.MODELS) runs
others: every model of the zoo takes tens of minutes on 2 cores."""
import os

import numpy as np
import pytest

import autosched as ans
from autosched.graph import zoo

CI_MODELS = ("bert_layer",)


def _models():
    chosen = os.environ.get("AUTOSCHED_ZOO_MODELS", "")
    if chosen == "all":
        return list(zoo.MODELS)
    return [m.strip() for m in chosen.split(",") if m.strip()] or list(CI_MODELS)


def _close(actual, expected, what):
    scale = max(float(np.abs(expected).max()), 1.0)
    err = float(np.abs(actual - expected).max())
    assert err <= 1e-4 * scale, f"{what}: largest difference {err:g} (output magnitude {scale:g})"


@pytest.mark.parametrize("name", _models())
def test_every_task_of_the_model_gets_a_valid_schedule_and_the_network_matches_its_peers(name, tmp_path):
    graph = zoo.get_model(name)
    tasks, weights = ans.extract_tasks(graph, "llvm")
    log = str(tmp_path / f"{name}.json")
    # The baselines plus a round of 2 for every task.
    options = ans.TuningOptions(num_measure_trials=5 * len(tasks), num_measures_per_round=2,
                                measure_callbacks=[ans.RecordToFile(log)], verbose=0)
    result = ans.TaskScheduler(tasks, weights).tune(options)
    without = [t.desc for t, r in zip(tasks, result.task_results) if r.best_cost is None]
    assert not without, f"tasks without a valid schedule: {without}"
    assert result.trials > 3 * len(tasks)  # the search ran too, not only the baselines

    net = ans.graph.build(graph, "llvm", log, verbose=False)
    assert not net.untuned, f"groups built without a record of the log: {net.untuned}"
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal(graph.shape(i)).astype(graph.dtype(i)) for i in graph.inputs]
    outputs = net(*inputs)

    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(graph.to_onnx().SerializeToString(), providers=["CPUExecutionProvider"])
    for ours, theirs in zip(outputs, session.run(None, dict(zip(graph.inputs, inputs)))):
        _close(ours, theirs, f"{name} vs onnxruntime")
    pytest.importorskip("torch")
    from autosched.graph.torch_runner import TorchGraph
    for ours, theirs in zip(outputs, TorchGraph(graph)(*inputs)):
        _close(ours, theirs, f"{name} vs PyTorch")


def test_resnet18_exported_by_torch_to_onnx_imports_tunes_and_runs(tmp_path):
    """A torchvision-style ResNet-18 (written in tests/python/frontend_models.py), exported by torch to an ONNX
    file, imported with from_onnx, tuned a little, built from the log and run: the output equals torch's."""
    pytest.importorskip("onnx")
    torch = pytest.importorskip("torch")
    import frontend_models as fm
    from autosched import frontends
    model = fm.resnet18(num_classes=10)
    x = torch.randn(1, 3, 32, 32)
    path = tmp_path / "resnet18.onnx"
    path.write_bytes(fm.to_onnx(model, [x]).SerializeToString())
    graph = frontends.from_onnx(str(path))
    tasks, weights = ans.extract_tasks(graph, "llvm")
    log = str(tmp_path / "resnet18.json")
    options = ans.TuningOptions(num_measure_trials=4 * len(tasks), num_measures_per_round=1,
                                measure_callbacks=[ans.RecordToFile(log)], verbose=0)
    result = ans.TaskScheduler(tasks, weights).tune(options)
    assert all(r.best_cost is not None for r in result.task_results)
    net = ans.graph.build(graph, "llvm", log, verbose=False)
    assert not net.untuned
    with torch.no_grad():
        want = model(x).numpy()
    _close(net(x.numpy())[0], want, "ResNet-18 from ONNX vs torch")
