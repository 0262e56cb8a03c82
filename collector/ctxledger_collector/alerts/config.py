"""The alert rules file: which journeys raise an alert, and where notifications go.

The file is YAML, or TOML when its name ends in ``.toml``. In YAML::

    group_window_s: 300          # optional; so are the other tuning keys below
    rules:
      - name: silent-dropped-orphaned
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

import functools
from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError

from ctxledger_collector.alerts.problems import (
    AlertsConfigError,
    Loc,
    Located,
    Problem,
    did_you_mean,
    format_problem,
)
from ctxledger_collector.alerts.schema import (
    SINK_TYPES,
    AlertsConfig,
    LogSink,
    Rule,
    Severity,
    Sink,
    SlackSink,
    WebhookSink,
    default_config,
    model_at,
)
from ctxledger_collector.alerts.toml_lines import parse_toml, toml_line_finder
from ctxledger_collector.alerts.yaml_lines import parse_yaml, yaml_duplicate_keys, yaml_line

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
    line_of: Callable[[Loc], int | None]
    found: list[Problem] = []
    if toml:
        data = parse_toml(text, filename)
        line_of = toml_line_finder(text)
    else:
        data, root = parse_yaml(text, filename)
        line_of = functools.partial(yaml_line, root)
        found = yaml_duplicate_keys(root)
    if data is None:  # an empty file: "rules" and "sinks" are reported missing
        data = {}
    config: AlertsConfig | None = None
    try:
        config = AlertsConfig.model_validate(data)
    except ValidationError as error:
        found += [(line_of(loc), loc, message) for loc, message in _explain(error)]
    if found or config is None:
        found.sort(key=lambda problem: (problem[0] is None, problem[0] or 0))
        raise AlertsConfigError([format_problem(filename, *problem) for problem in found]) from None
    return config


def _explain(error: ValidationError) -> list[tuple[Loc, str]]:
    """pydantic's errors as (location, message) in the words of the rules file."""
    explained = []
    for detail in error.errors():
        loc: Loc = tuple(detail["loc"])
        kind = detail["type"]
        ctx = detail.get("ctx") or {}
        message = detail["msg"]
        if kind == "value_error":
            cause = ctx.get("error")
            if isinstance(cause, Located):
                loc += cause.loc
            message = str(cause) if cause is not None else message.removeprefix("Value error, ")
        elif kind == "extra_forbidden":
            model = model_at(loc[:-1])
            allowed = list(model.model_fields) if model is not None else []
            message = f"unknown key {loc[-1]!r}{did_you_mean(loc[-1], allowed)}"
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
