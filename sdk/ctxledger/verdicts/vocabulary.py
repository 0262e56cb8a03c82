"""The words the rules share with everyone who shows or acts on a verdict.

How severe each verdict is, which verdicts are losing, what each one means in plain
language, where the stages this project adds sit in the pipeline, and how severe an
alert can be. Standard library only. The SDK's ledger, the collector, its alerts and
the dashboard import these; none of them writes them again.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

from ctxledger import semconv

#: Worst last. The worst finding of a journey gives its verdict.
VERDICT_SEVERITY: Final[dict[str, int]] = {
    semconv.VERDICT_INTACT: 0,
    semconv.VERDICT_DECLARED: 1,
    semconv.VERDICT_INCOMPLETE: 2,
    semconv.VERDICT_UNAUDITABLE: 3,
    semconv.VERDICT_UNMARKED: 4,
    semconv.VERDICT_SILENT: 5,
    semconv.VERDICT_DROPPED: 6,
    semconv.VERDICT_ORPHANED: 7,
}
#: Every verdict, mildest first.
VERDICTS: Final[tuple[str, ...]] = tuple(VERDICT_SEVERITY)

#: The verdicts that mean the model was misled or the request broke: what to fix first.
LOSING_VERDICTS: Final[tuple[str, ...]] = (
    semconv.VERDICT_SILENT,
    semconv.VERDICT_DROPPED,
    semconv.VERDICT_ORPHANED,
)

#: What each verdict means, in one plain-language line. The ledger's LOSS lines put it
#: after what was lost; the dashboard shows it beside the verdict.
VERDICT_MEANINGS: Final[dict[str, str]] = {
    semconv.VERDICT_INTACT: "nothing was lost between stages",
    semconv.VERDICT_DECLARED: "the model sees a truncation marker",
    semconv.VERDICT_INCOMPLETE: "later stages never arrived within the grace period",
    semconv.VERDICT_UNAUDITABLE: "the telemetry itself was cut or stored elsewhere: not judged",
    semconv.VERDICT_UNMARKED: "declared in telemetry, but the model sees no marker",
    semconv.VERDICT_SILENT: "no marker, not declared: the model takes the part for the whole",
    semconv.VERDICT_DROPPED: "the whole result vanished from a request",
    semconv.VERDICT_ORPHANED: "a tool call without its result, or a result without its call",
}

#: Where a loss sits, by the transition it was found in (from stage, to stage).
LOSS_LAYERS: Final[dict[tuple[str, str], str]] = {
    (semconv.STAGE_ORIGINAL, semconv.STAGE_SERIALIZED): "serialization: the tool's value "
    "became text",
    (semconv.STAGE_SERIALIZED, semconv.STAGE_ASSEMBLED): "context assembly: the context "
    "manager built the messages",
    (semconv.STAGE_ASSEMBLED, semconv.STAGE_SENT): "between the messages and the wire: the "
    "HTTP client, a middleware or a gateway",
    (semconv.STAGE_ORIGINAL, semconv.STAGE_LLM_INPUT): "between the tool and the request: the "
    "context manager or gateway",
}
#: Where a loss the model server's count shows sits (any transition into ``received``).
LAYER_MODEL_SERVER: Final = (
    "the model server: it read fewer tokens than were sent (its context window, input "
    "truncation, or context editing)"
)
#: Where a request-level finding (dropped, orphaned) sits.
LAYER_REQUEST: Final = "the request: the history the agent sent (context manager, history rebuild)"
#: Where an unauditable journey's problem sits.
LAYER_TELEMETRY: Final = "the telemetry: an attribute limit, evicted attributes or content off span"


#: A short name for each layer a report can name, for filters, alert rules and metrics.
LAYERS: Final[dict[str, str]] = {
    "serialization": LOSS_LAYERS[(semconv.STAGE_ORIGINAL, semconv.STAGE_SERIALIZED)],
    "context_assembly": LOSS_LAYERS[(semconv.STAGE_SERIALIZED, semconv.STAGE_ASSEMBLED)],
    "wire": LOSS_LAYERS[(semconv.STAGE_ASSEMBLED, semconv.STAGE_SENT)],
    "before_request": LOSS_LAYERS[(semconv.STAGE_ORIGINAL, semconv.STAGE_LLM_INPUT)],
    "model_server": LAYER_MODEL_SERVER,
    "request": LAYER_REQUEST,
    "telemetry": LAYER_TELEMETRY,
}
#: The name of a layer no short name covers (a custom stage's transition).
OTHER_LAYER: Final = "other"
_LAYER_NAMES: Final = {sentence: name for name, sentence in LAYERS.items()}


def layer_name(layer: str | None) -> str | None:
    """The short name of a report's layer (None for none; ``other`` for one between
    custom stages)."""
    if layer is None:
        return None
    return _LAYER_NAMES.get(layer, OTHER_LAYER)


def loss_layer(from_stage: str, to_stage: str) -> str:
    """Where a loss found between two stages sits in the pipeline."""
    if to_stage == semconv.STAGE_RECEIVED:
        return LAYER_MODEL_SERVER
    if to_stage == semconv.STAGE_COMPACTED:  # the runtime rebuilt the history from a summary
        return LAYER_REQUEST
    return LOSS_LAYERS.get((from_stage, to_stage), f"between stage {from_stage} and {to_stage}")


#: Where the SDK's emergency trim measures: after ``assembled`` (30), before ``sent`` (40),
#: so the messages were built and the bytes have not left yet.
STAGE_EMERGENCY_TRIM_ORDER: Final = 35

#: How urgent an alert rule says its matches are.
AlertSeverity = Literal["info", "warning", "critical"]
#: Every alert severity, mildest first.
ALERT_SEVERITIES: Final[tuple[AlertSeverity, ...]] = get_args(AlertSeverity)
