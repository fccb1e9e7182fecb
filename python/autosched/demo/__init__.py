"""`python -m autosched.demo`: runs the demo of autosched.cli.demo."""
