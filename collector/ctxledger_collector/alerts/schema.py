"""The alert rules file's schema: every key, its type, its limits and its checks.

A mistake raises a ``ValueError`` whose text is the message the reader sees; the loading
(:mod:`ctxledger_collector.alerts.config`) adds the file and the line.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Sequence
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from ctxledger.verdicts import LAYERS, LOSING_VERDICTS, OTHER_LAYER, VERDICTS, AlertSeverity
from ctxledger_collector.alerts.destination_guard import static_problem
from ctxledger_collector.alerts.problems import Loc, Located, did_you_mean

Severity = AlertSeverity

RULE_NAME_PATTERN = r"^[a-z0-9][a-z0-9_.-]*$"
SECRET_PREFIX = "whsec_"
SINK_TYPES = ("webhook", "slack", "log")

_STRICT = ConfigDict(frozen=True, extra="forbid")
_ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _check_verdict(value: str) -> str:
    if value not in VERDICTS:
        raise ValueError(
            f"{value!r} is not a verdict{did_you_mean(value, VERDICTS)}; "
            f"known: {', '.join(VERDICTS)}"
        )
    return value


def _check_url(value: str) -> str:
    # The value stays out of the message: a Slack webhook URL is itself a credential.
    try:
        parts = urlsplit(value)
    except ValueError:
        parts = None
    if (
        parts is None
        or parts.scheme not in ("http", "https")
        or not parts.hostname
        or any(c.isspace() for c in value)
    ):
        scheme = f"scheme {parts.scheme!r}" if parts is not None and parts.scheme else "no scheme"
        raise ValueError(
            f"not an http:// or https:// URL with a host ({scheme}; the value is not shown)"
        )
    return value


def _expand_env(value: Any) -> Any:
    """``${NAME}`` becomes the value of the environment variable ``NAME``."""
    if isinstance(value, str) and (match := _ENV_REFERENCE.fullmatch(value)):
        name = match.group(1)
        if name not in os.environ:
            raise ValueError(
                f"environment variable {name} is not set (the value is ${{{name}}}): export it "
                "in the shell that runs this check and the collector, or write the value here"
            )
        return os.environ[name]
    return value


def _check_secret(value: str) -> str:
    # The value stays out of every message: it may end up in a log.
    if not value.startswith(SECRET_PREFIX):
        raise ValueError(f"a signing secret starts with {SECRET_PREFIX!r} (the value is not shown)")
    encoded = value[len(SECRET_PREFIX) :]
    try:  # unpadded base64 is accepted, as ctxledger.webhooks and other libraries do
        key = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
    except binascii.Error:
        raise ValueError(
            f"a signing secret is {SECRET_PREFIX!r} followed by base64; this one is not "
            "valid base64 (the value is not shown)"
        ) from None
    if not key:
        raise ValueError(f"the signing secret is empty after {SECRET_PREFIX!r}")
    return value


def _check_destination(name: str, url: str, allow_loopback: bool) -> None:
    """Refuse at load a sink that delivery would always refuse (its URL not shown)."""
    problem = static_problem(urlsplit(url).hostname or "", allow_loopback)
    if problem:
        always = "" if "allow_loopback" in problem else " (allow_loopback does not change that)"
        raise Located(
            ("url",),
            f"sink {name!r}: the URL's host is {problem}; notifications are never sent "
            f"there{always}",
        )


_Verdict = Annotated[str, AfterValidator(_check_verdict)]


def _check_layer(value: str) -> str:
    known = [*LAYERS, OTHER_LAYER]
    if value not in known:
        raise ValueError(
            f"{value!r} is not a layer{did_you_mean(value, known)}; known: {', '.join(known)}"
        )
    return value


_Layer = Annotated[str, AfterValidator(_check_layer)]
# A sink URL may come from the environment too: a Slack incoming-webhook URL is a secret.
_HttpUrl = Annotated[str, BeforeValidator(_expand_env), AfterValidator(_check_url)]
_Secret = Annotated[str, BeforeValidator(_expand_env), AfterValidator(_check_secret)]


class Rule(BaseModel):
    """One alert rule: a journey matches when every condition the rule sets holds.

    ``verdicts``, ``min_lost_token_share`` and ``must_keep_lost`` are the conditions (a
    rule needs at least one); ``agents``, ``tools`` and ``layers`` only narrow them
    (empty = any).
    """

    model_config = _STRICT

    name: str = Field(pattern=RULE_NAME_PATTERN, description="unique across the rules")
    verdicts: tuple[_Verdict, ...] = Field(default=(), description="empty = any verdict")
    min_lost_token_share: float | None = Field(
        default=None,
        gt=0,
        le=1,
        allow_inf_nan=False,
        description="lost tokens over the tokens at the first stage must exceed this",
    )
    must_keep_lost: bool = Field(
        default=False, description="must-keep items were lost (even when the loss is declared)"
    )
    agents: tuple[str, ...] = Field(default=(), description="empty = any agent")
    tools: tuple[str, ...] = Field(default=(), description="empty = any tool")
    layers: tuple[_Layer, ...] = Field(
        default=(),
        description="where the loss sits (model_server, before_request, request, ...); "
        "empty = any layer",
    )
    severity: Severity = "warning"

    @model_validator(mode="after")
    def _has_a_condition(self) -> Rule:
        if not self.verdicts and self.min_lost_token_share is None and not self.must_keep_lost:
            raise ValueError(
                "the rule sets no condition (verdicts, min_lost_token_share or "
                "must_keep_lost), so it would alert on every journey, including intact ones"
            )
        return self


class WebhookSink(BaseModel):
    """POSTs each notification as JSON, signed the Standard Webhooks way with every secret."""

    model_config = _STRICT

    type: Literal["webhook"]
    name: str = Field(min_length=1)
    url: _HttpUrl
    secrets: tuple[_Secret, ...] = Field(
        repr=False, description="'whsec_' + base64, or '${ENV_VAR}'; several while rotating"
    )
    timeout_s: float = Field(default=10, gt=0, allow_inf_nan=False)
    allow_loopback: bool = Field(
        default=False,
        description="deliver even when the host is a loopback address (a receiver on the "
        "collector's own machine); link-local and cloud metadata addresses stay refused",
    )

    @model_validator(mode="after")
    def _reachable(self) -> WebhookSink:
        _check_destination(self.name, self.url, self.allow_loopback)
        return self

    @field_validator("secrets")
    @classmethod
    def _at_least_one(cls, secrets: tuple[str, ...]) -> tuple[str, ...]:
        if not secrets:
            raise ValueError(
                f"a webhook needs at least one signing secret ({SECRET_PREFIX!r} + base64)"
            )
        return secrets


class SlackSink(BaseModel):
    """Posts each notification to a Slack incoming webhook."""

    model_config = _STRICT

    type: Literal["slack"]
    name: str = Field(min_length=1)
    url: _HttpUrl
    timeout_s: float = Field(default=10, gt=0, allow_inf_nan=False)
    allow_loopback: bool = Field(
        default=False,
        description="deliver even when the host is a loopback address (a receiver on the "
        "collector's own machine); link-local and cloud metadata addresses stay refused",
    )

    @model_validator(mode="after")
    def _reachable(self) -> SlackSink:
        _check_destination(self.name, self.url, self.allow_loopback)
        return self


class LogSink(BaseModel):
    """Writes each notification to the collector's log (stderr), or appends it to a file."""

    model_config = _STRICT

    type: Literal["log"]
    name: str = Field(default="log", min_length=1)
    path: str | None = Field(
        default=None,
        min_length=1,
        description="append each notification as one JSON line to this file, not stderr",
    )


