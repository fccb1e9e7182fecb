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


# The Python package's layers, bottom to top: a module imports modules of its own layer or of layers below, never
# above. The root package (__init__.py) assembles the public API from all of them; __main__.py runs the CLI.
PYTHON_LAYERS = [["_core", "core"], ["ops"], ["search"], ["measure"], ["records"], ["tune"], ["deploy"], ["graph"],
                 ["frontends"], ["plot"], ["cli", "demo"]]
PACKAGE = ROOT / "python" / "autosched"


def _imported_packages(path):
    """(line number, top-level package under autosched) of every import in a module of the package, except those
    in an `if TYPE_CHECKING:` block (names for annotations, never imported at run time)."""
    module_parts = path.relative_to(PACKAGE).with_suffix("").parts
    package_parts = module_parts[:-1]
    in_type_checking = False
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if re.match(r"if (typing\.)?TYPE_CHECKING:", line):
            in_type_checking = True
            continue
        if in_type_checking and line.strip() and not line[0].isspace():
            in_type_checking = False
        if in_type_checking:
            continue
        m = re.match(r"\s*from (\.+)([\w.]*) import (.+)", line)
        if m:
            up = len(m.group(1)) - 1
            if up > len(package_parts):
                continue
            target = list(package_parts[:len(package_parts) - up]) + [p for p in m.group(2).split(".") if p]
            if target:
                yield number, target[0]
            else:  # from <the package root> import names: each name is a module or package
                for name in m.group(3).split("#")[0].split(","):
                    yield number, name.split(" as ")[0].strip()
            continue
        m = re.match(r"\s*(?:import|from) autosched\.(\w+)", line)
        if m:
            yield number, m.group(1)


def test_python_modules_never_import_a_layer_above_their_own():
    rank = {name: i for i, names in enumerate(PYTHON_LAYERS) for name in names}
    top = sorted(p.stem if p.suffix == ".py" else p.name for p in PACKAGE.iterdir()
                 if (p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists())))
    placed = [name for name in top if name not in ("__init__", "__main__")]
    assert sorted(set(placed) - set(rank)) == [], "python/autosched/ has modules outside the layers: place each in " \
                                                   "a package of PYTHON_LAYERS"
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        own = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
        if own in ("__init__", "__main__"):
            continue
        for number, name in _imported_packages(path):
            if name in rank and rank[name] > rank[own]:
                upward.append(f"{path.relative_to(ROOT)}:{number}: {own} imports {name}")
    assert not upward, "\n".join(upward)


# Inside cpp/search, bottom to top: the rule interfaces and helpers both rule families use (rules/), the CPU
# and the GPU rules (side by side: neither includes the other), the expert schedules, the evolutionary
# search, and the policy that puts them together (search/ itself). search_params.h, the knobs every part
# reads, is below them all.
SEARCH_PARTS = {"rules": 0, "rules/cpu": 1, "rules/gpu": 1, "expert": 2, "evolution": 3, "": 4}
SEARCH_PARAMS = "search_params.h"


def search_part(relative):
    """The part of a path below cpp/search ("rules/cpu/init_rules.cc" -> "rules/cpu"), or None where the
    path is search_params.h (below every part)."""
    if relative == SEARCH_PARAMS:
        return None
    return relative.rpartition("/")[0]


def test_includes_in_cpp_search_follow_its_parts():
    search = ROOT / "cpp" / "search"
    parts = sorted({search_part(p.relative_to(search).as_posix()) for p in search.rglob("*.[hc]*")} - {None})
    assert parts == sorted(SEARCH_PARTS), f"cpp/search has folders {parts}: place each in SEARCH_PARTS"
    wrong = []
    for path in sorted(search.rglob("*")):
        if path.suffix not in (".h", ".cc"):
            continue
        own = search_part(path.relative_to(search).as_posix())
        for number, line in enumerate(path.read_text().splitlines(), 1):
            m = re.match(r'\s*#include "search/([a-z_/]+\.h)"', line)
            if not m:
                continue
            target = search_part(m.group(1))
            if target is None or target == own:
                continue
            where = f"{path.relative_to(ROOT)}:{number}: search/{own or '.'} includes search/{target or '.'}"
            if own is None:
                wrong.append(f"{where} ({SEARCH_PARAMS} includes nothing of search)")
            elif SEARCH_PARTS[target] >= SEARCH_PARTS[own]:
                wrong.append(where)
    assert not wrong, "\n".join(wrong)
