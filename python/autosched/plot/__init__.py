"""Plots of record logs: tuning curves and where tuning time went (matplotlib is imported when one is drawn)."""
from .curves import *  # noqa: F401,F403
from .curves import __all__  # noqa: F401
