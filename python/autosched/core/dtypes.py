"""Dtype names, and the numpy dtypes of the arrays that cross into kernels.

autosched names a dtype as numpy does ("float32", "int8", "bool"). A bfloat16 array is a numpy array of
``ml_dtypes.bfloat16`` (numpy's name for it is "bfloat16"); ml_dtypes is an install requirement (onnx brings it
too). It is imported the first time a bfloat16 dtype is met, not when autosched is, as it takes long to load;
importing it teaches numpy the name, so ``np.dtype("bfloat16")`` works from then on.

    numpy_dtype("bfloat16")        -> dtype(bfloat16)    (imports ml_dtypes)
    dtype_name(np.float32)         -> "float32"
    is_float("bfloat16")           -> True
"""
import numpy as np

__all__ = ["FLOAT_DTYPES", "bfloat16", "numpy_dtype", "dtype_name", "is_float"]

FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")


def bfloat16():
    """The numpy scalar type of bfloat16 arrays (ml_dtypes.bfloat16); ImportError naming the fix without it."""
    try:
        import ml_dtypes
    except ImportError as e:
        raise ImportError("bfloat16 arrays are numpy arrays of ml_dtypes.bfloat16, and ml_dtypes is not "
                          "installed: pip install ml_dtypes") from e
    return ml_dtypes.bfloat16


def numpy_dtype(dtype):
    """The numpy dtype of a dtype name, numpy dtype or scalar type; "bfloat16" is ml_dtypes.bfloat16. TypeError
    for anything else."""
    if isinstance(dtype, str) and dtype == "bfloat16":
        return np.dtype(bfloat16())
    return np.dtype(dtype)


def dtype_name(dtype):
    """The name of a dtype given by name, numpy dtype or scalar type ("float32"); TypeError for anything else."""
    return numpy_dtype(dtype).name


def is_float(dtype):
    """Whether a dtype (by name, numpy dtype or scalar type) is a float type, bfloat16 included."""
    return (dtype if isinstance(dtype, str) else np.dtype(dtype).name) in FLOAT_DTYPES
