"""`python -m autosched ...`: the command line (autosched.cli)."""
import sys

from .cli import main

sys.exit(main())
