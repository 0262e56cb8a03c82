"""``ctxledger reports``: a collector's journey reports (``GET /api/v1/reports``), filtered,
one line each. Standard library only, like :mod:`query_api`: the plain install runs it."""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
from typing import Any

from ctxledger.visible import visible
from ctxledger_cli.query_api import report_page

DESCRIPTION = (
    "List a collector's journey reports, most recent first (one run's in pipeline order), "
    "one line each, then how many matched. A tool result cut in one request and re-sent "
    "cut in later ones has a losing journey per request; --first-lost keeps only the "
    "journey where each result was first lost, so the count is how many results were "
    "lost. The read key is read from CTXLEDGER_READ_KEY."
)
COLUMNS = ("trace_id", "step", "request_id", "tool_call_id", "tool_name", "verdict", "lost_items")


def add_reports_command(commands: argparse._SubParsersAction[Any]) -> None:
    reports = commands.add_parser(
        "reports",
        help="list a collector's journey reports (GET /api/v1/reports)",
        description=DESCRIPTION,
    )
    reports.add_argument("--endpoint", default="http://127.0.0.1:4318", help="the collector's URL")
    reports.add_argument("--trace-id", help="one run's reports (32 hex digits)")
    reports.add_argument(
        "--verdict", action="append", help="only this verdict (repeat to allow several)"
    )
    reports.add_argument("--agent", help="only this agent (or service.name)")
    reports.add_argument("--tool", help="only this tool")
    reports.add_argument("--tool-call-id", help="only this tool call")
    reports.add_argument(
        "--first-lost",
        action="store_true",
        help="only the journeys where a result was first lost: each lost result once",
    )
    reports.add_argument("--limit", type=int, default=100, help="reports shown (at most 1000)")
    reports.add_argument(
        "--json", action="store_true", help="print the collector's answer as JSON instead"
    )
    reports.set_defaults(handler=handle_reports)


def query_filters(args: argparse.Namespace) -> list[tuple[str, str]]:
    """The query string of ``args``, as (name, value) pairs."""
    filters = [
        (name, str(value))
        for name, value in (
            ("trace_id", args.trace_id),
            ("agent", args.agent),
            ("tool", args.tool),
            ("tool_call_id", args.tool_call_id),
        )
        if value is not None
    ]
    filters += [("verdict", verdict) for verdict in args.verdict or ()]
    if args.first_lost:
        filters.append(("first_lost", "true"))
    filters.append(("limit", str(args.limit)))
    return filters


def _detail(error: urllib.error.HTTPError) -> str:
    try:
        detail = json.loads(error.read()).get("detail")
    except (ValueError, AttributeError, OSError):
        return error.reason
    if isinstance(detail, list):  # FastAPI's validation errors: where, and what
        return "; ".join(f"{'.'.join(map(str, d.get('loc', ())))}: {d.get('msg')}" for d in detail)
    return str(detail)


def table(reports: list[dict[str, Any]]) -> list[str]:
    """The reports as aligned columns under a header; a first loss is marked ``*``. Names
    are shown ``visible`` (a right-to-left override cannot make one pass for another)."""
    rows = [[*(c.upper() for c in COLUMNS), "FIRST_LOST"]]
    for report in reports:
        cells = ["-" if report.get(c) is None else visible(report[c]) for c in COLUMNS]
        rows.append([*cells, "*" if report.get("first_lost") else ""])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def handle_reports(args: argparse.Namespace) -> int:
    try:
        answer = report_page(args.endpoint, query_filters(args))
    except urllib.error.HTTPError as error:
        print(
            f"ctxledger reports: {error.code} from the collector: {_detail(error)}", file=sys.stderr
        )
        return 2 if error.code == 422 else 1
    except (urllib.error.URLError, OSError) as error:
        print(f"ctxledger reports: cannot reach {args.endpoint}: {error}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(answer, indent=2))
        return 0
    reports: list[dict[str, Any]] = answer["reports"]
    for line in table(reports):
        print(line)
    what = "lost results (each once, where it was first lost)" if args.first_lost else "reports"
    print(f"{len(reports)} shown of {answer['total']} {what}")
    return 0
