"""The alert rules file: which journeys raise an alert, and where notifications go.

The file is YAML, or TOML when its name ends in ``.toml``. In YAML::

    group_window_s: 300          # optional; so are the other tuning keys below
    rules:
      - name: lost-silently
        verdicts: [silent, dropped, orphaned]
        severity: critical
      - name: big-loss
        min_lost_token_share: 0.5
        agents: [researcher]
    sinks:
      - type: webhook
        name: ops
        url: https://hooks.example.com/ctxledger
        secrets: ["${CTXLEDGER_WEBHOOK_SECRET}"]
      - type: slack
        name: team
        url: https://hooks.slack.com/services/T000/B000/XXXX
      - type: log

Every key is checked: an unknown key (a typo), an unknown verdict, a share outside
(0, 1], a duplicate name, a rule with no condition... is an error naming the file, the
line and the key, e.g. ``alerts.yaml:4: rules[0].verdicts[1]: 'slient' is not a verdict``.
``ctxledger alerts check FILE`` prints them all.

**Secrets from the environment.** A webhook secret or a sink URL written exactly
``${NAME}`` is replaced, when the file is loaded, by the value of the environment
variable ``NAME``, so the secret itself need not be written in the file (a Slack
incoming-webhook URL is a secret too). A variable that is not set is an error naming it.
Only whole values are substituted, and only in ``secrets`` and ``url``. Error messages
never show a secret's value.
"""

from __future__ import annotations

import base64
import binascii
import difflib
import functools
import os
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

import yaml  # type: ignore[import-untyped]  # no types-PyYAML in the dev tools
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from ctxledger.verdicts import LOSING_VERDICTS, VERDICTS, AlertSeverity

__all__ = [
    "AlertsConfig",
    "AlertsConfigError",
    "LogSink",
    "Rule",
    "Severity",
    "Sink",
    "SlackSink",
    "WebhookSink",
    "default_config",
    "load_alerts_config",
    "parse_alerts_config",
]

Severity = AlertSeverity

RULE_NAME_PATTERN = r"^[a-z0-9][a-z0-9_.-]*$"
SECRET_PREFIX = "whsec_"
SINK_TYPES = ("webhook", "slack", "log")

_Loc = tuple[str | int, ...]
_STRICT = ConfigDict(frozen=True, extra="forbid")
_ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class AlertsConfigError(ValueError):
    """The alert rules file is wrong; ``problems`` says where and how, one line each.

    Each problem reads ``FILE:LINE: PATH: MESSAGE``, e.g.
    ``alerts.yaml:4: rules[1].verdicts[0]: 'slient' is not a verdict; known: ...``.
    """

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class _Located(ValueError):
    """A validation error about a part of the value validated (``loc`` is relative to it)."""

    def __init__(self, loc: _Loc, message: str) -> None:
        super().__init__(message)
        self.loc = loc