Sink = Annotated[WebhookSink | SlackSink | LogSink, Field(discriminator="type")]
SINK_MODELS: dict[str, type[BaseModel]] = {
    "webhook": WebhookSink,
    "slack": SlackSink,
    "log": LogSink,
}


def _unique_names(items: Sequence[Rule] | Sequence[Sink], what: str) -> None:
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        if item.name in first:
            raise Located(
                (index, "name"),
                f"duplicate {what} name {item.name!r} "
                f"(already used by {what}s[{first[item.name]}])",
            )
        first[item.name] = index


class AlertsConfig(BaseModel):
    """The whole alert rules file."""

    model_config = _STRICT

    group_window_s: float = Field(
        default=300, gt=0, allow_inf_nan=False, description="matches are grouped this long"
    )
    resolve_after_s: float = Field(
        default=900, gt=0, allow_inf_nan=False, description="quiet time before 'resolved'"
    )
    max_attempts: int = Field(default=12, ge=1, description="deliveries tried per notification")
    max_backoff_s: float = Field(default=3600, gt=0, allow_inf_nan=False)
    label_cap: int = Field(
        default=100,
        ge=1,
        description="distinct agent/tool label values per metric; the rest become 'other'",
    )
    rules: tuple[Rule, ...]
    sinks: tuple[Sink, ...]

    @field_validator("rules")
    @classmethod
    def _check_rules(cls, rules: tuple[Rule, ...]) -> tuple[Rule, ...]:
        if not rules:
            raise ValueError("at least one rule is needed")
        _unique_names(rules, "rule")
        return rules

    @field_validator("sinks")
    @classmethod
    def _check_sinks(cls, sinks: tuple[Sink, ...]) -> tuple[Sink, ...]:
        if not sinks:
            raise ValueError(f"at least one sink is needed ({', '.join(SINK_TYPES)})")
        _unique_names(sinks, "sink")
        return sinks


def default_config(log_file: str | None = None) -> AlertsConfig:
    """Alert, critically, on every losing journey (silent, dropped or orphaned: the rule's
    name says so); log it (to stderr, or appended to ``log_file``)."""
    return AlertsConfig(
        rules=(
            Rule(
                name="silent-dropped-orphaned",
                verdicts=LOSING_VERDICTS,
                severity="critical",
            ),
        ),
        sinks=(LogSink(type="log", path=log_file),),
    )


def model_at(loc: Loc) -> type[BaseModel] | None:
    """The model validating the mapping at ``loc`` (a pydantic loc, sink tags included)."""
    if loc == ():
        return AlertsConfig
    if len(loc) == 2 and loc[0] == "rules" and isinstance(loc[1], int):
        return Rule
    if len(loc) == 3 and loc[0] == "sinks" and isinstance(loc[1], int):
        return SINK_MODELS.get(str(loc[2]))
    return None
