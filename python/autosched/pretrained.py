"""The cost model shipped in the package, pretrained on the project's own records.

    path = pretrained.model_path("llvm")      # the model file of llvm targets (None: none shipped)
    info = pretrained.manifest("llvm")        # corpus size, CPUs, feature set, date, held-out accuracy
    model = ans.XGBModel(pretrained=True)     # starts from it (cost_model.XGBModel)

scripts/train_pretrained_model.py trains it on record logs that scripts/make_cost_model_records.py tunes (the
tasks of the zoo networks and of the operator library, on AVX2 and AVX-512 CPUs) and writes it into
autosched/data/ with its manifest, data/pretrained_models.json. The model file's name carries the feature set
it was trained on (feature_set_id()): a build whose features differ does not use it (the tuner falls back to a
model learning from scratch, with a PretrainedModelWarning).
"""
import hashlib
import json
import os

from . import _core

__all__ = ["PretrainedModelWarning", "feature_set_id", "manifest", "model_path", "DATA_DIR", "MANIFEST"]

DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
MANIFEST = os.path.join(DATA_DIR, "pretrained_models.json")


class PretrainedModelWarning(UserWarning):
    """The shipped cost model cannot be used (missing, or trained on other features): the model learns from
    the session's measurements alone."""


def feature_set_id():
    """A short hash of the feature names in row order: models trained on one feature set read only it."""
    return hashlib.sha256("\n".join(_core.feature_names()).encode()).hexdigest()[:12]


def _read_manifest():
    try:
        with open(MANIFEST) as f:
            return json.load(f)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as err:
        raise ValueError(f"the pretrained models' manifest '{MANIFEST}' cannot be read: {err}") from None


def manifest(kind="llvm"):
    """What the shipped model of targets of `kind` was trained on (a dict), or None when none is shipped."""
    return _read_manifest().get(kind)


def model_path(kind="llvm", check=True):
    """The shipped model file of targets of `kind`, or None when none is shipped. With check=True a model
    trained on another feature set than this build's raises ValueError saying so."""
    entry = manifest(kind)
    if entry is None:
        return None
    path = os.path.join(DATA_DIR, entry["file"])
    if not os.path.isfile(path):
        raise ValueError(f"the pretrained cost model of '{kind}' targets, '{path}', is missing from the package")
    if check and entry.get("feature_set") != feature_set_id():
        raise ValueError(f"the pretrained cost model '{path}' was trained on other features (feature set "
                         f"{entry.get('feature_set')}, {entry.get('num_features')} features; this build has "
                         f"{feature_set_id()}, {len(_core.feature_names())} features): retrain it with "
                         "scripts/train_pretrained_model.py, or tune with cost_model='scratch'")
    return path
