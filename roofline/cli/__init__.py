"""Command line: ``roofline calibrate | profiles | advise | plot``.

User errors (``RooflineError``) print one line to stderr and exit 2, with no traceback. Each
command's module is imported only to build the parser; what a command runs is imported when it runs.
"""

from __future__ import annotations

import argparse
import sys

from roofline.errors import RooflineError


def build_parser() -> argparse.ArgumentParser:
    from roofline import __version__
    from roofline.cli import advise, calibrate, plot

    parser = argparse.ArgumentParser(prog="roofline", description="Roofline-model advisor for PyTorch with empirical device calibration.")
    parser.add_argument("--version", action="version", version=f"roofline {__version__}")
    sub = parser.add_subparsers(dest="command")
    calibrate.add_parsers(sub)
    advise.add_parsers(sub)
    plot.add_parsers(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        return int(args.func(args) or 0)
    except RooflineError as e:
        print(f"roofline: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("roofline: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
