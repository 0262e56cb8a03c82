"""The model server's layer: which tool results the server did not read. Pure; stdlib only.

A ``received`` span says how many input tokens the server reports it processed for one
request, next to the measuring side's own count of that request as sent, cut into
segments (one per message, each tool-result block its own). :func:`judge_received`
compares the two counts; a shortfall the tokenizer's uncertainty cannot explain was
discarded by the server, and its policy says where in the request that happened.
:mod:`.received_stages` turns the outcome into one ``received`` measurement per tool
result, which the ordinary journey rules then judge against ``sent``.

The rule is conservative: only ``shortfall - tolerance`` tokens count as certainly
discarded, so a tokenizer that differs from the model's within the tolerance never
makes a loss, and a server that reports more than was counted never does either.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from ctxledger import semconv as sc
from ctxledger.verdicts.model import ReceivedRecord

# --- what became of one tool result --------------------------------------------------
KEPT: Final = "kept"
CUT: Final = "cut"
"""Part of the result fell inside what the server discarded."""
DROPPED: Final = "dropped"
"""All of it did."""
CLEARED: Final = "cleared"
"""The server cleared it on request (context editing)."""
UNJUDGED: Final = "unjudged"
"""The server's count gives no verdict (the note says why)."""
OUTCOMES: Final = (KEPT, CUT, DROPPED, CLEARED, UNJUDGED)
#: The outcomes in which none of the result is left.
WHOLLY_LOST: Final = frozenset({DROPPED, CLEARED})


@dataclass(frozen=True)
class ReceivedTolerance:
    """How far the server's count may fall below ours before tokens count as discarded:
    ``max(ratio * counted, floor)``, one pair for a tokenizer that is the model's own and
    one for an approximation (Claude counted with cl100k, Llama or Qwen behind ollama).

    The approximate pair is wide on purpose: tokenizers of different families differ by
    up to about 20 % on ordinary text, and that must never look like a loss, while a
    server that kept 40 % of the prompt always must (a shortfall of 60 %).
    """

    exact_ratio: float = 0.02
    exact_floor: int = 32
    approximate_ratio: float = 0.30
    approximate_floor: int = 64
    #: A reported count above this multiple of ours is not a count of this request.
    absurd_ratio: float = 4.0

    def tokens(self, counted: int, exact: bool) -> int:
        """The tokens of a shortfall the tokenizer's uncertainty explains."""
        if exact:
            return max(round(self.exact_ratio * counted), self.exact_floor)
        return max(round(self.approximate_ratio * counted), self.approximate_floor)


DEFAULT_TOLERANCE: Final = ReceivedTolerance()


@dataclass(frozen=True)
class CallOutcome:
    """What the server's count says became of one tool result of the request."""

    call_id: str
    outcome: str
    lost_tokens: int = 0
    lost_chars: int = 0


@dataclass(frozen=True)
class ReceivedOutcome:
    """The judgment of one ``received`` span. ``reason`` is set when the span gives no
    verdict (every result is then ``unjudged``); ``notes`` say what the rule assumed."""

    results: tuple[CallOutcome, ...]
    reason: str | None = None
    notes: tuple[str, ...] = ()
    shortfall: int | None = None
    tolerance: int | None = None
    discarded_tokens: int = 0
    """The tokens certainly discarded: the shortfall beyond the tolerance."""

    @property
    def lost(self) -> tuple[CallOutcome, ...]:
        return tuple(r for r in self.results if r.outcome in (CUT, DROPPED, CLEARED))


_UNREPORTED_WHY: Final = {
    sc.UNREPORTED_NO_USAGE: "the response reported no usage",
    sc.UNREPORTED_STREAM_WITHOUT_USAGE: "the stream carried no usage (OpenAI chat needs "
    "stream_options.include_usage)",
    sc.UNREPORTED_STREAM_CUT: "the stream was cut off before its usage",
    sc.UNREPORTED_INVALID_COUNT: "the response's usage was not a valid count",
}


def _call_ids(record: ReceivedRecord) -> list[str]:
    """The request's tool results, each once, in order."""
    return list(dict.fromkeys(c for c in record.segment_call_ids if c))


def _no_verdict(record: ReceivedRecord) -> str | None:
    """Why the span's counts give no verdict (None: they can be judged)."""
    if record.unreported:
        why = _UNREPORTED_WHY.get(record.unreported, record.unreported)
        return f"no verdict from the model server: {why}"
    inp, counted = record.input_tokens, record.counted_tokens
    if inp is None:
        return "no verdict from the model server: the response reported no usage"
    if counted is None or counted <= 0:
        return "no verdict from the model server: the request as sent was not counted"
    if inp < 0:
        return f"no verdict from the model server: it reported a negative count ({inp:,})"
    if inp > DEFAULT_TOLERANCE.absurd_ratio * counted:
        return (
            f"no verdict from the model server: it reported {inp:,} input tokens for a "
            f"request counted at {counted:,} (more than {DEFAULT_TOLERANCE.absurd_ratio:g}x: "
            "not a count of this request)"
        )
    n = len(record.segment_call_ids)
    if len(record.segment_tokens) != n or len(record.segment_chars) != n:
        return "no verdict from the model server: the request's segments do not line up"
    if record.segment_roles and len(record.segment_roles) != n:
        return "no verdict from the model server: the request's segments do not line up"
    if min(record.segment_tokens, default=0) < 0 or min(record.segment_chars, default=0) < 0:
        return "no verdict from the model server: a segment has a negative size"
    return None


