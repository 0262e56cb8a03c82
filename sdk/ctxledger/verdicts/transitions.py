"""The rules for one stage transition: what a later stage lost relative to the one before.
Pure; stdlib only."""

from __future__ import annotations

from ctxledger import semconv
from ctxledger.verdicts.model import Measurement, Tolerances, Transition
from ctxledger.verdicts.received import KEPT, UNJUDGED, WHOLLY_LOST


def _size_fell(before: int | None, after: int | None, ratio: float, floor: int) -> int:
    """The amount lost when the fall exceeds the tolerance, else 0."""
    if before is None or after is None:
        return 0
    fall = before - after
    return fall if fall > max(floor, ratio * before) else 0


def _chars_fell(prev: Measurement, cur: Measurement, lost: int) -> str:
    """The reason for a fall in chars, with the two sizes it compares: the JSON content's
    (whitespace and escaping left out) when both stages measured it, else the text's."""
    if prev.canonical_chars is not None and cur.canonical_chars is not None:
        sizes = f"{prev.canonical_chars:,} -> {cur.canonical_chars:,}"
        return f"JSON chars fell by {lost:,} ({sizes}; whitespace and escaping not counted)"
    return f"chars fell by {lost:,} ({prev.chars:,} -> {cur.chars:,})"


def compare(prev: Measurement, cur: Measurement, tolerances: Tolerances) -> Transition:
    """What ``cur`` lost relative to ``prev``: the rules for one stage transition."""
    if cur.received is not None:
        return _server_read(prev, cur)
    same_content = (prev.canonical_sha256 and prev.canonical_sha256 == cur.canonical_sha256) or (
        prev.sha256 and prev.sha256 == cur.sha256
    )
    if same_content:
        return Transition(prev.stage, cur.stage, semconv.VERDICT_INTACT)
    cut = prev.telemetry_cut or cur.telemetry_cut
    if cut and told_after_cut(prev, cur):
        return Transition(
            prev.stage,
            cur.stage,
            loss_verdict(cur),
            reasons=(
                f"{cur.stage} tells the model it holds a part; how much went is not known: {cut}",
            ),
        )
    if cut:  # the telemetry's own cut is not pipeline loss: the sizes cannot be compared
        return Transition(
            prev.stage, cur.stage, semconv.VERDICT_UNAUDITABLE, reasons=(f"not auditable: {cut}",)
        )

    reasons: list[str] = []
    lost_items = 0
    if prev.items is not None and cur.items is not None and cur.items < prev.items:
        lost_items = prev.items - cur.items
        reasons.append(f"items {prev.items:,} -> {cur.items:,}")

    lost_ids: tuple[str, ...] = ()
    if prev.item_ids is not None and cur.item_ids is not None and cur.ids_complete and cur.trusted:
        present = set(cur.item_ids)
        lost_ids = tuple(i for i in prev.item_ids if i not in present)
        if lost_ids:
            reasons.append(f"{len(lost_ids):,} item ids missing")

    lost_fields: tuple[str, ...] = ()
    fields_comparable = cur.fields is not None and cur.fields_complete and cur.trusted
    if prev.fields and fields_comparable and cur.fields is not None and (cur.items or 0) > 0:
        present_fields = set(cur.fields)
        lost_fields = tuple(f for f in prev.fields if f not in present_fields)
        if lost_fields:
            reasons.append("fields dropped from every item: " + ", ".join(lost_fields))

    if prev.canonical_chars is not None and cur.canonical_chars is not None:
        # Canonical sizes are free of escaping and whitespace; raw sizes are not.
        lost_chars = _size_fell(
            prev.canonical_chars,
            cur.canonical_chars,
            tolerances.chars_ratio,
            tolerances.chars_floor,
        )
        lost_tokens = 0
    else:
        lost_chars = _size_fell(
            prev.chars, cur.chars, tolerances.chars_ratio, tolerances.chars_floor
        )
        same_tokenizer = prev.tokenizer == cur.tokenizer
        lost_tokens = (
            _size_fell(prev.tokens, cur.tokens, tolerances.tokens_ratio, tolerances.tokens_floor)
            if same_tokenizer
            else 0
        )
    if prev.json_valid and cur.json_valid is False:
        reasons.append("the JSON no longer parses")
    if lost_chars:
        reasons.append(_chars_fell(prev, cur, lost_chars))
    if lost_tokens:
        reasons.append(f"tokens fell by {lost_tokens:,} ({prev.tokens:,} -> {cur.tokens:,})")

    lost_priority = 0
    if prev.priority_items is not None and cur.priority_items is not None:
        lost_priority = max(0, prev.priority_items - cur.priority_items)
        if lost_priority:
            reasons.append(f"{lost_priority:,} must-keep items lost")

    if not reasons:
        return Transition(prev.stage, cur.stage, semconv.VERDICT_INTACT)
    if lost_chars or lost_items or lost_ids:
        # Report the size of what went, even when it alone did not cross the line.
        canonical = prev.canonical_chars is not None and cur.canonical_chars is not None
        before, after = (prev.canonical_chars, cur.canonical_chars) if canonical else (None, None)
        lost_chars = max(lost_chars, (before or prev.chars) - (after or cur.chars), 0)
        if prev.tokens is not None and cur.tokens is not None and prev.tokenizer == cur.tokenizer:
            lost_tokens = max(lost_tokens, prev.tokens - cur.tokens, 0)
    return Transition(
        from_stage=prev.stage,
        to_stage=cur.stage,
        verdict=loss_verdict(cur),
        lost_items=max(lost_items, len(lost_ids)),
        lost_item_ids=lost_ids,
        lost_fields=lost_fields,
        lost_chars=lost_chars,
        lost_tokens=lost_tokens,
        lost_priority_items=lost_priority,
        reasons=tuple(reasons),
    )


def _server_read(prev: Measurement, cur: Measurement) -> Transition:
    """The model server's stage states what the result lost (its count covers the whole
    request, so the result's own size at the server is never measured)."""
    if cur.received in (KEPT, UNJUDGED):
        return Transition(prev.stage, cur.stage, semconv.VERDICT_INTACT)
    whole = cur.received in WHOLLY_LOST
    lost_chars, lost_tokens = cur.lost_chars, cur.lost_tokens
    if whole:  # all of it: the earlier stage's own size says how much that was
        lost_chars = prev.chars
        if prev.tokens is not None and prev.tokenizer == cur.tokenizer:
            lost_tokens = prev.tokens
    told = cur.declared or cur.sees_marker
    verdict = semconv.VERDICT_DROPPED if whole and not told else loss_verdict(cur)
    reason = cur.note or "the model server did not read this result"
    return Transition(
        from_stage=prev.stage,
        to_stage=cur.stage,
        verdict=verdict,
        lost_chars=lost_chars,
        lost_tokens=lost_tokens,
        reasons=(reason,),
    )


def told_after_cut(prev: Measurement, cur: Measurement) -> bool:
    """Whether ``cur`` tells the model it holds only part of a result whose earlier stage
    the telemetry cut: the model is told whatever the cut hid, so the reduction is
    declared, only its size unknown."""
    return prev.telemetry_cut is not None and cur.telemetry_cut is None and cur.sees_marker


def loss_verdict(stage: Measurement) -> str:
    """How a loss at ``stage`` is judged: declared (marker), unmarked, or silent."""
    if stage.sees_marker:
        return semconv.VERDICT_DECLARED
    if stage.declared:
        return semconv.VERDICT_UNMARKED
    return semconv.VERDICT_SILENT
