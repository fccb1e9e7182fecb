"""House rules that keep the code readable: every C++ file is clang-formatted
with the repository's .clang-format, and no source file grows past 800 lines."""
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
MAX_LINES = 800


def _tracked(*patterns):
    out = subprocess.run(["git", "ls-files", *patterns], cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip("not a git checkout")
    return [ROOT / p for p in out.stdout.split()]


def test_cpp_is_clang_formatted():
    clang_format = shutil.which("clang-format")
    assert clang_format, "clang-format is missing: scripts/install_deps.sh installs it"
    files = _tracked("cpp/*.cc", "cpp/*.h", "bindings/*.cc", "bindings/*.h", "tests/cpp/*.cc", "tests/cpp/*.h")
    result = subprocess.run([clang_format, "--dry-run", "-Werror", *map(str, files)], capture_output=True, text=True)
    assert result.returncode == 0, "run clang-format -i on:\n" + result.stderr[:3000]


def test_source_files_stay_small():
    files = _tracked("cpp/*", "bindings/*", "python/*.py", "tests/*.py", "tests/*.cc", "bench/*.py")
    too_long = [f"{p.relative_to(ROOT)}: {n} lines" for p in files
                if p.suffix in {".cc", ".h", ".py"} and (n := len(p.read_text().splitlines())) > MAX_LINES]
    assert not too_long, "split these files:\n" + "\n".join(too_long)
