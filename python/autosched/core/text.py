"""Words and numbers as autosched prints them: durations, task names, and speed comparisons phrased one way
everywhere.

    format_time(0.00413)                          -> "4.13 ms"
    format_duration_column([4.6e-6, 1.7e-5])      -> ("us", ["4.600", "17.00"])
    short_task_name("global_avg_pool2d_nchwc_layout_transform_flatten 1x32", 30)
                                                  -> "global_avg_pool2d..flatten 1x32"
    compare_speed(0.0058, 0.001, "onnxruntime")   -> "autosched is 5.8x slower than onnxruntime"
    compare_speed(0.001, 0.0013, "numpy")         -> "autosched is 1.3x faster than numpy"

Numbers are never printed in exponent notation: a duration takes the unit (ns, us, ms, s) that keeps it readable,
and a column of durations one unit for all its rows.
"""
import math
from typing import List, Optional, Sequence, Tuple

__all__ = ["format_time", "format_duration_column", "format_durations", "duration_unit", "plain_number",
           "short_task_name", "compare_speed", "parse_duration"]

# (unit, seconds per unit), smallest first
_UNITS = (("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("s", 1.0))


def plain_number(value: float, digits: int = 4) -> str:
    """`value` with `digits` significant digits in plain notation (never "1e+03"): 1234.5 -> "1235",
    0.0123 -> "0.01230"."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    decimals = digits - 1 - int(math.floor(math.log10(abs(value))))
    return f"{value:.{max(0, decimals)}f}"


def duration_unit(seconds: Sequence[Optional[float]], digits: int = 4) -> Tuple[str, float]:
    """(unit, seconds per unit) in which the largest of `seconds` (None ignored), rounded to `digits`
    significant digits, reads as 1 to 1000."""
    known = [abs(s) for s in seconds if s is not None and math.isfinite(s)]
    largest = max(known, default=0.0)
    for unit, scale in _UNITS[:-1]:
        if largest < scale * (1000 - 0.5 * 10 ** (3 - digits)):  # 999.97 us reads 1.000 ms, not 1000 us
            return unit, scale
    return _UNITS[-1]


def format_duration_column(seconds: Sequence[Optional[float]]) -> Tuple[str, List[str]]:
    """One unit for a column of durations and each value in it: 4 significant digits (3 below 1 in that unit),
    "-" for None. Returns (unit, texts), e.g. ("us", ["4.635", "17.05", "-", "0.479"])."""
    unit, scale = duration_unit(seconds)
    texts = []
    for s in seconds:
        if s is None or not math.isfinite(s):
            texts.append("-")
        else:
            value = s / scale
            texts.append(plain_number(value, 4 if abs(value) >= 1 else 3))
    return unit, texts


def format_durations(*seconds: Optional[float]) -> List[str]:
    """Several durations of one sentence in one unit: format_durations(1.9e-4, 5.5e-4) -> ["191.0 us",
    "554.0 us"]."""
    unit, texts = format_duration_column(seconds)
    return [t if t == "-" else f"{t} {unit}" for t in texts]


def format_time(seconds: Optional[float]) -> str:
    """A duration with a readable unit: "812 ns", "3.2 us", "4.13 ms", "1.5 s"; "-" for None."""
    if seconds is None:
        return "-"
    unit, scale = duration_unit([seconds], 3)
    text = plain_number(seconds / scale, 3)
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return f"{text} {unit}"


def _shorten_op(op: str, room: int) -> str:
    """`op` in at most `room` characters: middle words dropped ("global_avg_pool2d..flatten"), else cut."""
    if len(op) <= room:
        return op
    parts = op.split("_")
    for head in range(len(parts) - 2, 0, -1):
        candidate = "_".join(parts[:head]) + ".." + parts[-1]
        if len(candidate) <= room:
            return candidate
    return op[:max(1, room - 2)] + ".."


def short_task_name(name: str, width: int = 40) -> str:
    """A task's name ("op_part SHAPE ...") in about `width` characters: the op part is abbreviated, the shape
    (everything after the first space) is always kept whole, since it is what tells tasks apart."""
    if len(name) <= width:
        return name
    op, space, shape = name.partition(" ")
    if not space:
        return _shorten_op(name, width)
    return f"{_shorten_op(op, max(12, width - len(shape) - 1))} {shape}"


def compare_speed(ours: float, theirs: float, peer: str, name: str = "autosched", tie: float = 0.02) -> str:
    """How `name` (taking `ours` seconds) compares with `peer` (taking `theirs`), always as the larger time
    over the smaller one: "autosched is 5.8x slower than onnxruntime", "... 1.3x faster than ...", or "...
    as fast as ..." within `tie` (2%)."""
    if not (ours > 0 and theirs > 0):
        raise ValueError(f"compare_speed: times must be positive, got {ours!r} and {theirs!r}")
    ratio = max(ours, theirs) / min(ours, theirs)
    if ratio <= 1 + tie:
        return f"{name} is as fast as {peer} (within {100 * tie:.0f}%)"
    # Two significant digits, but two decimals below 1.1, where two digits would print a 2.3% gap as "1x".
    figure = f"{ratio:.2f}" if ratio < 1.1 else f"{ratio:.2g}" if ratio < 10 else f"{ratio:.0f}"
    return f"{name} is {figure}x {'faster' if ours < theirs else 'slower'} than {peer}"


def parse_duration(text) -> float:
    """Seconds of "90s", "30m", "1h", "1.5h" or a plain number of seconds; ValueError otherwise."""
    if isinstance(text, (int, float)):
        seconds = float(text)
    else:
        s = str(text).strip().lower()
        units = {"s": 1, "m": 60, "h": 3600}
        try:
            seconds = float(s[:-1]) * units[s[-1]] if s and s[-1] in units else float(s)
        except ValueError:
            raise ValueError(f"time budget {text!r}: expected a duration such as 90s, 30m, 1h or a number of "
                             "seconds") from None
    if not seconds > 0:
        raise ValueError(f"time budget {text!r}: must be positive")
    return seconds
