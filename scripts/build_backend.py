"""setuptools' build backend, with more requirements for the self-contained wheel (AUTOSCHED_WHEEL=1):
the xgboost-cpu package, whose library the wheel links (see setup.py), and CMake and Ninja from PyPI, so
the isolated build does not depend on which `cmake` the PATH finds first."""
import os

from setuptools import build_meta as _orig
from setuptools.build_meta import *  # noqa: F401,F403

_XGBOOST = "xgboost-cpu>=2.1,<3.3"  # setup.py XGBOOST_REQUIREMENT


def _extra():
    return [_XGBOOST, "cmake>=3.20", "ninja"] if os.environ.get("AUTOSCHED_WHEEL", "0") == "1" else []


def get_requires_for_build_wheel(config_settings=None):
    return _orig.get_requires_for_build_wheel(config_settings) + _extra()


def get_requires_for_build_editable(config_settings=None):
    return _orig.get_requires_for_build_editable(config_settings) + _extra()
