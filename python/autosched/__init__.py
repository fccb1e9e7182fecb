"""autosched: an auto-scheduler for tensor programs with a C++ core."""
import os as _os

# Running from a CMake build tree instead of an installed package: point
# AUTOSCHED_BUILD_DIR at the folder holding _core*.so.
if _os.environ.get("AUTOSCHED_BUILD_DIR"):
    __path__.append(_os.environ["AUTOSCHED_BUILD_DIR"])  # noqa: F821

from . import _core  # noqa: E402

__version__ = "0.1.0"
