"""The ``ctxledger`` console script."""

from __future__ import annotations

from collections.abc import Sequence

from ctxledger_cli.parser import build_parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    code: int = args.handler(args)
    return code
