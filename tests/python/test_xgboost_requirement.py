"""The wheel's XGBoost requirement is the same in setup.py, the build backend and build_wheel.sh, and keeps out
the xgboost-cpu releases (3.3 on) whose libxgboost.so names itself libxgboost.so.3, a file the package does not
hold: a core linked against one fails to link its worker and to load."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _requirement(path, pattern):
    match = re.search(pattern, (ROOT / path).read_text())
    assert match, f"{path}: no xgboost-cpu requirement"
    return match.group(1)


def test_the_three_build_files_ask_for_the_same_xgboost_releases():
    setup = _requirement("setup.py", r'XGBOOST_REQUIREMENT = "([^"]+)"')
    assert _requirement("scripts/build_backend.py", r'_XGBOOST = "([^"]+)"') == setup
    assert _requirement("scripts/build_wheel.sh", r'pip install[^\n]*"(xgboost-cpu[^"]+)"') == setup


def test_releases_whose_library_names_another_file_are_kept_out():
    from packaging.specifiers import SpecifierSet
    spec = SpecifierSet(_requirement("setup.py", r'XGBOOST_REQUIREMENT = "xgboost-cpu([^"]+)"'))
    assert "3.2.0" in spec and "2.1.4" in spec
    assert "3.3.0" not in spec and "3.4.1" not in spec
