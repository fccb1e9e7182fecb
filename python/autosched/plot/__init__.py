"""Plots of record logs and tuning results: tuning curves and where tuning time went (matplotlib is imported
when one is drawn). The functions live in _curves.py; this module shows only them."""
from ._curves import curves_of_log, time_split, tuning_curve

__all__ = ["tuning_curve", "time_split", "curves_of_log"]
