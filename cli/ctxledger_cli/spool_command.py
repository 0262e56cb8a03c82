"""``ctxledger spool list`` and ``ctxledger spool drop``: the spans the SDK parked on disk
because their collector did not take them, by destination, and discarding them. The SDK
alone: the plain install runs it."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from ctxledger._parked import ParkedBatches, drop_parked, find_parked, parked_in, spool_root
from ctxledger._settings import Settings

UNKNOWN = "(unknown: parked by an earlier ctxledger, never sent)"
ROOT_HELP = "the spool's folder (default: CTXLEDGER_SPOOL_DIR, else <user cache>/ctxledger/spool)"


def add_spool_command(commands: argparse._SubParsersAction[Any]) -> None:
    group = commands.add_parser(
        "spool",
        help="list or drop the spans the SDK parked for a collector that did not take them",
        description="The SDK keeps the batches a collector could not take in a folder of "
        "that collector's (its URL and key) and sends them there, and only there, when it "
        "answers. List them by destination, or drop them.",
    )
    verbs = group.add_subparsers(dest="spool_command", required=True, metavar="COMMAND")
    listing = verbs.add_parser(
        "list",
        help="what is parked, by destination",
        description="Each folder of parked batches: its spans, batches and size, how old "
        "its oldest batch is, the service and the collector's URL it waits for.",
    )
    listing.add_argument("--spool-dir", help=ROOT_HELP)
    listing.set_defaults(handler=handle_spool_list)
    drop = verbs.add_parser(
        "drop",
        help="discard parked spans (they are never sent)",
        description="Delete the batches parked for one collector, in one folder, or all of "
        "them; a batch a running process is sending right now is left alone.",
    )
    drop.add_argument("--spool-dir", help=ROOT_HELP)
    which = drop.add_mutually_exclusive_group(required=True)
    which.add_argument("--endpoint", help="those parked for this collector (as configured)")
    which.add_argument("--folder", help="those of one folder that `spool list` shows")
    which.add_argument("--all", action="store_true", help="every parked span")
    drop.set_defaults(handler=handle_spool_drop)


def _root(args: argparse.Namespace) -> Path | None:
    return Path(args.spool_dir).expanduser() if args.spool_dir else spool_root()


def _age(written_ns: int | None) -> str:
    if written_ns is None:
        return "?"
    seconds = max(time.time() - written_ns / 1e9, 0.0)
    for unit, size in (("d", 86_400), ("h", 3_600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"


def _line(parked: ParkedBatches) -> str:
    service = parked.service_name or "?"
    return (
        f"{parked.spans:>9,} spans {parked.files:>5,} batches {parked.size / 1024:>9,.1f} KiB  "
        f"oldest {_age(parked.oldest_ns):>6}  {service:<20} {parked.url or UNKNOWN}\n"
        f"          {parked.folder}"
    )


def handle_spool_list(args: argparse.Namespace) -> int:
    root = _root(args)
    if root is None:
        print("ctxledger spool: the spool is off (CTXLEDGER_SPOOL_DIR)", file=sys.stderr)
        return 0
    found = find_parked(root)
    for parked in found:
        print(_line(parked))
    spans = sum(p.spans for p in found)
    print(f"{spans:,} spans parked in {len(found)} folders under {root}")
    return 0


def _traces_url(endpoint: str) -> str:
    url = Settings(endpoint=endpoint).traces_url
    assert url is not None
    return url


def handle_spool_drop(args: argparse.Namespace) -> int:
    root = _root(args)
    if root is None:
        print("ctxledger spool: the spool is off (CTXLEDGER_SPOOL_DIR)", file=sys.stderr)
        return 2
    found = find_parked(root)
    if args.folder:
        wanted = Path(args.folder).expanduser().resolve()
        chosen = [p for p in found if p.folder.resolve() == wanted]
        what = f"in {args.folder}"
    elif args.endpoint:
        url = _traces_url(args.endpoint)
        chosen = [p for p in found if p.url == url]
        what = f"for {url}"
    else:
        chosen, what = found, f"under {root}"
    if not chosen:
        print(f"ctxledger spool: nothing is parked {what}", file=sys.stderr)
        return 0 if args.all else 1
    dropped_files = dropped_spans = left = 0
    for parked in chosen:
        files, spans = drop_parked(parked.folder)
        dropped_files += files
        dropped_spans += spans
        still = parked_in(parked.folder)
        left += still.spans if still is not None else 0
    busy = f"; {left:,} spans being sent by a running process were left alone" * bool(left)
    print(f"dropped {dropped_spans:,} spans ({dropped_files:,} batches) parked {what}{busy}")
    return 0
