"""The command line's files (autosched.cli): the checks that end a command with one message before any work
when a file to read is missing or a folder, or a file to write has no folder to go in; and --inputs, a .npz of
the model's inputs by name, each converted to the input's dtype only where no value changes.

The conversion of an --inputs array to the dtype the model takes (docs/deploy.md):
  - the same dtype, or a cast numpy calls 'safe' (int32 -> int64, float16 -> float32, bool -> any): taken;
  - a cast numpy calls 'same_kind' (float64 -> float32, int64 -> int32, int64 -> float32): taken when the values
    survive it: integers stay within the dtype's range and exact, floats stay finite (a float rounds to the
    model's precision, which the model computes in anyway);
  - anything else (complex -> float drops the imaginary part, float -> int truncates, int -> bool): refused.
"""
import os
import pickle
import zipfile
import zlib

import numpy as np

from ..core.dtypes import numpy_dtype


class CommandError(Exception):
    """A problem with the command's input, reported as one message."""


def check_input_file(path, what):
    """Ends the command when `path` (the file named by `what`, e.g. "--log") is missing or a folder."""
    if not os.path.exists(path):
        raise CommandError(f"{what} '{path}' does not exist")
    if os.path.isdir(path):
        raise CommandError(f"{what} '{path}' is a directory, not a file")


def check_output_path(path, what):
    """Ends the command before any work when the file `what` names cannot be written: `path` is a folder, or
    the folder it goes in does not exist."""
    if os.path.isdir(path):
        raise CommandError(f"{what} '{path}' is a directory; give the file to write, e.g. "
                           f"{os.path.join(path, 'model.so') if what == '-o' else os.path.join(path, 'out')}")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise CommandError(f"{what} '{path}': the directory '{os.path.dirname(path)}' does not exist (create "
                           "it first)")
    if not os.access(folder, os.W_OK):
        raise CommandError(f"{what} '{path}': the directory '{os.path.dirname(path) or '.'}' is not writable")


def count_records(log):
    """The complete lines of a record log (0 when there is none): its records, as tuning appends them."""
    try:
        with open(log, "rb") as f:
            return sum(1 for line in f if line.endswith(b"\n") and line.strip())
    except OSError:
        return 0


def _value_change(array, dtype):
    """Why converting `array` to `dtype` would change its values ('' when it would not)."""
    source = array.dtype
    if source == dtype or np.can_cast(source, dtype, "safe"):
        return ""
    if source.kind == "c" and dtype.kind != "c":
        return "the imaginary part would be dropped"
    if not np.can_cast(source, dtype, "same_kind"):
        return {"f": "the fractions would be truncated"}.get(source.kind, "its values would change")
    with np.errstate(over="ignore", invalid="ignore"):  # what overflows is told below
        converted = array.astype(dtype)
    if source.kind in "fc":  # float64 -> float32: rounding is fine, overflow to inf is not
        if np.any(np.isfinite(array) & ~np.isfinite(converted)):
            return f"values beyond {dtype}'s range would become inf"
        return ""
    if not np.array_equal(converted.astype(source), array):
        return f"values outside what {dtype} holds exactly would change"
    return ""


def convert_input(path, name, array, dtype, shape):
    """The --inputs array `name` as the model's input of `dtype` and `shape`; a value-changing conversion or
    another shape ends the command, naming both."""
    if dtype.name == "bfloat16" and array.dtype == np.dtype("V2"):
        array = array.view(dtype)  # .npz has no bfloat16: an ml_dtypes array reads back as its raw 2 bytes
    have, want = f"{array.dtype} {tuple(array.shape)}", f"{dtype} {tuple(shape)}"
    if tuple(array.shape) != tuple(shape):
        raise CommandError(f"--inputs '{path}': '{name}' is {have}; the model takes {want}")
    why = _value_change(array, dtype)
    if why:
        raise CommandError(f"--inputs '{path}': '{name}' is {have}; the model takes {want}, and converting it "
                           f"would change it ({why}): save '{name}' as {dtype}")
    return array.astype(dtype, copy=False)


def read_inputs(path, names, signature):
    """The model's inputs (`names`, with dtypes and shapes from `signature`) from the .npz at `path`."""
    check_input_file(path, "--inputs")
    example = f"np.savez('{os.path.splitext(os.path.basename(path))[0]}.npz', {names[0] if names else 'x'}=...)"
    with open(path, "rb") as f:
        magic = f.read(6)
    if magic == b"\x93NUMPY":  # a .npy: one array without a name
        raise CommandError(f"--inputs '{path}' is a .npy file (one array without a name); give a .npz of the "
                           f"inputs by name: {example}")
    if not magic.startswith(b"PK"):
        raise CommandError(f"--inputs '{path}' is not a .npz file (a zip of named arrays); write the inputs by "
                           f"name with {example}")
    try:
        data = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError, pickle.UnpicklingError, zipfile.BadZipFile) as e:
        raise CommandError(f"--inputs '{path}' is not a readable .npz file ({type(e).__name__}: {e}); write the "
                           f"inputs by name with {example}") from None
    with data:
        given = set(data.files)
        missing = [n for n in names if n not in given]
        if missing:
            raise CommandError(f"--inputs '{path}' lacks input(s) {missing} (it has {sorted(given)}); the "
                               f"model's inputs are {names}")
        extra = sorted(given - set(names))
        if extra:
            raise CommandError(f"--inputs '{path}' has array(s) {extra} that are no input of the model "
                               f"(its inputs are {names})")
        arrays = []
        for n in names:
            try:
                array = data[n]
            except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error) as e:
                raise CommandError(f"--inputs '{path}': array '{n}' cannot be read ({type(e).__name__}: "
                                   f"{e})") from None
            arrays.append(convert_input(path, n, array, numpy_dtype(signature.dtype(n)), signature.shape(n)))
        return arrays
