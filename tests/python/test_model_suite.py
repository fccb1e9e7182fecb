"""The model suite (bench/_models.py): a tiny configuration of each family -- a CNN and a mobile net from
torchvision, a ViT from timm, BERT and Whisper encoders and a GPT-2 decoder from transformers, random weights,
64x64 images or 8 tokens -- and the models with ops those lack (MORE_MODELS), exported with torch.onnx.export
(opset 17; a CNN and BERT also with dynamo=True) and imported with from_onnx, and imported with from_torch; each imports whole and, built untuned, matches onnxruntime within a relative error
of 1e-4. A family whose package is missing skips with the reason (scripts/install_deps.sh installs them:
torchvision and timm into their own folder, as bench/_models.py explains)."""
import pathlib
import sys
import warnings

import numpy as np
import pytest

from autosched import frontends
from autosched.frontends import UnsupportedOperatorWarning
from autosched.graph import build

torch = pytest.importorskip("torch")
ort = pytest.importorskip("onnxruntime")

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
try:
    import _models
finally:
    sys.path.pop(0)

# One model per family, each fast to build at its tiny size.
TINY_MODELS = {"cnn": "squeezenet1_1", "mobile": "mobilenet_v3_small", "vit": "deit_tiny",
               "encoder": "bert_base", "whisper": "whisper_tiny_encoder", "decoder": "gpt2"}
# Models with ops the ones above lack: Pad and roll (Swin), Resize (MobileViT), type_as (RoBERTa), the rotary
# embedding's Sin / Cos (Llama). (torchvision's swin_t, full size whatever --tiny says, is the bench's.)
MORE_MODELS = ["swin_tiny_timm", "mobilevit_xs", "roberta_base", "llama_small"]


def test_every_family_has_a_tiny_model_here():
    assert {_models.SUITE[name].family for name in TINY_MODELS.values()} == set(_models.FAMILIES)
    assert len(_models.SUITE) >= 25


def test_select_names_models_and_families_and_refuses_unknown_ones():
    assert _models.select("gpt2,resnet50") == ["resnet50", "gpt2"]  # in the suite's order
    assert set(_models.select(families="decoder")) == {n for n, s in _models.SUITE.items() if s.family == "decoder"}
    with pytest.raises(ValueError, match="unknown model or family nosuchnet"):
        _models.select("nosuchnet")


@pytest.mark.parametrize("frontend", ["onnx", "torch"])
@pytest.mark.parametrize("name", sorted(TINY_MODELS.values()) + MORE_MODELS)
def test_tiny_model_imports_builds_and_matches_onnxruntime(name, frontend):
    _check_tiny_model(name, frontend)


@pytest.mark.parametrize("name", ["squeezenet1_1", "bert_base"])
def test_tiny_model_exported_by_dynamo_imports_and_matches_onnxruntime(name):
    """torch.onnx.export(..., dynamo=True): opset 18 and newer (Split's num_outputs, axes as inputs,
    LayerNormalization, Gelu), written by onnxscript."""
    pytest.importorskip("onnxscript")
    _check_tiny_model(name, "onnx", dynamo=True)


def _check_tiny_model(name, frontend, dynamo=False):
    torch.manual_seed(0)
    try:
        module, example = _models.SUITE[name].make(tiny=True)
    except _models.MissingPackage as e:
        pytest.skip(str(e))
    model = _models.onnx_bytes(module, (example,), ["input"], dynamo=dynamo)
    (want,) = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"input": example.numpy()})
    assert np.abs(want).max() > 0  # an all-zero output (a zeroed head) would check nothing
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnsupportedOperatorWarning)
        graph = frontends.from_onnx(model) if frontend == "onnx" else frontends.from_torch(module, (example,))
    (got,) = build(graph, "llvm", verbose=False)(example.numpy())
    assert got.shape == want.shape
    assert np.abs(got - want).max() < 1e-4 * np.abs(want).max()
