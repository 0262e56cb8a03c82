"""The local data ledger: one line per stage, and a LOSS line whenever the rules find one.

Enabled with ``CTXLEDGER_LEDGER=stderr`` (or ``stdout``, or a file path). It judges with
the same :func:`ctxledger.verdicts.judge_trace` the collector uses, over the
measurements this process has seen (the most recent traces only, bounded).

A lost result counts once, as the collector counts it (:mod:`ctxledger.verdicts.results`):
a result cut in one request and re-sent in a later one gets one LOSS line and one entry
in :attr:`Ledger.reports`; each later losing journey gets a "still missing" line and goes
to :attr:`Ledger.still_missing`.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TextIO

from ctxledger import semconv as sc
from ctxledger.verdicts import (
    VERDICT_MEANINGS,
    Manifest,
    Measurement,
    Report,
    Tolerances,
    judge_trace,
)
from ctxledger.verdicts.model import ReceivedRecord
from ctxledger.verdicts.received_stages import received_measurements

_PREFIX = "[ctxledger]"


@dataclass
class _TraceBook:
    measurements: list[Measurement] = field(default_factory=list)
    manifests: list[Manifest] = field(default_factory=list)
    announced: set[tuple[str, str, str | None, tuple[str, ...]]] = field(default_factory=set)
    #: tool call id -> the journey where its result was first lost (announced first)
    first_lost: dict[str, Report] = field(default_factory=dict)


def _num(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _short(ids: tuple[str, ...], limit: int = 8) -> str:
    shown = ", ".join(ids[:limit])
    return shown + (f", … (+{len(ids) - limit})" if len(ids) > limit else "")


def format_stage(m: Measurement) -> str:
    tokens = _num(m.tokens) + ("~" if m.tokens_estimated else "")
    parts = [
        _PREFIX,
        f"step {m.step if m.step is not None else '-'}",
        f"{m.tool_name or '?'}[{m.tool_call_id}]",
        f"{m.stage:<10}",
        f"items={_num(m.items)}",
        f"chars={_num(m.chars)}",
        f"tokens={tokens}" + (f" ({m.tokenizer})" if m.tokenizer else ""),
    ]
    if m.request_id:
        parts.append(f"req={m.request_id}")
    if m.declared:
        parts.append(f"declared={m.strategy or 'yes'}")
    if m.markers_found:
        parts.append("marker=" + ",".join(m.markers_found))
    if m.received is not None:
        parts.append(f"server={m.received}")
    return " ".join(parts)


def format_loss(report: Report) -> str:
    """A LOSS line: what was lost, where, and whether the model was told."""
    lost = [t for t in report.transitions if t.lost]
    where = ", ".join(f"{t.from_stage} -> {t.to_stage}" for t in lost) or "request"
    details = [f"{report.lost_items} items" if report.lost_items else None]
    details.append(f"{report.lost_chars:,} chars" if report.lost_chars else None)
    details.append(f"{report.lost_tokens:,} tokens" if report.lost_tokens else None)
    if report.lost_fields:
        details.append("fields " + ", ".join(report.lost_fields))
    what = ", ".join(d for d in details if d) or "content"
    meaning = VERDICT_MEANINGS.get(report.verdict, "")
    line = (
        f"{_PREFIX} LOSS {report.verdict}: {report.tool_name or '?'}[{report.tool_call_id}] "
        f"{where} lost {what}; {meaning}"
    )
    if report.lost_item_ids:
        line += f"; lost ids: {_short(report.lost_item_ids)}"
    for note in report.notes:
        line += f"; {note}"
    return line


def format_still_missing(report: Report, first: Report) -> str:
    """The line of a losing journey whose result was already lost in an earlier one."""
    step = "-" if report.step is None else report.step
    first_step = "-" if first.step is None else first.step
    lost = f", {first.lost_items} items" if first.lost_items else ""
    return (
        f"{_PREFIX} step {step} {report.tool_name or '?'}[{report.tool_call_id}] still "
        f"missing ({report.verdict}): first lost at step {first_step} ({first.verdict}"
        f"{lost}); the same loss, counted once"
    )


def _announcement_key(report: Report) -> tuple[str, str, str | None, tuple[str, ...]]:
    """A loss found before any request is announced once, not again per request."""
    lost = tuple(f"{t.from_stage}>{t.to_stage}" for t in report.transitions if t.lost)
    request_stages = {m.stage for m in report.stages if m.request_id is not None}
    in_request = not lost or any(t.to_stage in request_stages for t in report.transitions if t.lost)
    return (report.tool_call_id, report.verdict, report.request_id if in_request else None, lost)


class Ledger:
    """Prints the ledger lines for the measurements and manifests it observes."""

    def __init__(
        self,
        stream: TextIO,
        tolerances: Tolerances | None = None,
        max_traces: int = 256,
    ) -> None:
        self.stream = stream
        self.tolerances = tolerances or Tolerances()
        self._books: OrderedDict[str, _TraceBook] = OrderedDict()
        self._max_traces = max_traces
        self._lock = threading.Lock()
        #: The losses, each lost result once: the journey where it was first lost.
        self.reports: list[Report] = []
        #: Later losing journeys of results already lost: the same losses again.
        self.still_missing: list[Report] = []

    def _book(self, trace_id: str) -> _TraceBook:
        book = self._books.get(trace_id)
        if book is None:
            book = self._books[trace_id] = _TraceBook()
            if len(self._books) > self._max_traces:
                self._books.popitem(last=False)
        self._books.move_to_end(trace_id)
        return book

    def _write(self, line: str) -> None:
        self.stream.write(line + "\n")
        self.stream.flush()

    def observe_measurement(self, m: Measurement) -> None:
        with self._lock:
            book = self._book(m.trace_id)
            book.measurements.append(m)
            self._write(format_stage(m))
            self._announce(book, [m.tool_call_id])

    def observe_received(self, record: ReceivedRecord) -> None:
        """What the model server said it read of a request: one ``received`` stage per
        tool result of the request, judged against what was sent."""
        with self._lock:
            book = self._book(record.trace_id)
            sent = {
                m.tool_call_id: m
                for m in book.measurements
                if m.request_id == record.request_id and m.stage == sc.STAGE_SENT
            }
            stages = received_measurements(record, sent)
            book.measurements.extend(stages)
            for m in stages:
                self._write(format_stage(m))
            self._announce(book, [m.tool_call_id for m in stages])

    def observe_manifest(self, manifest: Manifest) -> None:
        with self._lock:
            book = self._book(manifest.trace_id)
            book.manifests.append(manifest)
            results = len(manifest.tool_call_ids)
            self._write(
                f"{_PREFIX} step {manifest.step if manifest.step is not None else '-'} "
                f"request {manifest.request_id} sent: {results} tool results, "
                f"{len(manifest.tool_calls or ())} tool calls, "
                f"tokens={_num(manifest.tokens)}"
                + (f"/{manifest.context_window:,}" if manifest.context_window else "")
            )
            calls = {m.tool_call_id for m in book.measurements}
            calls.update(manifest.tool_call_ids, manifest.tool_calls or ())
            self._announce(book, sorted(calls))

    def _announce(self, book: _TraceBook, call_ids: list[str]) -> None:
        reports = judge_trace(
            book.measurements, book.manifests, tolerances=self.tolerances, tool_call_ids=call_ids
        )
        for report in reports:
            key = _announcement_key(report)
            if report.verdict == sc.VERDICT_INTACT or key in book.announced:
                continue
            book.announced.add(key)
            first = book.first_lost.get(report.tool_call_id)
            if first is not None and first.request_id != report.request_id:
                self.still_missing.append(report)
                self._write(format_still_missing(report, first))
                continue
            book.first_lost.setdefault(report.tool_call_id, report)
            self.reports.append(report)
            self._write(format_loss(report))


def open_ledger(target: str | None, tolerances: Tolerances | None = None) -> Ledger | None:
    """A ledger writing to ``stderr``, ``stdout`` or a file path; None when off."""
    if not target or target.strip().lower() in ("0", "off", "false", "none"):
        return None
    name = target.strip()
    if name.lower() in ("stderr", "1", "true", "on"):
        return Ledger(sys.stderr, tolerances)
    if name.lower() == "stdout":
        return Ledger(sys.stdout, tolerances)
    return Ledger(open(name, "a", encoding="utf-8"), tolerances)


def ledger_file_problem(target: str | None) -> str | None:
    """Why the ledger cannot be appended to the file ``target`` names (a missing folder,
    no permission), or None: it can, or ``target`` is not a file."""
    try:
        ledger = open_ledger(target)
    except OSError as error:
        return f"{error.strerror or error}"
    if ledger is not None and ledger.stream not in (sys.stderr, sys.stdout):
        ledger.stream.close()
    return None
