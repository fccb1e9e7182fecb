"""The cost model shipped in the package, pretrained on the project's own records.

    path = pretrained.model_path("llvm")      # the model file of llvm targets (None: none shipped)
    info = pretrained.manifest("llvm")        # corpus size, CPUs, feature set, date, held-out accuracy
    model = ans.XGBModel(pretrained=True)     # starts from it (cost_model.XGBModel)

scripts/train_pretrained_model.py trains it on record logs that scripts/make_cost_model_records.py tunes (the
tasks of the model suite's five families and of the operator library; the corpus is kept in
tests/records/corpus/) and writes it into autosched/data/ with its manifest, data/pretrained_models.json. Its
features are relative to the target's hardware parameters: a model of one CPU's records serves every llvm host. The model file's name carries the feature set
it was trained on (feature_set_id()): a build whose features differ does not use it (the tuner falls back to a
model learning from scratch, with a PretrainedModelWarning). The manifest holds the file's SHA-256 too: a file
that does not match it (damaged or edited since it was written) is never handed to XGBoost, whose reader trusts
the indices of the trees; nor is a file named by a damaged manifest.
"""
import hashlib
import json
import os

from .. import _core

__all__ = ["PretrainedModelWarning", "feature_set_id", "file_sha256", "manifest", "model_path", "DATA_DIR",
           "MANIFEST"]

DATA_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")  # autosched/data
MANIFEST = os.path.join(DATA_DIR, "pretrained_models.json")


class PretrainedModelWarning(UserWarning):
    """The shipped cost model cannot be used (missing, damaged, or trained on other features): the model learns
    from the session's measurements alone."""


def feature_set_id():
    """A short hash of the feature names in row order: models trained on one feature set read only it."""
    return hashlib.sha256("\n".join(_core.feature_names()).encode()).hexdigest()[:12]


def file_sha256(path):
    """The SHA-256 of a file's bytes, in hex: what the manifest's "sha256" of a model file holds."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


_REINSTALL = "reinstall autosched (or retrain with scripts/train_pretrained_model.py), or tune with " \
             "cost_model='scratch'"


def _damaged_manifest(why):
    return ValueError(f"the pretrained models' manifest '{MANIFEST}' is damaged ({why}): {_REINSTALL}")


def _read_manifest():
    try:
        with open(MANIFEST) as f:
            doc = json.load(f)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as err:
        raise ValueError(f"the pretrained models' manifest '{MANIFEST}' cannot be read: {err}") from None
    if not isinstance(doc, dict):
        raise _damaged_manifest(f"it holds a JSON {type(doc).__name__}, not an object of target kinds")
    return doc


def manifest(kind="llvm"):
    """What the shipped model of targets of `kind` was trained on (a dict), or None when none is shipped.
    ValueError when the manifest is damaged."""
    entry = _read_manifest().get(kind)
    if entry is not None and not isinstance(entry, dict):
        raise _damaged_manifest(f"the entry of '{kind}' is a JSON {type(entry).__name__}, not an object")
    return entry


def model_path(kind="llvm", check=True):
    """The shipped model file of targets of `kind`, or None when none is shipped. ValueError when the manifest is
    damaged or the file is missing. With check=True (what XGBModel(pretrained=True) does) a model trained on
    another feature set than this build's, or whose bytes are not those the manifest's SHA-256 names (damaged
    since it was written), raises ValueError saying so."""
    entry = manifest(kind)
    if entry is None:
        return None
    name = entry.get("file")
    if not isinstance(name, str) or not name or os.path.basename(name) != name:
        raise _damaged_manifest(f"the entry of '{kind}' names no model file in '{DATA_DIR}' (its 'file' is "
                                f"{name!r})")
    path = os.path.join(DATA_DIR, name)
    if not os.path.isfile(path):
        raise ValueError(f"the pretrained cost model of '{kind}' targets, '{path}', is missing from the package")
    if not check:
        return path
    if entry.get("feature_set") != feature_set_id():
        raise ValueError(f"the pretrained cost model '{path}' was trained on other features (feature set "
                         f"{entry.get('feature_set')}, {entry.get('num_features')} features; this build has "
                         f"{feature_set_id()}, {len(_core.feature_names())} features): retrain it with "
                         "scripts/train_pretrained_model.py, or tune with cost_model='scratch'")
    expected = entry.get("sha256")
    if not isinstance(expected, str):
        raise _damaged_manifest(f"the entry of '{kind}' gives no 'sha256' of '{name}' to verify it by")
    try:
        actual = file_sha256(path)
    except OSError as err:
        raise ValueError(f"the pretrained cost model '{path}' cannot be read: {err}") from None
    if actual != expected.lower():
        raise ValueError(f"the pretrained cost model '{path}' is damaged: its SHA-256 is {actual[:12]}..., the "
                         f"manifest's {expected[:12]}...: {_REINSTALL}")
    return path