def _span(record: ReceivedRecord, discard: int, notes: list[str]) -> list[tuple[int, int]]:
    """Per segment, the (start, end) of the certainly-discarded tokens that fall in it,
    in the segment's own tokens; (0, 0) where none do."""
    tokens = record.segment_tokens
    roles = record.segment_roles or ("",) * len(tokens)
    policy = record.policy
    if policy == sc.POLICY_TOKEN_TRUNCATE:
        # The first keep_tokens stay, whatever their role; the discard follows them.
        start = record.keep_tokens or 0
        eligible = [True] * len(tokens)
    else:
        eligible = [role != sc.ROLE_SYSTEM for role in roles]
        total = sum(t for t, ok in zip(tokens, eligible, strict=True) if ok)
        if policy == sc.POLICY_MIDDLE_DISCARD:
            start = max((total - discard) // 2, 0)
        else:
            if policy != sc.POLICY_FRONT_DISCARD:
                named = "unknown" if policy is None else f"{policy!r}, not one this rule knows"
                notes.append(
                    f"the model server's policy is {named}: assumed it discards the oldest "
                    "non-system messages first"
                )
            start = 0
    end = start + discard
    spans: list[tuple[int, int]] = []
    offset = 0
    for size, ok in zip(tokens, eligible, strict=True):
        if not ok:
            spans.append((0, 0))
            continue
        lo, hi = max(start, offset), min(end, offset + size)
        spans.append((lo - offset, hi - offset) if hi > lo else (0, 0))
        offset += size
    return spans


def _whole_messages(record: ReceivedRecord) -> bool:
    """Whether the server discards whole messages: a message it reached into is gone."""
    return record.policy == sc.POLICY_FRONT_DISCARD


def reads_everything(
    record: ReceivedRecord, tolerance: ReceivedTolerance = DEFAULT_TOLERANCE
) -> bool:
    """Whether :func:`judge_received` keeps every result of the request, with no reason
    and no note, told without building an outcome per result (a long run's request
    carries hundreds). False may still be such an outcome."""
    if _no_verdict(record) is not None or record.policy == sc.POLICY_PROVIDER_EDIT:
        return False
    return record.policy == sc.POLICY_REFUSE or _discarded(record, tolerance)[2] <= 0


def _discarded(record: ReceivedRecord, tolerance: ReceivedTolerance) -> tuple[int, int, int]:
    """(shortfall, tolerance, tokens certainly discarded from the segments) of a record
    that can be judged. Tokens counted outside the segments (reply priming, tool
    definitions) may be what the server left out: only a discard beyond them certainly
    fell in a segment."""
    inp, counted = record.input_tokens, record.counted_tokens
    assert inp is not None and counted is not None
    shortfall = counted - inp
    allowed = tolerance.tokens(counted, record.exact)
    overhead = max(counted - sum(record.segment_tokens), 0)
    return shortfall, allowed, shortfall - allowed - overhead


def judge_received(
    record: ReceivedRecord, tolerance: ReceivedTolerance = DEFAULT_TOLERANCE
) -> ReceivedOutcome:
    """What became of each tool result of the request, by the server's count."""
    calls = _call_ids(record)
    reason = _no_verdict(record)
    if reason is not None:
        return ReceivedOutcome(tuple(CallOutcome(c, UNJUDGED) for c in calls), reason=reason)
    if record.policy == sc.POLICY_REFUSE:
        return ReceivedOutcome(tuple(CallOutcome(c, KEPT) for c in calls))
    if record.policy == sc.POLICY_PROVIDER_EDIT:
        return _edited(record, calls)
    shortfall, allowed, discard = _discarded(record, tolerance)
    if discard <= 0:  # within the tolerance, or beyond the segments
        kept = tuple(CallOutcome(c, KEPT) for c in calls)
        return ReceivedOutcome(kept, shortfall=shortfall, tolerance=allowed)
    notes: list[str] = []
    spans = _span(record, discard, notes)
    lost: dict[str, list[int]] = {c: [0, 0, 0, 0] for c in calls}  # tokens, chars, in, of
    for call_id, size, chars, (lo, hi) in zip(
        record.segment_call_ids, record.segment_tokens, record.segment_chars, spans, strict=True
    ):
        if not call_id:
            continue
        entry = lost[call_id]
        entry[3] += size
        overlap = hi - lo
        if overlap <= 0:
            continue
        if _whole_messages(record) or overlap >= size:
            entry[0] += size
            entry[1] += chars
            entry[2] += size
        else:
            entry[0] += overlap
            entry[1] += round(chars * overlap / size) if size else 0
            entry[2] += overlap
    results = []
    for call_id in calls:
        tokens, chars, inside, of = lost[call_id]
        outcome = KEPT if inside == 0 else DROPPED if inside >= of else CUT
        results.append(CallOutcome(call_id, outcome, tokens, chars))
    return ReceivedOutcome(
        tuple(results),
        notes=tuple(notes),
        shortfall=shortfall,
        tolerance=allowed,
        discarded_tokens=discard,
    )


def _edited(record: ReceivedRecord, calls: list[str]) -> ReceivedOutcome:
    """Context editing: exactly the results the server says it cleared."""
    cleared = set(record.cleared_call_ids)
    sizes: dict[str, list[int]] = {c: [0, 0] for c in calls}
    for call_id, size, chars in zip(
        record.segment_call_ids, record.segment_tokens, record.segment_chars, strict=True
    ):
        if call_id in cleared:
            sizes[call_id][0] += size
            sizes[call_id][1] += chars
    results = tuple(
        CallOutcome(c, CLEARED, *sizes[c]) if c in cleared else CallOutcome(c, KEPT) for c in calls
    )
    unknown = sorted(cleared - set(calls))
    notes = (f"the server cleared results not in the request: {', '.join(unknown)}",)
    return ReceivedOutcome(results, notes=notes if unknown else ())
