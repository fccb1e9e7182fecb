"""The model suite: architectures from torchvision, timm and transformers that nobody in the project wrote, with
random weights (nothing is downloaded), batch 1, each at its published size and at a tiny size (a check that
the code works). Used by bench/bench_models.py and tests/python/test_model_suite.py.

    import _models
    spec = _models.SUITE["resnet50"]        # family, package, make(tiny) -> (module, example input)
    module, example = spec.make(tiny=False)

torchvision and timm: PyPI's torchvision wheel for torch 2.13.0 is a CUDA build whose C++ ops do not load with
the CPU torch, and its import then dies registering fake kernels for ops that do not exist
(`operator torchvision::nms does not exist`); timm imports it. Installed where Python finds it, it would break
every import of transformers that pulls torchvision in (torch.onnx.export of a transformers model does), so
scripts/install_deps.sh installs both, --no-deps, into their own folder (VISION_PACKAGES) that only the suite
puts on sys.path, after declaring the two detection ops whose fake kernels torchvision registers. The
classification models use none of torchvision's C++ ops.
"""
import collections
import importlib.util
import os
import sys

# Where scripts/install_deps.sh puts torchvision==0.28.0 and timm (pip install --no-deps --target).
VISION_PACKAGES = os.environ.get("AUTOSCHED_VISION_PACKAGES", "/opt/autosched-vision")

FAMILIES = ("cnn", "mobile", "vit", "encoder", "decoder")
IMAGE, TINY_IMAGE = 224, 64
SEQ, TINY_SEQ = 128, 8
VOCAB_TINY = 99

ModelSpec = collections.namedtuple("ModelSpec", "family package make")


class MissingPackage(ImportError):
    """A package a model needs is not installed; the message says how to install it."""


def vision_packages():
    """(torchvision, timm), imported from VISION_PACKAGES; MissingPackage where they are not there."""
    if "timm" in sys.modules and "torchvision" in sys.modules:
        return sys.modules["torchvision"], sys.modules["timm"]
    import torch
    if os.path.isdir(VISION_PACKAGES) and VISION_PACKAGES not in sys.path:
        sys.path.append(VISION_PACKAGES)
    spec = importlib.util.find_spec("torchvision")
    library = os.path.join(os.path.dirname(spec.origin), "_C.so") if spec and spec.origin else ""
    try:
        torch.ops.load_library(library)  # a torchvision built for this torch defines its ops here
    except (OSError, RuntimeError):
        pass
    # Else the schemas its C++ library would have defined, so that its fake-kernel registrations succeed where
    # that library (a CUDA build) cannot load.
    for op in ("nms", "qnms"):
        if not hasattr(torch.ops.torchvision, op):
            torch.library.define(f"torchvision::{op}", "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    try:
        import timm
        import torchvision
    except ImportError as e:
        raise MissingPackage(f"torchvision/timm are not in {VISION_PACKAGES} ({e}): run scripts/install_deps.sh") from e
    return torchvision, timm


def transformers_package():
    try:
        vision_packages()  # transformers may import torchvision: declare its ops first
    except MissingPackage:
        pass
    try:
        import transformers
    except ImportError as e:
        raise MissingPackage(f"transformers is not installed ({e}): run scripts/install_deps.sh") from e
    return transformers


def _image(tiny):
    import torch
    size = TINY_IMAGE if tiny else IMAGE
    return torch.randn(1, 3, size, size)


def _ids(tiny, vocab):
    import torch
    return torch.randint(0, vocab, (1, TINY_SEQ if tiny else SEQ))


def _torchvision(name, tiny_kwargs=None):
    def make(tiny):
        tv, _ = vision_packages()
        kwargs = dict(num_classes=10, **(tiny_kwargs or {})) if tiny else {}
        model = getattr(tv.models, name)(weights=None, **kwargs).eval()
        if name.startswith("vit_"):  # torchvision zeroes the head: every output would be 0, nothing to check
            import torch
            torch.nn.init.normal_(model.heads.head.weight, std=0.02)
        return model, _image(tiny)
    return make


def _timm(name, tiny_name=None, tiny_kwargs=None):
    def make(tiny):
        _, timm = vision_packages()
        if tiny:
            model = timm.create_model(tiny_name or name, pretrained=False, num_classes=10, **(tiny_kwargs or {}))
        else:
            model = timm.create_model(name, pretrained=False)
        return model.eval(), _image(tiny)
    return make


def _last_hidden_state(model):
    import torch

    class LastHiddenState(torch.nn.Module):
        """The model's first output (the last hidden state), so that every importer sees one tensor out."""

        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, x):
            return self.model(x)[0]

    return LastHiddenState(model).eval()


