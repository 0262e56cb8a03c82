"""Claude Code's request bodies (``claude_code.api_request_body`` log events) read as the
requests they were: whole, cut by its telemetry inside the messages or after them, and
keyed by the session's run; and its own cut marker read as a telemetry cut."""

from __future__ import annotations

import json

from ctxledger_collector.derive import LogDerivation, LogEvent, derive_log_event
from ctxledger_collector.derive.anthropic_body import read_request_body
from ctxledger_collector.derive.claude_code import session_trace_id, telemetry_cut

SESSION = "a86abda7-a99c-4838-abcc-b995fed4c93d"
CUT_LINE = "\n[TRUNCATED - Content exceeds 60KB limit]"
OUTPUT = "\n".join(str(n) for n in range(1, 3001))


def _body(*results: str) -> str:
    """A request in the order Claude Code writes it: messages, then system and tools."""
    messages: list[dict[str, object]] = [
        {"role": "user", "content": [{"type": "text", "text": "Run the commands."}]}
    ]
    for index, result in enumerate(results):
        call = f"toolu_{index}"
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": call, "name": "Bash", "input": {"command": "seq"}}
                ],
            }
        )
        messages.append({"role": "user", "content": [
            {"tool_use_id": call, "type": "tool_result", "content": result}]})  # fmt: skip
    return json.dumps(
        {"model": "claude-sonnet-4-6", "messages": messages,
         "system": [{"type": "text", "text": "You are Claude Code. " * 500}],
         "tools": [{"name": "Bash", "description": "Runs a command. " * 2000}]},
        ensure_ascii=False,
    )  # fmt: skip


def _event(body: str, truncated: bool = False, **attributes: str) -> LogEvent:
    return LogEvent(
        event_name="claude_code.api_request_body",
        time_us=1_796_547_442_451_000,
        attributes={"session.id": SESSION, "request_body_id": "rb-1",
                    "model": "claude-sonnet-4-6", **attributes},
        text=body,
        truncated=truncated,
        service_name="claude-code",
        scope_name="com.anthropic.claude_code.events",
    )  # fmt: skip


def test_a_whole_body_gives_its_results_keyed_by_the_sessions_run() -> None:
    derived = derive_log_event(_event(_body(OUTPUT, "二" * 500)))
    assert derived is not None and derived.manifest is not None
    manifest = derived.manifest
    assert manifest.trace_id == SESSION.replace("-", "")
    assert manifest.tool_call_ids == ("toolu_0", "toolu_1")
    assert manifest.tool_calls == ("toolu_0", "toolu_1")
    assert manifest.telemetry_cut is None and manifest.step == 3
    assert manifest.conversation == SESSION and manifest.source == "claude_code"
    chars = {s.measurement.tool_call_id: s.measurement.chars for s in derived.stages}
    assert chars == {"toolu_0": len(OUTPUT), "toolu_1": 500}  # code points, not bytes
    assert all(s.text is None for s in derived.stages)  # content stays out by default


def test_a_body_cut_inside_its_messages_shows_the_whole_ones_and_says_the_rest_was_not_seen():
    body = _body(OUTPUT, "x" * 60_000)
    prefix = body[: 61_440 - len(CUT_LINE)] + CUT_LINE
    derived = derive_log_event(_event(prefix, truncated=True, body_length=str(len(body))))
    assert derived is not None and derived.manifest is not None
    assert derived.manifest.tool_call_ids == ("toolu_0",)
    assert derived.manifest.tool_calls == ("toolu_0", "toolu_1")
    cut = derived.manifest.telemetry_cut or ""
    assert "60KB" in cut and "CLAUDE_CODE_OTEL_CONTENT_MAX_LENGTH" in cut
    assert "after the first 4" in cut
    (stage,) = derived.stages
    assert stage.measurement.chars == len(OUTPUT) and stage.measurement.telemetry_cut is None


def test_a_body_cut_after_its_messages_loses_nothing_they_hold() -> None:
    body = _body(OUTPUT)
    cut_at = body.index('"tools"') + 100
    exchange = read_request_body(body[:cut_at], "cut at 60KB")
    assert exchange.input is not None and exchange.input_cut is None
    assert [r.id for m in exchange.input for r in m.results] == ["toolu_0"]
    assert exchange.system and exchange.system[0].startswith("You are Claude Code.")


