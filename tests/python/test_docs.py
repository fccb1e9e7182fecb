"""The README's tour and the tutorial notebooks run as written (the tuning tutorials with a small budget:
AUTOSCHED_TUTORIAL_TRIALS=8, unless the environment sets it). The notebooks run in a Jupyter kernel (nbclient),
as a reader runs them; their outputs are then read: no error, error counts that agree with the tuning summary,
a bounded size (no flood of progress lines or tables), and no stray value echoed by a cell."""
import json
import os
import pathlib
import re

import pytest

import autosched as ans

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "tutorials").glob("*.ipynb"))
# The most text a tutorial may print at the tests' budget (characters over all cells, images aside).
MAX_OUTPUT_CHARS = 40_000


def _run(code, name):
    exec(compile(code, name, "exec"), {"__name__": "__docs__"})


def test_readme_tour_runs():
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert blocks, "README has no python example"
    _run("\n".join(blocks), "README.md")


def _texts(nb):
    """(cell index, text) of every text output."""
    out = []
    for i, cell in enumerate(nb.cells):
        for o in cell.get("outputs") or []:
            if o.get("output_type") == "stream":
                out.append((i, o.get("text", "")))
            elif o.get("output_type") in ("execute_result", "display_data"):
                out.append((i, o.get("data", {}).get("text/plain", "")))
            elif o.get("output_type") == "error":
                out.append((i, "\n".join(o.get("traceback", []))))
    return out


def check_outputs(nb):
    """The reasons a notebook's outputs read wrong (empty when they read well)."""
    problems = []
    texts = _texts(nb)
    everything = "\n".join(t for _, t in texts)
    for i, cell in enumerate(nb.cells):
        for o in cell.get("outputs") or []:
            if o.get("output_type") == "error":
                problems.append(f"cell {i}: {o.get('ename')}: {o.get('evalue')}")
            if o.get("output_type") == "execute_result" and not o.get("data", {}).get("image/png"):
                problems.append(f"cell {i}: echoes a value: {o.get('data', {}).get('text/plain', '')[:80]}")
    # Error counts: a summary's "errors" row (verbose 2) or its "Tuned ..." line ("; 3 failed (runtime 2, ...)",
    # no such clause: none failed) and any "N with an error" line of the same tuning must agree.
    summaries = re.findall(r"^\| errors\s*\| (.*)$", everything, re.M)
    counted = [sum(int(n) for n in re.findall(r"\b[a-z_]+ (\d+)", s)) for s in summaries]
    for line in re.findall(r"^Tuned .*$", everything, re.M):
        failed = re.search(r"; (\d+) failed \(", line)
        counted.append(int(failed[1]) if failed else 0)
    for m in re.finditer(r"(\d+) records, (\d+) with an error", everything):
        if int(m[2]) not in counted:
            problems.append(f"'{m[0]}' contradicts the summaries' error counts {counted}")
    if len(everything) > MAX_OUTPUT_CHARS:
        problems.append(f"{len(everything)} characters of output (more than {MAX_OUTPUT_CHARS})")
    if re.search(r"<[\w.]+ (object )?at 0x[0-9a-f]+>", everything):
        problems.append("an object's default repr (<... at 0x...>) is printed")
    if "\r" in everything and "it/s" in everything:
        problems.append("a text progress bar was captured")
    return problems


def test_the_output_check_finds_what_it_looks_for():
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="| errors      | none\n64 records, 64 with an "
                                                                           "error\n"),
                    nbformat.v4.new_output("execute_result", data={"text/plain": "<torch._C.Generator at 0x7f>"},
                                           execution_count=1)]
    nb.cells = [cell]
    problems = check_outputs(nb)
    assert any("contradicts" in p for p in problems) and any("echoes" in p for p in problems), problems
    assert any("default repr" in p for p in problems)
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="| errors      | runtime 2, compile 1\n"
                                                                           "9 records, 3 with an error\n")]
    assert check_outputs(nb) == []
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="x" * (MAX_OUTPUT_CHARS + 1))]
    assert any("characters of output" in p for p in check_outputs(nb))


def test_committed_notebooks_are_normalised_and_read_well():
    """As committed (with the outputs of a real run): nbformat 4.5 with cell ids, every code cell run."""
    nbformat = pytest.importorskip("nbformat")
    for path in NOTEBOOKS:
        nb = nbformat.read(str(path), as_version=4)
        nbformat.validate(nb)
        assert (nb.nbformat, nb.nbformat_minor) == (4, 5), path.name
        assert all(c.get("id") for c in nb.cells), path.name
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert all(c.execution_count for c in code), f"{path.name}: committed without running every cell"
        assert check_outputs(nb) == [], (path.name, check_outputs(nb))


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_tutorial_runs(notebook, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    monkeypatch.setenv("AUTOSCHED_TUTORIAL_TRIALS", os.environ.get("AUTOSCHED_TUTORIAL_TRIALS", "8"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (os.path.dirname(os.path.dirname(ans.__file__)),
                                                                 os.environ.get("PYTHONPATH")) if p))
    nb = nbformat.read(str(notebook), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    nbclient.NotebookClient(nb, timeout=1200, kernel_name="python3",
                            resources={"metadata": {"path": str(notebook.parent)}}).execute()
    assert check_outputs(nb) == [], check_outputs(nb)