def _transformers(config_class, model_class, full, tiny_config, vocab_key="vocab_size"):
    """A model made from transformers' config class: `full` holds the published model's config values (those
    that differ from the class's defaults), `tiny_config` the tiny one's."""
    def make(tiny):
        tf = transformers_package()
        config = getattr(tf, config_class)(**(tiny_config if tiny else full))
        model = getattr(tf, model_class)(config)
        return _last_hidden_state(model), _ids(tiny, getattr(config, vocab_key))
    return make


def _whisper_encoder(tiny):
    import torch
    tf = transformers_package()
    config = (tf.WhisperConfig(num_mel_bins=8, d_model=32, encoder_layers=2, encoder_attention_heads=2,
                               encoder_ffn_dim=37, max_source_positions=16, decoder_layers=1,
                               decoder_attention_heads=2, decoder_ffn_dim=8, vocab_size=VOCAB_TINY,
                               pad_token_id=0, bos_token_id=0, eos_token_id=0, decoder_start_token_id=0)
              if tiny else tf.WhisperConfig(d_model=384, encoder_layers=4, encoder_attention_heads=6,
                                            encoder_ffn_dim=1536, decoder_layers=4, decoder_attention_heads=6,
                                            decoder_ffn_dim=1536))  # whisper-tiny
    encoder = tf.WhisperModel(config).get_encoder()
    features = torch.randn(1, config.num_mel_bins, 2 * config.max_source_positions)
    return _last_hidden_state(encoder), features


_TINY_BERT = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37,
                  vocab_size=VOCAB_TINY, max_position_embeddings=64)

