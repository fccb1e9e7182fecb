"""What the Python tests share.

- The helper modules beside the tests (schedule_helpers: the shared DAGs, matmul builders included, schedules
  and the check against the evaluator; process_helpers; op_cases; ...) import as top-level modules.
- ``@pytest.mark.needs_llvm`` (or ``pytestmark = pytest.mark.needs_llvm``): skipped when autosched was built
  without the LLVM backend.
- Fixtures ``builder`` and ``runner``: a LocalBuilder and a LocalRunner for quick measurements, one per test
  module (the runner's worker processes end with the module). A module that needs other limits defines its
  own fixtures of these names.
"""
import pathlib
import sys

import pytest

HERE = str(pathlib.Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import autosched as ans  # noqa: E402
from autosched import _core  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line("markers", "needs_llvm: skipped when autosched was built without the LLVM backend")


def pytest_runtest_setup(item):
    if item.get_closest_marker("needs_llvm") is not None and not _core.has_llvm():
        pytest.skip("built without the LLVM backend")


@pytest.fixture(scope="module")
def builder():
    return ans.LocalBuilder(n_parallel=2)


@pytest.fixture(scope="module")
def runner():
    r = ans.LocalRunner(timeout=5, min_repeat_ms=1)
    yield r
    r.close()
