"""Import cycles in python/autosched/: every import of a package module, at the top of a file or inside a
function, is an edge of the module graph. No cycle may pass through any module of the package, no module of
graph/ or frontends/ may import the root package (it imports every subpackage, so that closes a loop through
all of them), and no module may import a package module inside a function (the way a cycle hides)."""
import ast
import importlib.machinery
import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2] / "python"
PACKAGE = "autosched"
CHECKED = ("autosched.graph", "autosched.frontends")


def _module_name(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _sources():
    """{module name: source} of the package's Python files, and the names of its packages."""
    paths = {_module_name(p): p for p in (ROOT / PACKAGE).rglob("*.py")}
    return {m: p.read_text() for m, p in paths.items()}, {m for m, p in paths.items() if p.name == "__init__.py"}


def _is_module(name, sources):
    if name in sources:
        return True
    # A compiled extension such as autosched._core: built into the source tree, or only into the installed
    # package (the test command installs it and tests that).
    path = ROOT.joinpath(*name.split("."))
    if any(path.with_name(path.name + suffix).exists() for suffix in importlib.machinery.EXTENSION_SUFFIXES):
        return True
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    return spec is not None and isinstance(spec.loader, importlib.machinery.ExtensionFileLoader)


def _targets(module, node, sources, packages):
    """The package modules an import statement of `module` loads (a name imported from a package that is not
    a submodule of it is the package's own __init__)."""
    if isinstance(node, ast.Import):
        out = []
        for name in (a.name for a in node.names if a.name.split(".")[0] == PACKAGE):
            while not _is_module(name, sources) and "." in name:
                name = name.rpartition(".")[0]
            out.append(name)
        return out
    if node.level:
        base = (module if module in packages else module.rpartition(".")[0]).split(".")
        source = ".".join(base[:len(base) - node.level + 1] + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    if source.split(".")[0] != PACKAGE:
        return []
    return list(dict.fromkeys(f"{source}.{a.name}" if _is_module(f"{source}.{a.name}", sources) else source
                              for a in node.names))


def _with_parents(module, target):
    """`target` and the packages Python imports before it, but not those `module` is in (being imported)."""
    parts = target.split(".")
    out = {".".join(parts[:n]) for n in range(1, len(parts))}
    return {p for p in out if not (module == p or module.startswith(p + "."))} | {target}


def _type_checking_only(test):
    """Whether an `if` test is `TYPE_CHECKING` or `typing.TYPE_CHECKING`."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def import_graph(sources=None, packages=None):
    """(edges {module: {imported modules}}, imports inside functions [(module, line, target)]) of the package,
    or of the modules `sources` ({name: source text}) of which `packages` are packages."""
    if sources is None:
        sources, packages = _sources()
    edges, in_functions = {}, []

    def visit(module, node, in_function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking_only(child.test):
                continue  # `if TYPE_CHECKING:` imports names for annotations; nothing runs them
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                for target in _targets(module, child, sources, packages):
                    if target == module:
                        continue
                    edges.setdefault(module, set()).update(_with_parents(module, target))
                    if in_function:
                        in_functions.append((module, child.lineno, target))
            visit(module, child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    for module, text in sources.items():
        visit(module, ast.parse(text, module), False)
    return edges, in_functions


def cycles(edges, skip=()):
    """The strongly connected components of more than one module (Tarjan), leaving out the modules `skip`."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def connect(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w in skip:
                continue
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index and v not in skip:
            connect(v)
    return found


def _checked(module):
    return any(module == c or module.startswith(c + ".") for c in CHECKED)


def test_no_import_cycle_in_the_package():
    edges, in_functions = import_graph()
    # The root package imports every subpackage, so a module that imports it closes a loop through all of them:
    # the cycles are looked for without the root package, and the modules that import it are listed apart
    # (only scripts such as demo may).
    own = cycles(edges, skip={PACKAGE})
    assert not own, f"import cycles: {own}"
    root_importers = sorted(m for m, targets in edges.items() if PACKAGE in targets and m != PACKAGE)
    for module in root_importers:
        print(f"imports the root package '{PACKAGE}': {module}")
    checked_root_importers = [m for m in root_importers if _checked(m)]
    assert not checked_root_importers, f"these import the root package '{PACKAGE}': {checked_root_importers}"
    hidden = [f"{m}:{line} -> {t}" for m, line, t in in_functions]
    assert not hidden, "imports of package modules inside functions (import them at the top):\n" + "\n".join(hidden)


def test_the_cycle_finder_finds_cycles():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    assert cycles(edges) == [["a", "b", "c"]]
    assert cycles(edges, skip={"b"}) == []


def test_imports_resolve_to_modules():
    """Relative and absolute imports, of names and of submodules, at the top and inside functions."""
    sources = {
        "autosched": "from . import graph\nfrom .graph import Graph\n",
        "autosched.te": "from .graph.errors import GraphError\n",
        "autosched.graph": "from .ir import Graph\nfrom . import registry\n",
        "autosched.graph.ir": "import numpy\nfrom .. import te\nfrom .errors import GraphError\n"
                              "def evaluate():\n    from .registry import get\n",
        "autosched.graph.errors": "",
        "autosched.graph.registry": "import autosched.graph.ir\nfrom autosched import graph, te\n",
    }
    edges, in_functions = import_graph(sources, {"autosched", "autosched.graph"})
    assert edges["autosched"] == {"autosched.graph"}
    assert edges["autosched.graph"] == {"autosched.graph.ir", "autosched.graph.registry"}
    assert edges["autosched.graph.ir"] == {"autosched.te", "autosched.graph.errors", "autosched.graph.registry"}
    assert edges["autosched.graph.registry"] == {"autosched.graph.ir", "autosched.graph", "autosched.te"}
    assert edges["autosched.te"] == {"autosched.graph", "autosched.graph.errors"}  # the package, then the module
    assert in_functions == [("autosched.graph.ir", 5, "autosched.graph.registry")]
    assert cycles(edges) == [["autosched.graph", "autosched.graph.ir", "autosched.graph.registry", "autosched.te"]]
    assert cycles(edges, skip={"autosched.te"}) == [
        ["autosched.graph", "autosched.graph.ir", "autosched.graph.registry"]]