SUITE = {
    # CNNs
    "resnet50": ModelSpec("cnn", "torchvision", _torchvision("resnet50")),
    "resnet18": ModelSpec("cnn", "torchvision", _torchvision("resnet18")),
    "densenet121": ModelSpec("cnn", "torchvision", _torchvision("densenet121")),
    "regnet_y_400mf": ModelSpec("cnn", "torchvision", _torchvision("regnet_y_400mf")),
    "resnest14d": ModelSpec("cnn", "timm", _timm("resnest14d")),
    "efficientnet_b0": ModelSpec("cnn", "torchvision", _torchvision("efficientnet_b0")),
    "convnext_tiny": ModelSpec("cnn", "torchvision", _torchvision("convnext_tiny")),
    "squeezenet1_1": ModelSpec("cnn", "torchvision", _torchvision("squeezenet1_1")),
    # mobile nets
    "mobilenet_v2": ModelSpec("mobile", "torchvision", _torchvision("mobilenet_v2", dict(width_mult=0.25))),
    "mobilenet_v3_large": ModelSpec("mobile", "torchvision",
                                    _torchvision("mobilenet_v3_large", dict(width_mult=0.25))),
    "mobilenet_v3_small": ModelSpec("mobile", "torchvision",
                                    _torchvision("mobilenet_v3_small", dict(width_mult=0.25))),
    "shufflenet_v2": ModelSpec("mobile", "torchvision", _torchvision("shufflenet_v2_x1_0")),
    "mnasnet1_0": ModelSpec("mobile", "torchvision", _torchvision("mnasnet1_0")),
    "mobilevit_xs": ModelSpec("mobile", "timm", _timm("mobilevit_xs", "mobilevit_xxs")),
    # vision transformers
    "vit_b_16": ModelSpec("vit", "torchvision", _torchvision("vit_b_16", dict(image_size=TINY_IMAGE))),
    "deit_tiny": ModelSpec("vit", "timm", _timm("deit_tiny_patch16_224", "test_vit",
                                                 dict(img_size=TINY_IMAGE))),
    "swin_t": ModelSpec("vit", "torchvision", _torchvision("swin_t")),
    "swin_tiny_timm": ModelSpec("vit", "timm", _timm("swin_tiny_patch4_window7_224", tiny_kwargs=dict(img_size=TINY_IMAGE, window_size=2))),
    # encoders
    "bert_base": ModelSpec("encoder", "transformers", _transformers("BertConfig", "BertModel", {}, _TINY_BERT)),
    "distilbert": ModelSpec("encoder", "transformers", _transformers(
        "DistilBertConfig", "DistilBertModel", {},
        dict(dim=32, n_layers=2, n_heads=2, hidden_dim=37, vocab_size=VOCAB_TINY, max_position_embeddings=64))),
    "roberta_base": ModelSpec("encoder", "transformers", _transformers(
        "RobertaConfig", "RobertaModel", dict(vocab_size=50265, max_position_embeddings=514, type_vocab_size=1),
        dict(_TINY_BERT, max_position_embeddings=66, type_vocab_size=1))),
    "electra_small": ModelSpec("encoder", "transformers", _transformers(
        "ElectraConfig", "ElectraModel", dict(embedding_size=128, hidden_size=256, num_attention_heads=4,
                                              intermediate_size=1024), dict(_TINY_BERT, embedding_size=16))),
    "albert_base": ModelSpec("encoder", "transformers", _transformers(
        "AlbertConfig", "AlbertModel", dict(hidden_size=768, num_attention_heads=12, intermediate_size=3072),
        dict(_TINY_BERT, embedding_size=16))),
    "t5_small_encoder": ModelSpec("encoder", "transformers", _transformers(
        "T5Config", "T5EncoderModel", {},
        dict(d_model=32, d_ff=37, d_kv=8, num_layers=2, num_heads=4, vocab_size=VOCAB_TINY))),
    "whisper_tiny_encoder": ModelSpec("encoder", "transformers", _whisper_encoder),
    # decoders: one forward pass over the whole sequence (the key/value cache it returns is dropped;
    # use_cache=False makes the TorchScript exporter meet aten::diff, which it cannot export)
    "gpt2": ModelSpec("decoder", "transformers", _transformers(
        "GPT2Config", "GPT2Model", {},
        dict(n_embd=32, n_layer=2, n_head=2, vocab_size=VOCAB_TINY, n_positions=64, bos_token_id=0,
             eos_token_id=0))),
    "opt_125m": ModelSpec("decoder", "transformers", _transformers(
        "OPTConfig", "OPTModel", {},
        dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, ffn_dim=37, word_embed_proj_dim=32,
             vocab_size=VOCAB_TINY, max_position_embeddings=64))),
    "llama_small": ModelSpec("decoder", "transformers", _transformers(
        "LlamaConfig", "LlamaModel", dict(hidden_size=512, intermediate_size=1376, num_hidden_layers=4,
                                          num_attention_heads=8, num_key_value_heads=8, vocab_size=32000),
        dict(hidden_size=32, intermediate_size=37, num_hidden_layers=2, num_attention_heads=2,
             num_key_value_heads=2, vocab_size=VOCAB_TINY, max_position_embeddings=64))),
}


def select(models="", families=""):
    """The names of SUITE named by `models` and/or `families` (comma-separated; both empty: all). ValueError
    naming an unknown name."""
    names = [m for m in models.split(",") if m]
    fams = [f for f in families.split(",") if f]
    unknown = [m for m in names if m not in SUITE] + [f for f in fams if f not in FAMILIES]
    if unknown:
        raise ValueError(f"unknown model or family {', '.join(unknown)}; models: {', '.join(SUITE)}; "
                         f"families: {', '.join(FAMILIES)}")
    chosen = [n for n, spec in SUITE.items() if (not names or n in names) and (not fams or spec.family in fams)]
    return chosen


def onnx_bytes(module, args, input_names, dynamo=False):
    """`module` exported by torch.onnx.export for the example `args`: by the TorchScript exporter (opset 17), or
    with dynamo=True by the torch.export-based one (its default opset, 18 and newer; it needs onnxscript)."""
    import io
    import logging
    import warnings

    import torch
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the exporters' deprecation and tracer warnings
        if dynamo:
            optimizer_log = logging.getLogger("onnxscript")
            level = optimizer_log.level
            optimizer_log.setLevel(logging.ERROR)  # its constant folder reports each node it leaves alone
            try:
                program = torch.onnx.export(module, args, dynamo=True, input_names=input_names, verbose=False)
            finally:
                optimizer_log.setLevel(level)
            return program.model_proto.SerializeToString()
        buffer = io.BytesIO()
        torch.onnx.export(module, args, buffer, opset_version=17, dynamo=False, input_names=input_names)
    return buffer.getvalue()
