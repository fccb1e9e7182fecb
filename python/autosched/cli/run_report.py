"""What `autosched run` makes and prints besides its checks: the inputs not read from --inputs (--fill-mode),
a short summary of each output, the statistics of the timed repeats (--print-time) and the top classes of the
first output (--print-top), as TVM's `tvmc run` prints them."""
import numpy as np

from ..core.dtypes import is_float, numpy_dtype

SUMMARY_VALUES = 5  # the first values of an output shown in its summary


def fill_inputs(signature, mode="random", seed=0):
    """The arrays of the model's inputs: random (normal floats, integers 0 or 1), zeros or ones."""
    rng = np.random.default_rng(seed)
    arrays = []
    for name in signature.inputs:
        dtype, shape = numpy_dtype(signature.dtype(name)), tuple(signature.shape(name))
        if mode == "zeros":
            arrays.append(np.zeros(shape, dtype))
        elif mode == "ones":
            arrays.append(np.ones(shape, dtype))
        elif is_float(dtype):
            arrays.append(rng.standard_normal(shape).astype(dtype))
        else:
            arrays.append(rng.integers(0, 2, size=shape).astype(dtype))
    return arrays


def _number(value):
    return f"{value:.4g}" if isinstance(value, (float, np.floating)) else str(value)


def output_summary(label, output, with_values=True):
    """'output logits: float32 (4, 5)', then its first values: '[0.1234, -1.5, ...]'."""
    output = np.asarray(output)
    line = f"output {label}: {output.dtype} {tuple(output.shape)}"
    if not with_values or output.size == 0:
        return line
    values = [_number(v) for v in output.ravel()[:SUMMARY_VALUES].tolist()]
    return f"{line} [{', '.join(values)}{', ...' if output.size > SUMMARY_VALUES else ''}]"


def time_summary(times):
    """The mean, median, max, min and std in ms of the timed repeats (seconds), as tvmc prints them."""
    ms = np.asarray(times, dtype="float64") * 1e3
    heads = ("mean (ms)", "median (ms)", "max (ms)", "min (ms)", "std (ms)")
    values = (ms.mean(), np.median(ms), ms.max(), ms.min(), ms.std())
    return "\n".join(["Execution time summary:", "  ".join(f"{h:>12}" for h in heads),
                      "  ".join(f"{v:12.4f}" for v in values)])


def top_results(label, output, count):
    """The `count` highest scores of `output`'s first item (its first row where it has a batch dimension) and
    their class indices, highest first."""
    output = np.asarray(output)
    scores = (output[0] if output.ndim > 1 else output).ravel()
    count = min(count, scores.size)
    order = np.argsort(-scores.astype("float64"), kind="stable")[:count]
    where = f"item 0 of {label}" if output.ndim > 1 else label
    lines = [f"top {count} of {where} {tuple(output.shape)}:"]
    lines += [f"  class {int(i):>6}  score {_number(scores[i].item())}" for i in order]
    return "\n".join(lines)
