"""A database's worth of agent runs as the collector stores them, built without the
collector: SDK-shaped measurements and manifests per run, judged by the rules
(``ctxledger.verdicts.judge_trace``, which the incremental judge agrees with by its
property tests) and turned into rows by the collector's own row builders
(``ctxledger_collector.storage.rows``, by :mod:`benchkit.query_rows`), so every table holds what
ingest would have written.

The mix (seeded): eight agents with their own tools, long runs (30-70 steps of 10-30
tool results: coding, research, SRE and data agents) and short ones (2-10 steps of 1-4:
support, billing, sales, triage), spread over the last ``DAYS`` days. Each result is
measured at ``original`` and ``serialized`` in its step and at ``assembled`` and ``sent``
in the next request, whose manifest lists it. Fates per result: intact, truncated with a
marker (declared), declared without a marker (unmarked), records lost at ``sent``
(silent), left out of the next request (dropped) or left out while its call is listed
(orphaned); a run that stops after issuing calls leaves them ``incomplete``. Three
agents share the service ``support-desk``, so the agent filter's service-name match is
exercised.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from benchkit.query_rows import RunRows, run_rows
from ctxledger import semconv as sc
from ctxledger.verdicts import Manifest, Measurement, Tolerances

SEED = 20250301
DAYS = 30
STAGES = (sc.STAGE_ORIGINAL, sc.STAGE_SERIALIZED, sc.STAGE_ASSEMBLED, sc.STAGE_SENT)
ORDER = sc.BUILTIN_STAGE_ORDER
FIELDS = ("id", "title", "status", "owner", "created_at", "body", "score", "url")


@dataclass(frozen=True)
class Agent:
    name: str
    service: str
    tools: tuple[str, ...]
    long_runs: bool
    #: Chance that a result loses something (the fates below share it).
    lossy: float


AGENTS = (
    Agent(
        "coding-agent",
        "coding-agent",
        ("read_file", "grep_repo", "run_tests", "edit_file", "list_dir"),
        True,
        0.10,
    ),
    Agent("research-agent", "research-agent", ("web_search", "web_fetch", "read_pdf"), True, 0.16),
    Agent(
        "sre-agent",
        "sre-agent",
        ("grep_logs", "query_metrics", "read_log", "list_alerts"),
        True,
        0.22,
    ),
    Agent("data-agent", "analytics", ("sql_query", "describe_table", "export_rows"), True, 0.12),
    Agent(
        "support-agent",
        "support-desk",
        ("search_orders", "get_customer", "list_tickets"),
        False,
        0.12,
    ),
    Agent(
        "billing-agent",
        "support-desk",
        ("get_invoice", "search_orders", "refund_order"),
        False,
        0.08,
    ),
    Agent("triage-agent", "support-desk", ("list_tickets", "get_customer"), False, 0.10),
    Agent("sales-agent", "crm", ("search_accounts", "get_opportunity"), False, 0.06),
)
#: Of the lossy results: (fate, share).
FATES = (
    ("declared", 0.55),
    ("unmarked", 0.08),
    ("silent", 0.25),
    ("dropped", 0.07),
    ("orphaned", 0.05),
)
CRASHED_RUNS = 0.05


class _Ids:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def span(self) -> str:
        return f"{self.rng.getrandbits(64) or 1:016x}"

    def sha(self) -> str:
        return hashlib.sha256(self.rng.randbytes(8)).hexdigest()


def _stage(base: dict[str, Any], stage: str, at: float, ids: _Ids, **changes: Any) -> Measurement:
    values = {**base, **changes}
    return Measurement(
        stage=stage, order=ORDER[stage], observed_at=at, span_id=ids.span(), **values
    )


def _fate(rng: random.Random, agent: Agent) -> str:
    if rng.random() >= agent.lossy:
        return "intact"
    pick = rng.random()
    for fate, share in FATES:
        if pick < share:
            return fate
        pick -= share
    return FATES[-1][0]


def _result_stages(
    rng: random.Random,
    ids: _Ids,
    common: dict[str, Any],
    fate: str,
    step_at: float,
    request_at: float | None,
    request_id: str | None,
) -> list[Measurement]:
    """One tool result's measurements: its own two stages and, when it reaches the next
    request, the two in that request."""
    items = rng.randrange(1, 40)
    item_ids = tuple(f"{common['tool_name'][:3]}-{rng.randrange(10**8):08d}" for _ in range(items))
    chars = rng.randrange(300, 24_000)
    canonical_chars, canonical_sha = chars - chars // 12, ids.sha()
    size = {
        "chars": chars,
        "bytes": chars + chars // 7,
        "tokens": chars // 4,
        "tokenizer": "cl100k_base",
        "canonical_chars": canonical_chars,
        "canonical_sha256": canonical_sha,
        "items": items,
        "item_ids": item_ids,
        "fields": FIELDS,
        "json_valid": True,
    }
    base = {**common, **size}
    stages = [
        _stage(base, sc.STAGE_ORIGINAL, step_at, ids, sha256=ids.sha()),
        _stage(base, sc.STAGE_SERIALIZED, step_at + 0.002, ids, sha256=ids.sha()),
    ]
    if request_at is None or fate in ("dropped", "orphaned"):
        return stages
    in_request = {**base, "request_id": request_id}
    kept = max(0, items - rng.randrange(1, items + 1)) if items > 1 else 0
    short = chars * (kept + 1) // (items + 1)
    cut = {
        "chars": short,
        "bytes": short + short // 7,
        "tokens": short // 4,
        "canonical_chars": short - short // 12,
        "canonical_sha256": ids.sha(),
        "items": kept,
        "item_ids": item_ids[:kept],
        "sha256": ids.sha(),
    }
    same: dict[str, object] = {"sha256": ids.sha()}
    assembled = same
    if fate == "declared":
        assembled = {**cut, "declared": True, "strategy": "clip_rows", "marker": True}
    elif fate == "unmarked":
        assembled = {**cut, "declared": True, "strategy": "clip_rows"}
    stages.append(_stage(in_request, sc.STAGE_ASSEMBLED, request_at - 0.05, ids, **assembled))
    sent = cut if fate == "silent" else assembled
    stages.append(_stage(in_request, sc.STAGE_SENT, request_at, ids, **sent))
    return stages


def build_run(
    rng: random.Random, run_id: int, agent: Agent, start: float, now: float, tol: Tolerances
) -> RunRows:
    """One run's rows, judged as of ``now``."""
    ids = _Ids(rng)
    trace_id = f"{rng.getrandbits(128) or 1:032x}"
    if agent.long_runs:
        steps, per_step, gap = rng.randrange(30, 71), rng.randrange(10, 31), (4.0, 20.0)
    else:
        steps, per_step, gap = rng.randrange(2, 11), rng.randrange(1, 5), (2.0, 8.0)
    crashed = rng.random() < CRASHED_RUNS
    measurements: list[Measurement] = []
    manifests: list[Manifest] = []
    at = start
    pending: list[tuple[str, str, dict[str, Any]]] = []  # (call, fate, common) of the last step
    pending_at = at
    for step in range(1, steps + 2):
        last = step == steps + 1
        request_id = f"req-{rng.getrandbits(64):016x}"
        request_at = at
        if pending and not (last and crashed):
            listed = [c for c, fate, _ in pending if fate not in ("dropped", "orphaned")]
            called = [c for c, fate, _ in pending if fate != "dropped"]
            manifests.append(
                Manifest(
                    trace_id=trace_id,
                    request_id=request_id,
                    step=step,
                    tool_call_ids=tuple(listed),
                    tool_calls=tuple(called),
                    tokens=rng.randrange(2_000, 120_000),
                    tokenizer="cl100k_base",
                    context_window=128_000,
                    model="gpt-4.1",
                    agent_name=agent.name,
                    observed_at=request_at,
                    span_id=ids.span(),
                )
            )
        for _call, fate, common in pending:
            reaches = None if (last and crashed) else request_at
            measurements += _result_stages(rng, ids, common, fate, pending_at, reaches, request_id)
        if last:
            break
        at = request_at + rng.uniform(*gap)
        pending_at = at
        pending = []
        for _ in range(per_step):
            call_id = f"call_{rng.getrandbits(96):024x}"
            common = {
                "trace_id": trace_id,
                "tool_call_id": call_id,
                "tool_name": rng.choice(agent.tools),
                "agent_name": agent.name,
                "step": step,
            }
            pending.append((call_id, _fate(rng, agent), common))
        at += rng.uniform(*gap)
    return run_rows(
        (run_id, trace_id, agent.service, agent.name),
        measurements,
        manifests,
        now,
        tol,
        steps,
        per_step,
    )


def runs(
    measurements: int, now: float, tol: Tolerances | None = None, seed: int = SEED
) -> Iterator[RunRows]:
    """Runs until about ``measurements`` measurements, started over the last ``DAYS``
    days (the newest ending near ``now``), in run id order."""
    rng = random.Random(seed)
    tol = tol or Tolerances()
    made = 0
    run_id = 0
    while made < measurements:
        run_id += 1
        # Long runs hold most journeys; short runs are most runs.
        agent = rng.choice(AGENTS[:4] if rng.random() < 0.03 else AGENTS[4:])
        start = now - rng.uniform(0.0, DAYS * 86_400.0) - 1_800.0
        rows = build_run(rng, run_id, agent, start, now, tol)
        made += len(rows.measurements)
        yield rows
