"""The command line's shapes: `--shape NAME=D1,D2,...` (an input's shape) or `--shape NAME=N` (a dynamic
dimension's value), and tvmc's `--input-shapes "data:[1,3,224,224] mask:[1,128]"` (space-separated
NAME:[D1,D2,...]), which gives the same as `--shape data=1,3,224,224 --shape mask=1,128`."""
import re

from .files import CommandError

INPUT_SHAPES_FORM = '"NAME:[D1,D2,...] NAME:[D1,...]" (space-separated, e.g. "data:[1,3,224,224] mask:[1,128]")'

# One NAME:[D1,D2,...] of --input-shapes; a name may hold colons ("input:0:[1,8]" names "input:0").
_INPUT_SHAPE = re.compile(r"\s*([^\s\[\]]+?)\s*:\s*\[([^\[\]]*)\]\s*")


def _dims(text):
    """(d1, d2, ...) of "d1,d2,..." with positive integers, or None."""
    try:
        values = tuple(int(d) for d in text.split(","))
    except ValueError:
        return None
    return values if values and all(v >= 1 for v in values) else None


def parse_shape(item):
    """("data", (1, 3, 224, 224)) of --shape "data=1,3,224,224"."""
    name, sep, dims = item.partition("=")
    values = _dims(dims)
    if not sep or not name or values is None:
        raise CommandError(f"--shape {item!r}: expected NAME=D1,D2,... (an input) or NAME=N (a dimension) with "
                           "positive integers")
    return name, values


def parse_input_shapes(text):
    """[("data", (1, 3, 224, 224)), ("mask", (1, 128))] of --input-shapes "data:[1,3,224,224] mask:[1,128]"."""
    shapes, pos = [], 0
    while pos < len(text):
        m = _INPUT_SHAPE.match(text, pos)
        values = _dims(m[2]) if m else None
        if values is None:
            raise CommandError(f"--input-shapes {text!r}: expected {INPUT_SHAPES_FORM}, with positive integers")
        shapes.append((m[1], values))
        pos = m.end()
    if not shapes:
        raise CommandError(f"--input-shapes {text!r}: expected {INPUT_SHAPES_FORM}")
    return shapes


def shape_dict(shape_items, input_shapes_items):
    """{name: dims} of the --shape and --input-shapes options; a name given two values is refused."""
    given = [(f"--shape {item}", *parse_shape(item)) for item in shape_items or ()]
    for text in input_shapes_items or ():
        given += [(f"--input-shapes {name}:[{','.join(map(str, dims))}]", name, dims)
                  for name, dims in parse_input_shapes(text)]
    out, origin = {}, {}
    for option, name, dims in given:
        if name in out and out[name] != dims:
            raise CommandError(f"'{name}' is given two shapes: {origin[name]} and {option}; give one")
        out[name], origin[name] = dims, option
    return out
