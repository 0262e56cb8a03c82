"""How well does the collector tell what the model read of a long Codex tool output?

    PYTHONPATH=. .venv/bin/python bench/codex_kept_accuracy.py          # every kind
    PYTHONPATH=. .venv/bin/python bench/codex_kept_accuracy.py json table

For each kind of output (:data:`KINDS`: English prose, indented JSON, base64, a
space-padded table, an ASCII head over a Chinese tail, Chinese text; 200–400 KB each,
from a fixed seed) and each setting (:data:`SETTINGS`: the default policy, only
``tool_output_token_limit`` raised, both it and the call's ``max_output_tokens`` raised,
the call asking for 5,000 tokens), the real Codex of the end-to-end tests runs the
command once in ``codex exec`` against the provider stand-in. Its telemetry goes to a
real OTLP receiver, and is derived afterwards as the collector derives it, on a fresh
memory of turns.

It prints, per run, the bytes the stand-in received (what the model read) and the bytes
the collector inferred. It also prints the estimate the inference starts from and its
error, the bytes per token of the telemetry preview and of what was read, and the
outcome: ``right`` (within 1 %), ``abstained`` (not auditable), or ``WRONG``. It asserts
nothing.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.e2e.codex_cli import codex_binary, run_codex
from tests.e2e.otlp_receiver import TRACES_PATH, OTLPReceiver

from benchkit.tables import print_table
from ctxledger import semconv as sc
from ctxledger.verdicts import Measurement
from ctxledger_cli.provider import ProviderStandIn, ToolCall
from ctxledger_collector.derive import codex, may_derive
from ctxledger_collector.derive.codex_kept import Evidence, Kept, kept_by_codex
from ctxledger_collector.derive.codex_turns import CodexTurns
from ctxledger_collector.ingest.otlp_logs import RawLogRecord, proto_log_records
from ctxledger_collector.ingest.otlp_proto import proto_spans
from ctxledger_collector.ingest.otlp_spans import DecodeLimits, RawSpan

KINDS = ("english", "json", "base64", "table", "mixed", "chinese")
RAISED = "tool_output_token_limit = 200000\n"
#: Per setting: the call's max_output_tokens (None: not asked), config.toml's extra lines.
SETTINGS: dict[str, tuple[int | None, str]] = {
    "default": (None, ""),
    "config raised": (None, RAISED),
    "both raised": (400_000, RAISED),
    "call asks 5,000": (5_000, RAISED),
}


def output_text(kind: str) -> str:
    """The command's output, 200–400 KB of one kind of text, the same every run."""
    rnd = random.Random(7)
    if kind == "english":
        words = ("the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "logs")
        return "\n".join(" ".join(rnd.choice(words) for _ in range(14)) for _ in range(4000))
    if kind == "json":
        rows = [{"id": i, "amount": round(rnd.random() * 1000, 2)} for i in range(5000)]
        return json.dumps(rows, indent=1)
    if kind == "base64":
        return base64.b64encode(rnd.randbytes(150_000)).decode()
    if kind == "table":
        cells = ("x" * rnd.randint(1, 5) for _ in range(3000))
        return "\n".join(f"{i:>8}{' ' * 40}{x:<20}{' ' * 30}|" for i, x in enumerate(cells))
    if kind == "mixed":  # the preview sees only the ASCII head
        head = [f"INFO step {i} ok" for i in range(2000)]
        return "\n".join(
            head + [f"订单{i}已支付，金额{rnd.randint(1, 999)}元" for i in range(6000)]
        )
    return "\n".join(f"用户{i}的订单已经发货，请注意查收" for i in range(8000))


@dataclass(frozen=True)
class Outcome:
    read: int
    stage: Measurement
    evidence: Evidence | None


def _derived(receiver: OTLPReceiver, seen: list[Evidence]) -> Measurement:
    """The call's last ``llm_input`` stage, derived from what the receiver got (each
    piece of evidence the inference weighed added to ``seen``)."""

    def watched(evidence: Evidence) -> Kept | None:
        seen.append(evidence)
        return kept_by_codex(evidence)

    turns = CodexTurns(infer=watched)
    stages = []
    for request in receiver.requests:
        if request.path == TRACES_PATH:
            for raw in proto_spans(request.body, DecodeLimits()):
                if not isinstance(raw, RawSpan):
                    continue
                if not may_derive(raw.attributes, raw.events, raw.name, raw.service_name):
                    continue
                span = raw.source_span()
                event = codex.tool_result_event(span.events)
                if event is None:
                    stages += codex.turn_stages(span, turns)
                else:
                    stages += codex.tool_output_stages(span, event, turns)
            continue
        for record in proto_log_records(request.body, DecodeLimits()):
            if not isinstance(record, RawLogRecord):
                continue
            if record.attributes.get("event.name") == codex.TOOL_RESULT_EVENT:
                stages += codex.preview_stages(record.attributes, record.trace_id, turns)
    read = [s.measurement for s in stages if s.measurement.stage == sc.STAGE_LLM_INPUT]
    return max(read, key=lambda m: m.observed_at)


def run(binary: Path, script: Path, max_output_tokens: int | None, extra: str) -> Outcome:
    arguments: dict[str, Any] = {"cmd": f"{sys.executable} {script}"}
    if max_output_tokens is not None:
        arguments["max_output_tokens"] = max_output_tokens
    seen: list[Evidence] = []
    with tempfile.TemporaryDirectory() as work, OTLPReceiver() as receiver:
        with ProviderStandIn(script=[ToolCall("exec_command", arguments, "c1"), "Done."]) as p:
            run_codex(binary, Path(work) / "w", p.url, receiver.url, extra)
            read = sum(
                len(item["output"].encode())
                for request in p.requests
                if request.path.endswith("/responses")
                for item in request.json().get("input", [])
                if isinstance(item, dict) and item.get("type") == "function_call_output"
            )
        stage = _derived(receiver, seen)
    return Outcome(read, stage, seen[-1] if seen else None)


def _row(kind: str, setting: str, o: Outcome) -> list[str]:
    inferred = None if o.stage.telemetry_cut else o.stage.chars
    if inferred is None:
        verdict = "abstained"
    else:
        verdict = "right" if abs(inferred - o.read) <= 0.01 * o.read else "WRONG"
    e = o.evidence
    estimate = e.added_tokens * e.bytes_per_token - e.other_bytes if e else None
    return [
        kind, setting, f"{o.read:,}", "-" if inferred is None else f"{inferred:,}",
        "-" if estimate is None else f"{estimate:,.0f}",
        "-" if estimate is None else f"{estimate / o.read - 1:+.1%}",
        "-" if e is None else f"{e.bytes_per_token:.2f}",
        "-" if e is None else f"{o.read / e.added_tokens:.2f}",
        verdict,
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kinds", nargs="*", help=f"of {', '.join(KINDS)} (default: all)")
    args = parser.parse_args()
    unknown = set(args.kinds) - set(KINDS)
    if unknown:
        parser.error(f"unknown kinds {sorted(unknown)}: choose from {', '.join(KINDS)}")
    binary = codex_binary()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for kind in args.kinds or KINDS:
            script = Path(folder) / f"{kind}.py"
            script.write_text(f"print({output_text(kind)!r})\n", encoding="utf-8")
            for setting, (asked, extra) in SETTINGS.items():
                rows.append(_row(kind, setting, run(binary, script, asked, extra)))
    print_table(
        ["output", "setting", "read bytes", "inferred", "estimate", "est. error",
         "preview bytes/token", "read bytes/token", "outcome"],
        rows,
    )  # fmt: skip


if __name__ == "__main__":
    main()
