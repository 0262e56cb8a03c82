"""One generated run as the rows the collector stores for it: measurements and manifests
through the collector's own row builders, the call origins the store keeps, and the
reports of judging the whole run with the rules (``judge_trace``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ctxledger.verdicts import Manifest, Measurement, Tolerances, judge_trace
from ctxledger.verdicts.call_origins import call_origin
from ctxledger_collector.decoded.batch import DecodedManifest, DecodedMeasurement
from ctxledger_collector.storage.rows import manifest_row, measurement_row, report_row
from ctxledger_collector.storage.string_lists import ListWriter


@dataclass
class RunRows:
    """Everything stored for one run, as the tables' rows."""

    run: tuple[Any, ...]
    measurements: list[tuple[Any, ...]] = field(default_factory=list)
    manifests: list[tuple[Any, ...]] = field(default_factory=list)
    calls: list[tuple[Any, ...]] = field(default_factory=list)
    reports: list[tuple[Any, ...]] = field(default_factory=list)
    #: The distinct lists of strings the rows refer to: (digest, JSON text).
    string_lists: list[tuple[bytes, str]] = field(default_factory=list)
    steps: int = 0
    results_per_step: int = 0


def run_rows(
    run: tuple[int, str, str, str],
    measurements: list[Measurement],
    manifests: list[Manifest],
    now: float,
    tol: Tolerances,
    steps: int,
    per_step: int,
) -> RunRows:
    """The rows of one run, (id, trace id, service, agent name), from its measurements and
    manifests, its journeys judged by the rules over the whole set."""
    run_id, trace_id, service, agent_name = run
    seen = [m.observed_at for m in measurements] + [m.observed_at for m in manifests]
    rows = RunRows(
        (run_id, trace_id, service, agent_name, min(seen), max(seen)),
        steps=steps,
        results_per_step=per_step,
    )
    lists = ListWriter()
    rows.measurements = [
        measurement_row(DecodedMeasurement(m, {}, service), run_id, lists) for m in measurements
    ]
    rows.manifests = [
        manifest_row(DecodedManifest(m, {}, service), run_id, lists) for m in manifests
    ]
    rows.string_lists = sorted(lists.texts.items())
    before: dict[str, list[Measurement]] = {}
    for m in measurements:
        if m.request_id is None:
            before.setdefault(m.tool_call_id, []).append(m)
    # Where each call was issued, as the store keeps it (no manifest here lists issued
    # calls, so its own stages say): (run, call, position, conversation).
    rows.calls = [
        (run_id, call_id, origin[1], origin[0])
        for call_id, stages in sorted(before.items())
        if (origin := call_origin(stages, ())) is not None
    ]
    arrived = {m.request_id: m.observed_at for m in manifests}
    for report in judge_trace(measurements, manifests, tolerances=tol, now=now):
        manifest_time = arrived.get(report.request_id or "")
        rows.reports.append(report_row(report, run_id, manifest_time, now))
    return rows
