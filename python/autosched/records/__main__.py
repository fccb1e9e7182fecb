"""`python -m autosched.records show|distill ...`: look at and trim record logs (see autosched.records).

This module is what runpy runs; the package itself never imports it, so running it prints no runpy warning."""
import argparse
import sys

from . import distill, format_summary, summarize


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m autosched.records", description="Work on record logs.")
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("show", help="per task: trials, best time, errors by kind, target")
    s.add_argument("input", nargs="+")
    d = sub.add_parser("distill", help="keep the best record of every task and target")
    d.add_argument("input")
    d.add_argument("-o", "--output", default=None, help="output file (default: INPUT.best.json)")
    args = parser.parse_args(argv)
    try:
        if args.command == "show":
            print("\n\n".join(format_summary(path, summarize(path)) for path in args.input))
            return 0
        out, kept = distill(args.input, args.output)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"kept {kept} records in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
