"""The C++ core's layers: every #include in cpp/ names a file of its own area or of an area below it, in the
order of docs/architecture.md. An include that reaches upward (the task layer loading the OpenCL runtime,
the runtime calling code generation) fails here with the file and the line."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]

# Bottom to top.
LAYERS = ["support", "ir", "dag", "task", "schedule", "lower", "runtime", "codegen", "cost_model", "measure",
          "search", "tune"]


def test_includes_in_cpp_never_reach_a_layer_above_their_own():
    rank = {name: i for i, name in enumerate(LAYERS)}
    areas = sorted(p.name for p in (ROOT / "cpp").iterdir() if p.is_dir())
    assert areas == sorted(LAYERS), f"cpp/ has areas {areas}: place each in LAYERS"
    upward = []
    for path in sorted((ROOT / "cpp").rglob("*")):
        if path.suffix not in (".h", ".cc"):
            continue
        area = path.relative_to(ROOT / "cpp").parts[0]
        for number, line in enumerate(path.read_text().splitlines(), 1):
            m = re.match(r'\s*#include "([a-z_]+)/', line)
            if m and m.group(1) in rank and rank[m.group(1)] > rank[area]:
                upward.append(f"{path.relative_to(ROOT)}:{number}: {area} includes {m.group(1)}")
    assert not upward, "\n".join(upward)
