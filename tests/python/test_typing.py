"""The public modules' type hints hold (mypy, configured in pyproject.toml, over the modules it lists), and the
package ships them (py.typed), so a user's type checker flags a wrong call."""
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
pytest.importorskip("mypy")


def _mypy(*args, cwd=ROOT):
    env = dict(os.environ, MYPYPATH=str(ROOT / "python"))
    return subprocess.run([sys.executable, "-m", "mypy", *args], capture_output=True, text=True, timeout=600,
                          cwd=cwd, env=env)


def test_public_modules_type_check():
    proc = _mypy("--config-file", str(ROOT / "pyproject.toml"), "--no-incremental")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Success" in proc.stdout


def test_a_users_wrong_call_is_flagged(tmp_path):
    assert (ROOT / "python" / "autosched" / "py.typed").exists()
    script = tmp_path / "user.py"
    script.write_text("import autosched.records as r\nfrom autosched.core.text import format_time\n"
                      "n: int = format_time(3.0)\nr.distill(42)\n")
    proc = _mypy("--ignore-missing-imports", "--follow-imports=silent", "--no-incremental", str(script),
                 cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert 'user.py:3: error: Incompatible types in assignment (expression has type "str"' in proc.stdout, proc.stdout
    assert "user.py:4: error: Argument 1 to \"distill\"" in proc.stdout, proc.stdout
