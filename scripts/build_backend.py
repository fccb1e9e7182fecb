"""setuptools' build backend, with the xgboost-cpu package added to the build's requirements when
AUTOSCHED_WHEEL=1: the self-contained wheel links the library that package ships (see setup.py)."""
import os

from setuptools import build_meta as _orig
from setuptools.build_meta import *  # noqa: F401,F403

_XGBOOST = "xgboost-cpu>=2.1,<4"  # setup.py XGBOOST_REQUIREMENT


def _extra():
    return [_XGBOOST] if os.environ.get("AUTOSCHED_WHEEL", "0") == "1" else []


def get_requires_for_build_wheel(config_settings=None):
    return _orig.get_requires_for_build_wheel(config_settings) + _extra()


def get_requires_for_build_editable(config_settings=None):
    return _orig.get_requires_for_build_editable(config_settings) + _extra()
