"""Measurement: builders, runners and measure() on this machine's workers (local.py), and RayRunner, which
measures on a Ray cluster's devices (ray_runner.py). Stands on core and search."""
from .local import *  # noqa: F401,F403
from .local import __all__ as _local_names
from .ray_runner import RayRunner

__all__ = list(_local_names) + ["RayRunner"]
