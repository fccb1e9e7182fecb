"""The command line (`autosched` / `python -m autosched`: commands.py; its options, with tvmc's spellings:
parser.py; --shape and --input-shapes: shapes.py; what `run` prints: run_report.py), its file checks (files.py)
and the demo (demo.py, `python -m autosched.demo`)."""
from .commands import main

__all__ = ["main"]
