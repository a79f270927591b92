"""Command line: ``roofline calibrate | profiles | advise | plot``.

User errors (``RooflineError``) and mistakes on the command line print one line to stderr and exit
2, with no traceback; Ctrl-C prints one line and exits 130. Each command's module is imported only
to build the parser; what a command runs is imported when it runs.
"""

from __future__ import annotations

import argparse
import sys

from roofline.errors import RooflineError

INTERRUPTED = 130  # the shell's code for a command ended by Ctrl-C (128 + SIGINT)


class _Parser(argparse.ArgumentParser):
    """argparse with errors in one line (the problem and where the help is), not usage + error."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}; see `{self.prog} --help`\n")


def build_parser() -> argparse.ArgumentParser:
    from roofline import __version__
    from roofline.cli import advise, calibrate, plot

    parser = _Parser(prog="roofline", description="Roofline-model advisor for PyTorch with empirical device calibration.")
    parser.add_argument("--version", action="version", version=f"roofline {__version__}")
    sub = parser.add_subparsers(dest="command")  # the commands' parsers are _Parsers too
    calibrate.add_parsers(sub)
    advise.add_parsers(sub)
    plot.add_parsers(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        parser = build_parser()
        args, unknown = parser.parse_known_args(argv)
        if unknown:  # told by the command's parser, whose --help lists its options
            commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
            commands.get(args.command, parser).error(f"unrecognized arguments: {' '.join(unknown)}")
        if args.command is None:
            parser.print_help()
            return 0
        return int(args.func(args) or 0)
    except RooflineError as e:
        print(f"roofline: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("roofline: interrupted", file=sys.stderr)
        return INTERRUPTED


if __name__ == "__main__":
    raise SystemExit(main())