def _did_you_mean(word: object, choices: Iterable[str]) -> str:
    if not isinstance(word, str):
        return ""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _check_verdict(value: str) -> str:
    if value not in VERDICTS:
        raise ValueError(
            f"{value!r} is not a verdict{_did_you_mean(value, VERDICTS)}; "
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
            raise ValueError(f"environment variable {name} is not set (the value is ${{{name}}})")
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


_Verdict = Annotated[str, AfterValidator(_check_verdict)]
# A sink URL may come from the environment too: a Slack incoming-webhook URL is a secret.
_HttpUrl = Annotated[str, BeforeValidator(_expand_env), AfterValidator(_check_url)]
_Secret = Annotated[str, BeforeValidator(_expand_env), AfterValidator(_check_secret)]


class Rule(BaseModel):
    """One alert rule: a journey matches when every condition the rule sets holds.

    ``verdicts``, ``min_lost_token_share`` and ``must_keep_lost`` are the conditions (a
    rule needs at least one); ``agents`` and ``tools`` only narrow them (empty = any).
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


class LogSink(BaseModel):
    """Writes each notification to the collector's log."""

    model_config = _STRICT

    type: Literal["log"]
    name: str = Field(default="log", min_length=1)


Sink = Annotated[WebhookSink | SlackSink | LogSink, Field(discriminator="type")]
_SINK_MODELS: dict[str, type[BaseModel]] = {
    "webhook": WebhookSink,
    "slack": SlackSink,
    "log": LogSink,
}


def _unique_names(items: Sequence[Rule] | Sequence[Sink], what: str) -> None:
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        if item.name in first:
            raise _Located(
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


def default_config() -> AlertsConfig:
    """Alert, critically, on every journey that lost content silently; log it."""
    return AlertsConfig(
        rules=(
            Rule(
                name="lost-silently",
                verdicts=LOSING_VERDICTS,
                severity="critical",
            ),
        ),
        sinks=(LogSink(type="log"),),
    )


def load_alerts_config(path: str | Path) -> AlertsConfig:
    """Read and check an alert rules file: TOML if it ends in ``.toml``, YAML otherwise.

    Raises:
        AlertsConfigError: The file cannot be read or is wrong; every problem is listed.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as error:
        raise AlertsConfigError([f"{path}: cannot read: {error.strerror or error}"]) from None
    except UnicodeDecodeError as error:
        raise AlertsConfigError(
            [f"{path}: not UTF-8 text ({error.reason} at byte {error.start})"]
        ) from None
    return parse_alerts_config(text, str(path), toml=path.suffix.lower() == ".toml")


def parse_alerts_config(text: str, filename: str = "<alerts>", toml: bool = False) -> AlertsConfig:
    """Check alert rules given as text (YAML, or TOML); ``filename`` is for the messages.

    Raises:
        AlertsConfigError: Every problem found, each with its line.
    """
    line_of: Callable[[_Loc], int | None]
    found: list[tuple[int | None, _Loc, str]] = []
    if toml:
        data = _parse_toml(text, filename)
        line_of = _toml_line_finder(text)
    else:
        data, root = _parse_yaml(text, filename)
        line_of = functools.partial(_yaml_line, root)
        found = _yaml_duplicate_keys(root)
    if data is None:  # an empty file: "rules" and "sinks" are reported missing
        data = {}
    config: AlertsConfig | None = None
    try:
        config = AlertsConfig.model_validate(data)
    except ValidationError as error:
        found += [(line_of(loc), loc, message) for loc, message in _explain(error)]
    if found or config is None:
        found.sort(key=lambda problem: (problem[0] is None, problem[0] or 0))
        raise AlertsConfigError([_format(filename, *problem) for problem in found]) from None
    return config


# --- Problems: pydantic errors as "FILE:LINE: PATH: MESSAGE" ---------------------------


def _format(filename: str, line: int | None, loc: _Loc, message: str) -> str:
    where = f"{filename}:{line}" if line is not None else filename
    path = _path(loc)
    return f"{where}: {path}: {message}" if path else f"{where}: {message}"


def _path(loc: _Loc) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else part)
    return path


def _model_at(loc: _Loc) -> type[BaseModel] | None:
    """The model validating the mapping at ``loc`` (a pydantic loc, sink tags included)."""
    if loc == ():
        return AlertsConfig
    if len(loc) == 2 and loc[0] == "rules" and isinstance(loc[1], int):
        return Rule
    if len(loc) == 3 and loc[0] == "sinks" and isinstance(loc[1], int):
        return _SINK_MODELS.get(str(loc[2]))
    return None


def _explain(error: ValidationError) -> list[tuple[_Loc, str]]:
    explained = []
    for detail in error.errors():
        loc: _Loc = tuple(detail["loc"])
        kind = detail["type"]
        ctx = detail.get("ctx") or {}
        message = detail["msg"]
        if kind == "value_error":
            cause = ctx.get("error")
            if isinstance(cause, _Located):
                loc += cause.loc
            message = str(cause) if cause is not None else message.removeprefix("Value error, ")
        elif kind == "extra_forbidden":
            model = _model_at(loc[:-1])
            allowed = list(model.model_fields) if model is not None else []
            message = f"unknown key {loc[-1]!r}{_did_you_mean(loc[-1], allowed)}"
            if allowed:
                message += f"; allowed: {', '.join(allowed)}"
        elif loc[-1:] == ("min_lost_token_share",) and kind != "float_type":
            message = f"{message}: a share is > 0 and <= 1 (lost tokens / first-stage tokens)"
        elif kind == "missing":
            message = "required, but not given"
        elif kind == "union_tag_invalid":
            loc += ("type",)
            message = f"unknown sink type {ctx.get('tag')!r}; known: {', '.join(SINK_TYPES)}"
        elif kind == "union_tag_not_found":
            message = f"a sink needs a 'type': one of {', '.join(SINK_TYPES)}"
        elif kind in ("model_type", "model_attributes_type", "dict_type"):
            message = "expected a mapping (key: value pairs)"
        # A sink's loc carries its type tag (sinks, 0, "webhook", "url"): not a key.
        if len(loc) >= 3 and loc[0] == "sinks" and isinstance(loc[1], int) and loc[2] in SINK_TYPES:
            loc = loc[:2] + loc[3:]
        explained.append((loc, message))
    return explained


# --- YAML: lines from the composed node tree ---------------------------------------------


def _parse_yaml(text: str, filename: str) -> tuple[Any, Any]:
    """The data and the node tree (for line numbers) of a YAML document."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        what = ": ".join(str(part) for part in (error.context, error.problem) if part)
        kind = (
            "YAML error"
            if isinstance(error, yaml.constructor.ConstructorError)
            else "YAML syntax error"
        )
        raise AlertsConfigError([f"{filename}{line}: {kind}: {what}"]) from None
    except yaml.YAMLError as error:  # e.g. a ReaderError: a forbidden character
        position = getattr(error, "position", None)
        line = f":{text[:position].count(chr(10)) + 1}" if isinstance(position, int) else ""
        raise AlertsConfigError([f"{filename}{line}: YAML error: {error}"]) from None
    return data, root


def _yaml_line(node: Any, loc: _Loc) -> int | None:
    """The line of the node at ``loc``, or of its closest existing parent."""
    if node is None:
        return None
    line: int = node.start_mark.line + 1
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for key, value in reversed(node.value):  # the last of equal keys counts
                if isinstance(key, yaml.ScalarNode) and key.value == part:
                    line, node = key.start_mark.line + 1, value
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if not 0 <= part < len(node.value):
                return line
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def _yaml_duplicate_keys(root: Any) -> list[tuple[int | None, _Loc, str]]:
    """YAML keeps the last of two equal keys silently; here that is a mistake."""
    found: list[tuple[int | None, _Loc, str]] = []
    seen: set[int] = set()

    def walk(node: Any, loc: _Loc) -> None:
        if node is None or id(node) in seen:  # an alias can point back to its anchor
            return
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                walk(item, (*loc, index))
        elif isinstance(node, yaml.MappingNode):
            first: dict[str, int] = {}
            for key, value in node.value:
                if not isinstance(key, yaml.ScalarNode):
                    continue
                line = key.start_mark.line + 1
                if key.value in first:
                    message = f"duplicate key (first on line {first[key.value]})"
                    found.append((line, (*loc, key.value), message))
                else:
                    first[key.value] = line
                walk(value, (*loc, key.value))

    walk(root, ())
    return found


# --- TOML ---------------------------------------------------------------------------------


def _toml_module() -> Any:
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib
    try:  # pragma: no cover - Python 3.10
        import importlib

        return importlib.import_module("tomli")
    except ImportError:  # pragma: no cover
        raise AlertsConfigError(
            ["TOML alert files need Python 3.11 or later, or 'pip install tomli'"]
        ) from None


_TOML_POSITION = re.compile(r"\s*\((?:at line (\d+), column \d+|at end of document)\)\s*$")


def _parse_toml(text: str, filename: str) -> Any:
    tomllib = _toml_module()
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        message = str(error)
        lineno = getattr(error, "lineno", None)  # Python 3.14 has it; before, only the text
        match = _TOML_POSITION.search(message)
        if match is not None:
            lineno = lineno or (int(match.group(1)) if match.group(1) else len(text.splitlines()))
            message = message[: match.start()]
        line = f":{lineno}" if lineno else ""
        raise AlertsConfigError([f"{filename}{line}: TOML syntax error: {message}"]) from None


_TOML_HEADER = re.compile(r"^\s*(?P<open>\[\[?)\s*(?P<name>[^\[\]#]+?)\s*\]\]?\s*(?:#.*)?$")


def _toml_line_finder(text: str) -> Callable[[_Loc], int | None]:
    """Best effort: tomllib keeps no positions, so lines are found by searching the text.

    Array-of-tables headers (``[[rules]]``) are counted to find ``rules[2]``, then the key
    is searched for inside that table. Multi-line strings that look like headers or keys,
    dotted keys and inline tables can mislead it; it then gives the closest parent found.
    """
    lines = text.splitlines()
    headers: list[tuple[int, str, bool]] = []  # (index, dotted name, is an array of tables)
    for index, line in enumerate(lines):
        match = _TOML_HEADER.match(line)
        if match:
            name = ".".join(part.strip().strip("\"'") for part in match["name"].split("."))
            headers.append((index, name, match["open"] == "[["))

    def section(start: int) -> tuple[int, int]:
        end = next((h[0] for h in headers if h[0] > start), len(lines))
        return start, end

    def find(loc: _Loc) -> int | None:
        start, end = 0, headers[0][0] if headers else len(lines)
        line: int | None = 1 if lines else None  # the top-level table
        table = ""
        i = 0
        while i < len(loc):
            key = loc[i]
            if not isinstance(key, str):
                break
            dotted = f"{table}.{key}" if table else key
            following = loc[i + 1] if i + 1 < len(loc) else None
            if isinstance(following, int):
                arrays = [h[0] for h in headers if h[1] == dotted and h[2]]
                if following < len(arrays):
                    start, end = section(arrays[following])
                    line, table, i = start + 1, dotted, i + 2
                    continue
            tables = [h[0] for h in headers if h[1] == dotted and not h[2]]
            if tables:
                start, end = section(tables[0])
                line, table, i = start + 1, dotted, i + 1
                continue
            pattern = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=")
            return next((j + 1 for j in range(start, end) if pattern.match(lines[j])), line)
        return line

    return find