def test_a_persisted_output_preview_is_a_declared_spill() -> None:
    preview = (
        "<persisted-output>\nOutput too large (164.9KB). Full output saved to: "
        "/home/u/.claude/projects/p/tool-results/b.txt\n\nPreview (first 2KB):\n1\n2\n3\n"
        "...\n</persisted-output>"
    )
    derived = derive_log_event(_event(_body(preview)))
    assert derived is not None
    (stage,) = derived.stages
    assert stage.measurement.declared and stage.measurement.strategy == "spill"
    assert "persisted_output" in stage.measurement.markers_found


def test_what_is_not_a_request_body_gives_nothing_or_says_why() -> None:
    assert derive_log_event(_event(_body(OUTPUT), **{"session.id": ""})) is None
    other = LogEvent("claude_code.tool_result", 1, {"session.id": SESSION}, None, False)
    assert derive_log_event(other) is None
    derived = derive_log_event(_event("not json at all"))
    assert derived is not None and derived.manifest is not None
    assert derived.manifest.tool_calls is None
    assert "not an Anthropic Messages API request" in (derived.manifest.telemetry_cut or "")


def test_session_ids_and_claude_codes_cut_marker() -> None:
    assert session_trace_id(SESSION) == "a86abda7a99c4838abccb995fed4c93d"
    other = session_trace_id("not-a-uuid")
    assert len(other) == 32 and other == session_trace_id("not-a-uuid")
    kept, cut = telemetry_cut("abc" + CUT_LINE, "the tool.output event")
    assert kept == "abc" and cut is not None and "60KB" in cut
    assert telemetry_cut("abc\n[TRUNCATED - Content exceeds 60KB limit] more", "x")[1] is None


def _usage(sequence: int, **tokens: int | str) -> LogEvent:
    attributes = {"session.id": SESSION, "event.sequence": sequence, "model": "claude-sonnet-4-6",
                  "anthropic.provider": "firstParty", **tokens}  # fmt: skip
    return LogEvent("claude_code.api_request", 1, attributes, None, False)


def _answer(sequence: int, request: str) -> LogEvent:
    attributes = {"session.id": SESSION, "event.sequence": sequence, "request_body_id": request}
    return LogEvent("claude_code.api_response_body", 1, attributes, "{}", False)


def _body_event(request: str) -> LogEvent:
    return _event(_body(OUTPUT), request_body_id=request, **{"anthropic.provider": "firstParty"})


def test_the_usage_claude_code_reports_is_the_requests_received_stage() -> None:
    """Its api_request event names no request: the response event after it does. The
    tokens read are the uncached ones and the cache's (Anthropic counts them apart)."""
    derivation = LogDerivation()
    assert derivation.derive(_body_event("rb-1")) is not None
    usage = {"input_tokens": 19_009, "cache_read_tokens": "1000", "cache_creation_tokens": 500}
    assert derivation.derive(_usage(7, **usage)) is None  # waits for the response event
    derived = derivation.derive(_answer(9, "rb-1"))  # an assistant_response between
    assert derived is not None and derived.received is not None
    received = derived.received
    assert received.request_id == "rb-1" and received.input_tokens == 20_509
    assert received.policy == "refuse"  # Anthropic's own API, no custom base URL
    assert received.segment_call_ids.count("toolu_0") == 1
    assert derived.sent["toolu_0"].tool_name == "Bash"


def test_overlapping_requests_are_never_paired_with_a_guess() -> None:
    """Two requests in flight (subagents): two usages wait for one response, so neither
    is paired; a usage with another model, or a response to an unknown body, neither."""
    derivation = LogDerivation()
    for request in ("rb-a", "rb-b"):
        derivation.derive(_body_event(request))
    derivation.derive(_usage(10, input_tokens=100))
    derivation.derive(_usage(11, input_tokens=90_000))
    assert derivation.derive(_answer(12, "rb-a")) is None
    assert derivation.derive(_answer(13, "rb-b")) is None

    other = LogDerivation()
    other.derive(_body_event("rb-c"))
    other.derive(_usage(3, input_tokens=100, model="claude-haiku-4-5"))
    assert other.derive(_answer(4, "rb-c")) is None
    other.derive(_usage(5, input_tokens=100))
    assert other.derive(_answer(6, "rb-unknown")) is None
