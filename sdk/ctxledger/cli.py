"""The ``ctxledger`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ctxledger.__about__ import __version__


def _demo(args: argparse.Namespace) -> int:
    import ctxledger
    from ctxledger import demo

    client = ctxledger.configure(
        service_name="ctxledger-demo",
        endpoint=args.endpoint,
        export=args.endpoint is not None,
        ledger=args.ledger,
    )
    demo.run_seed_004()
    ctxledger.flush()
    print(demo.summary(client.ledger), file=sys.stderr)
    stats = client.stats()
    if args.endpoint:
        print(
            f"exported {stats.spans_exported} spans to {args.endpoint} ({stats.dropped} dropped)",
            file=sys.stderr,
        )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ctxledger",
        description="Make every loss of tool-result data on its way to the model visible.",
    )
    parser.add_argument("--version", action="version", version=f"ctxledger {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser(
        "demo",
        help="run a scripted agent that reproduces seed 004's silent 50 -> 20 loss",
        description="Run a scripted agent (no LLM, no network) and print the data ledger.",
    )
    demo.add_argument(
        "--endpoint",
        help="also export the spans over OTLP/HTTP to this collector (e.g. http://127.0.0.1:4318)",
    )
    demo.add_argument(
        "--ledger", default="stderr", help="where the ledger goes: stderr, stdout or a file path"
    )
    demo.set_defaults(handler=_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    code: int = args.handler(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
