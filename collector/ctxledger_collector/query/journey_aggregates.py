"""Journeys counted and what they lost, by any of agent, tool, verdict and layer, over time
slices: from the counters (``journey_counts``) wherever whole buckets fit, from the
reports for the rest, so every answer equals counting the reports themselves.

Three parts make one answer (:func:`tally`), each over disjoint journeys:

* the counters, for the whole buckets inside the slices (:mod:`time_slices`);
* the reports, for what is left at the slices' edges (less than a minute each);
* with an agent filter, the reports the counters cannot tell apart: the filter also
  matches a run's ``service.name`` (as ``/api/v1/runs`` does), and the counters know
  only each journey's agent. Which runs of that service hold journeys of other agents
  is read from ``run_journey_counts`` first, so this part costs nothing when there
  are none (the usual case).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any, TypeVar

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Select,
    and_,
    case,
    cast,
    false,
    func,
    literal,
    or_,
    select,
)
from sqlalchemy.orm import Session

from ctxledger_collector.query.report_filters import (
    ReportFilter,
    filtered,
    in_layers,
    with_runs,
)
from ctxledger_collector.query.time_slices import (
    EARLIEST,
    LATEST,
    CounterSpan,
    Plan,
    Slice,
    TimeSpan,
    plan,
)
from ctxledger_collector.storage.counter_tables import JOURNEY_COUNTS, RUN_JOURNEY_COUNTS
from ctxledger_collector.storage.journey_counts import GRAINS, bucket_of
from ctxledger_collector.storage.tables import REPORTS, RUNS

#: The columns a tally can be grouped by, besides ``verdict`` (names: None or text).
_NAMES = ("agent_name", "tool_name")

Tallies = dict[tuple[Any, ...], list[int]]


def bucket_expression(moment: ColumnElement[Any], width: int) -> ColumnElement[Any]:
    """SQL for ``journey_counts.bucket_of(moment, width)``: exact for floats."""
    rough = cast(moment / width, BigInteger) * width
    return case(
        (rough > moment, rough - width), (rough + width <= moment, rough + width), else_=rough
    )


def _counter_filters(f: ReportFilter) -> list[ColumnElement[bool]]:
    conditions: list[ColumnElement[bool]] = []
    if f.verdicts:
        conditions.append(JOURNEY_COUNTS.c.verdict.in_(f.verdicts))
    if f.tool:
        conditions.append(JOURNEY_COUNTS.c.tool_name == f.tool)
    if f.agent:
        conditions.append(JOURNEY_COUNTS.c.agent_name == f.agent)
    if f.layers:
        conditions.append(in_layers(JOURNEY_COUNTS.c.layer, f.layers))
    return conditions


#: What a tally sums, in order: journeys, their lost items and tokens, then lost results
#: (each counted once, at its first lost journey) and their lost items and tokens.
SUMS = (
    "journeys",
    "lost_items",
    "lost_tokens",
    "lost_results",
    "result_lost_items",
    "result_lost_tokens",
    "tokens_unknown",
    "result_tokens_unknown",
)


def _first(value: ColumnElement[Any]) -> ColumnElement[Any]:
    return func.sum(case((REPORTS.c.first_lost, value), else_=0))


def _sums() -> list[ColumnElement[Any]]:
    lost_items, lost_tokens = REPORTS.c.lost_items, REPORTS.c.lost_tokens
    _unknown = case((REPORTS.c.lost_tokens_unknown.is_not(None), 1), else_=0)
    return [
        func.count(),
        func.sum(lost_items),
        func.sum(lost_tokens),
        _first(literal(1)),
        _first(lost_items),
        _first(lost_tokens),
        func.sum(_unknown),
        _first(_unknown),
    ]


def _from_counters(
    session: Session, f: ReportFilter, spans: Plan, by: Sequence[str], width: int | None
) -> list[Any]:
    if not spans.counters:
        return []
    c = JOURNEY_COUNTS.c
    label = (c.bucket // width) * width if width else literal(0)
    group = [label, *(c[name] for name in by)]
    found: list[Any] = []
    for some in span_groups(spans.counters):
        covered = or_(
            *(and_(c.grain == s.grain, c.bucket >= s.start, c.bucket < s.end) for s in some)
        )
        query = (
            select(*group, *(func.sum(c[name]) for name in SUMS))
            .where(covered, *_counter_filters(f))
            .group_by(*group)
        )
        found.extend(session.execute(query))
    return found


#: Spans per query. An ``OR`` of a few ranges is read range by range from an index (on
#: SQLite too); a longer one, which SQLite could not even parse past 1,000 terms, would
#: have to be nested, and a nested ``OR`` is a scan of the whole table (a 7-day timeline
#: of 48 slices: 52 spans, 410 ms instead of 15 ms at a million measurements). The
#: spans are disjoint, so the answers of the groups add up.
SPANS_PER_QUERY = 32

Span = TypeVar("Span", CounterSpan, TimeSpan)


def span_groups(spans: Sequence[Span]) -> list[Sequence[Span]]:
    """``spans`` in groups of at most ``SPANS_PER_QUERY``, one query each."""
    return [spans[i : i + SPANS_PER_QUERY] for i in range(0, len(spans), SPANS_PER_QUERY)]


def _in_times(spans: Sequence[TimeSpan]) -> ColumnElement[bool]:
    t = REPORTS.c.last_observed_at
    return or_(*(and_(t >= s.start, t < s.end) for s in spans)) if spans else false()


def _report_query(by: Sequence[str], width: int | None) -> tuple[Select[Any], list[Any]]:
    label = bucket_expression(REPORTS.c.last_observed_at, width) if width else literal(0)
    group = [label, *(REPORTS.c[name] for name in by)]
    return select(*group, *_sums()), group


def _from_edges(
    session: Session, f: ReportFilter, spans: Plan, by: Sequence[str], width: int | None
) -> list[Any]:
    if not spans.reports:
        return []
    query, group = _report_query(by, width)
    untimed = ReportFilter(verdicts=f.verdicts, agent=f.agent, tool=f.tool, layers=f.layers)
    query = query.select_from(REPORTS)
    if f.agent:
        query = with_runs(query)
    query = filtered(query, untimed)
    found: list[Any] = []
    for some in span_groups(spans.reports):
        found.extend(session.execute(query.where(_in_times(some)).group_by(*group)))
    return found


def _other_agents(agent: str) -> ColumnElement[bool]:
    return or_(REPORTS.c.agent_name.is_(None), REPORTS.c.agent_name != agent)


def _has_service_extras(session: Session, agent: str) -> bool:
    """Whether a run of service ``agent`` holds journeys of another agent (or none)."""
    query = (
        select(RUN_JOURNEY_COUNTS.c.run_id)
        .join(RUNS, RUNS.c.id == RUN_JOURNEY_COUNTS.c.run_id)
        .where(
            RUNS.c.service_name == agent,
            RUN_JOURNEY_COUNTS.c.agent_name != agent,
            RUN_JOURNEY_COUNTS.c.journeys > 0,
        )
        .limit(1)
    )
    return session.execute(query).first() is not None


def _service_extras(
    session: Session, f: ReportFilter, spans: Plan, by: Sequence[str], width: int | None
) -> list[Any]:
    if not f.agent or not spans.counters or not _has_service_extras(session, f.agent):
        return []
    query, group = _report_query(by, width)
    times = [TimeSpan(s.start, s.end) for s in spans.counters]
    query = with_runs(query.select_from(REPORTS)).where(
        RUNS.c.service_name == f.agent, _other_agents(f.agent)
    )
    if f.verdicts:
        query = query.where(REPORTS.c.verdict.in_(f.verdicts))
    if f.tool:
        query = query.where(REPORTS.c.tool_name == f.tool)
    if f.layers:
        query = query.where(in_layers(REPORTS.c.layer, f.layers))
    found: list[Any] = []
    for some in span_groups(times):
        found.extend(session.execute(query.where(_in_times(some)).group_by(*group)))
    return found


def tally(
    session: Session,
    f: ReportFilter,
    slices: Sequence[Slice],
    by: Sequence[str] = (),
    width: int | None = None,
) -> Tallies:
    """(label, *by) -> the ``SUMS`` (journeys, lost items, lost tokens, lost results,
    their lost items and tokens, then the journeys and lost results whose lost tokens
    are unknown) of the journeys ``f``
    matches in ``slices`` (``f``'s own since and until are ignored: the slices say
    when). The label is the start of the ``width``-second bucket of each journey, or
    0 without ``width``. Groups without journeys are left out; names are None where
    the journeys have none."""
    assert not f.trace_id and not f.tool_call_id, "the counters know no runs or calls"
    assert f.first_lost is None, "first losses are summed (lost_results), not filtered"
    spans = plan(slices)
    totals: Tallies = defaultdict(lambda: [0] * len(SUMS))
    named = [i + 1 for i, name in enumerate(by) if name in _NAMES]
    for part in (_from_counters, _from_edges, _service_extras):
        for row in part(session, f, spans, by, width):
            key = list(row[: len(by) + 1])
            for index in named:
                key[index] = key[index] or None
            key[0] = int(key[0])
            sums = totals[tuple(key)]
            for i, value in enumerate(row[len(by) + 1 :]):
                sums[i] += int(value or 0)
    return {key: sums for key, sums in totals.items() if sums[0]}


def _extreme(
    session: Session,
    f: ReportFilter,
    last: bool,
    grains: Sequence[int] = tuple(sorted(GRAINS, reverse=True)),
    within: tuple[int, int] | None = None,
) -> int | None:
    """The first (or last) minute holding a journey ``f`` matches within its since and
    until, found in the counters coarse to fine: a day, an hour of it, a minute of
    that. A bucket across since or until may hold only journeys outside them; then
    the next bucket is tried."""
    c = JOURNEY_COUNTS.c
    grain = grains[0]
    while True:
        pick = func.max(c.bucket) if last else func.min(c.bucket)
        query = select(pick).where(c.grain == grain, c.journeys > 0, *_counter_filters(f))
        if within is not None:
            query = query.where(c.bucket >= within[0], c.bucket < within[1])
        if f.since is not None:
            query = query.where(c.bucket > f.since - grain)
        if f.until is not None:
            query = query.where(c.bucket < f.until)
        found: int | None = session.scalar(query)
        if found is None or len(grains) == 1:
            return found
        inner = _extreme(session, f, last, grains[1:], (found, found + grain))
        if inner is not None:
            return inner
        low, high = within or (EARLIEST, LATEST)
        within = (low, found) if last else (found + grain, high)


def minute_bounds(session: Session, f: ReportFilter) -> tuple[int, int] | None:
    """[first minute, end of the last minute) of the journeys ``f`` matches (within
    its since and until, to the minute); None when there are none."""
    firsts = [_extreme(session, f, last=False)]
    lasts = [_extreme(session, f, last=True)]
    if f.agent and _has_service_extras(session, f.agent):
        t = REPORTS.c.last_observed_at
        query = filtered(
            with_runs(select(func.min(t), func.max(t))).where(_other_agents(f.agent)),
            ReportFilter(
                verdicts=f.verdicts, tool=f.tool, since=f.since, until=f.until, layers=f.layers
            ),
        ).where(RUNS.c.service_name == f.agent)
        low, high = session.execute(query).one()
        firsts.append(None if low is None else bucket_of(low, GRAINS[0]))
        lasts.append(None if high is None else bucket_of(high, GRAINS[0]))
    first = min((m for m in firsts if m is not None), default=None)
    last = max((m for m in lasts if m is not None), default=None)
    if first is None or last is None:
        return None
    return first, last + GRAINS[0]
