"""The README's tour and the tutorial notebooks run as written (the tuning tutorial with a small budget:
AUTOSCHED_TUTORIAL_TRIALS=8, unless the environment sets it)."""
import os
import json
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _run(code, name):
    exec(compile(code, name, "exec"), {"__name__": "__docs__"})


def test_readme_tour_runs():
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert blocks, "README has no python example"
    _run("\n".join(blocks), "README.md")


@pytest.mark.parametrize("notebook", sorted((ROOT / "tutorials").glob("*.ipynb")), ids=lambda p: p.name)
def test_tutorial_runs(notebook, monkeypatch):
    monkeypatch.setenv("AUTOSCHED_TUTORIAL_TRIALS", os.environ.get("AUTOSCHED_TUTORIAL_TRIALS", "8"))
    cells = json.loads(notebook.read_text())["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    _run(code, notebook.name)
