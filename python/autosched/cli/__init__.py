"""The command line (`autosched` / `python -m autosched`: commands.py), its file checks (files.py) and the
demo (demo.py, `python -m autosched.demo`)."""
from .commands import main

__all__ = ["main"]
