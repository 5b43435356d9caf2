"""`rlark draft`: render a job draft to the Job manifest and print starter drafts.

Owns argument parsing and file reading for drafts and Node lists; all logic lives in rlark_tui.model.
"""

from __future__ import annotations

import argparse


def register(subparsers, parents) -> None:
    parser = subparsers.add_parser("draft", parents=parents, help="job drafts: render, starters")
    parser.set_defaults(handler=_usage(parser))


def _usage(parser: argparse.ArgumentParser):
    def handler(args: argparse.Namespace) -> int:
        parser.print_help()
        return 2
    return handler
