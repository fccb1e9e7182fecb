"""Hugging Face transformers through both importers: tiny BERT, DistilBERT, GPT-2 and T5-encoder models, made from
their config classes with random weights (nothing is downloaded), run one forward pass at a fixed sequence
length. Each is exported with torch.onnx.export (opset 17, the TorchScript exporter) and imported with
from_onnx, and imported with from_torch; both graphs import whole and, compiled untuned, match onnxruntime
within a relative error of 1e-4. Skips when transformers is not installed (scripts/install_deps.sh installs
it)."""
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
transformers = pytest.importorskip("transformers", reason="transformers is not installed (pip install transformers)")

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
try:
    import _models  # the model suite's ONNX export
finally:
    sys.path.pop(0)

SEQ = 7  # a prime sequence length
VOCAB = 99


def _tiny(name):
    tf = transformers
    if name == "bert":
        return tf.BertModel(tf.BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                          intermediate_size=37, vocab_size=VOCAB, max_position_embeddings=64))
    if name == "distilbert":
        return tf.DistilBertModel(tf.DistilBertConfig(dim=32, n_layers=2, n_heads=2, hidden_dim=37, vocab_size=VOCAB,
                                                      max_position_embeddings=64))
    if name == "gpt2":
        return tf.GPT2Model(tf.GPT2Config(n_embd=32, n_layer=2, n_head=2, vocab_size=VOCAB, n_positions=64,
                                          bos_token_id=0, eos_token_id=0))
    return tf.T5EncoderModel(tf.T5Config(d_model=32, d_ff=37, d_kv=8, num_layers=2, num_heads=4, vocab_size=VOCAB))


class _LastHiddenState(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids)[0]


@pytest.mark.parametrize("frontend", ["onnx", "torch"])
@pytest.mark.parametrize("name", ["bert", "distilbert", "gpt2", "t5_encoder"])
def test_tiny_transformer_imports_and_matches_onnxruntime(name, frontend):
    torch.manual_seed(0)
    module = _LastHiddenState(_tiny(name)).eval()
    ids = torch.randint(0, VOCAB, (1, SEQ))
    model = _models.onnx_bytes(module, (ids,), ["input_ids"])
    (want,) = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"input_ids": ids.numpy()})
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnsupportedOperatorWarning)
        graph = frontends.from_onnx(model) if frontend == "onnx" else frontends.from_torch(module, (ids,))
    (got,) = build(graph, "llvm", verbose=False)(ids.numpy())
    assert got.shape == want.shape == (1, SEQ, 32)
    assert np.abs(got - want).max() < 1e-4 * np.abs(want).max()
