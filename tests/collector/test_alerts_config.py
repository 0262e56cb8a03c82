"""The alert rules file: valid YAML and TOML, and every mistake with its line."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pydantic
import pytest

from ctxledger.verdicts import VERDICTS
from ctxledger_collector.alerts.config import (
    AlertsConfig,
    AlertsConfigError,
    LogSink,
    Rule,
    SlackSink,
    WebhookSink,
    default_config,
    load_alerts_config,
    parse_alerts_config,
)

ROOT = Path(__file__).resolve().parents[2]
SECRET = "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3"
OTHER_SECRET = "whsec_c2Vjb25kIHNlY3JldCBmb3Igcm90YXRpb24"  # unpadded base64
ENV = "CTXLEDGER_TEST_ALERTS_SECRET"

VALID_YAML = f"""\
group_window_s: 60
resolve_after_s: 120
max_attempts: 3
label_cap: 20
rules:
  - name: silent-dropped-orphaned
    verdicts: [silent, dropped, orphaned]
    severity: critical
  - name: big.loss_1
    min_lost_token_share: 0.5
    agents: [researcher]
    tools: [web_search, fetch]
  - name: must-keep
    must_keep_lost: true
    severity: info
sinks:
  - type: webhook
    name: ops
    url: https://hooks.example.com/ctxledger
    secrets: ["{SECRET}", "${{{ENV}}}"]
    timeout_s: 2.5
  - type: slack
    name: team
    url: https://hooks.slack.com/services/T000/B000/XXXX
  - type: log
"""

VALID_TOML = f"""\
group_window_s = 60
resolve_after_s = 120
max_attempts = 3
label_cap = 20

[[rules]]
name = "silent-dropped-orphaned"
verdicts = ["silent", "dropped", "orphaned"]
severity = "critical"

[[rules]]
name = "big.loss_1"
min_lost_token_share = 0.5
agents = ["researcher"]
tools = ["web_search", "fetch"]

[[rules]]
name = "must-keep"
must_keep_lost = true
severity = "info"

[[sinks]]
type = "webhook"
name = "ops"
url = "https://hooks.example.com/ctxledger"
secrets = ["{SECRET}", "${{{ENV}}}"]
timeout_s = 2.5

[[sinks]]
type = "slack"
name = "team"
url = "https://hooks.slack.com/services/T000/B000/XXXX"

[[sinks]]
type = "log"
"""


@pytest.fixture
def env_secret(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(ENV, OTHER_SECRET)
    return OTHER_SECRET


def _problems(text: str, toml: bool = False) -> list[str]:
    filename = "alerts.toml" if toml else "alerts.yaml"
    with pytest.raises(AlertsConfigError) as raised:
        parse_alerts_config(textwrap.dedent(text), filename, toml=toml)
    assert str(raised.value) == "\n".join(raised.value.problems)
    return raised.value.problems


def _one_problem(text: str, toml: bool = False) -> str:
    problems = _problems(text, toml)
    assert len(problems) == 1, problems
    return problems[0]


def _check_valid(config: AlertsConfig, secret_from_env: str) -> None:
    assert (config.group_window_s, config.resolve_after_s) == (60, 120)
    assert (config.max_attempts, config.label_cap, config.max_backoff_s) == (3, 20, 3600)
    assert [rule.name for rule in config.rules] == [
        "silent-dropped-orphaned",
        "big.loss_1",
        "must-keep",
    ]
    silently, big, must_keep = config.rules
    assert silently.verdicts == ("silent", "dropped", "orphaned")
    assert silently.severity == "critical"
    assert silently.min_lost_token_share is None
    assert big.min_lost_token_share == 0.5
    assert (big.agents, big.tools, big.verdicts) == (("researcher",), ("web_search", "fetch"), ())
    assert big.severity == "warning"
    assert must_keep.must_keep_lost is True
    assert must_keep.severity == "info"
    webhook, slack, log = config.sinks
    assert isinstance(webhook, WebhookSink)
    assert webhook.secrets == (SECRET, secret_from_env)
    assert webhook.timeout_s == 2.5
    assert isinstance(slack, SlackSink)
    assert slack.url == "https://hooks.slack.com/services/T000/B000/XXXX"
    assert slack.timeout_s == 10
    assert isinstance(log, LogSink)
    assert log.name == "log"


def test_a_valid_yaml_file_loads_with_secrets_from_the_environment(
    tmp_path: Path, env_secret: str
) -> None:
    path = tmp_path / "alerts.yaml"
    path.write_text(VALID_YAML, encoding="utf-8")
    _check_valid(load_alerts_config(path), env_secret)


def test_a_valid_toml_file_loads_the_same_config(tmp_path: Path, env_secret: str) -> None:
    path = tmp_path / "alerts.toml"
    path.write_text(VALID_TOML, encoding="utf-8")
    config = load_alerts_config(str(path))
    _check_valid(config, env_secret)
    assert config == parse_alerts_config(VALID_YAML)


def test_the_secret_is_read_when_the_file_is_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, SECRET)
    first = parse_alerts_config(VALID_YAML).sinks[0]
    monkeypatch.setenv(ENV, OTHER_SECRET)
    second = parse_alerts_config(VALID_YAML).sinks[0]
    assert isinstance(first, WebhookSink)
    assert isinstance(second, WebhookSink)
    assert (first.secrets[1], second.secrets[1]) == (SECRET, OTHER_SECRET)
    assert SECRET not in repr(first)


def test_the_config_is_frozen(env_secret: str) -> None:
    config = parse_alerts_config(VALID_YAML)
    with pytest.raises(pydantic.ValidationError):
        config.rules[0].severity = "info"  # type: ignore[misc]


def test_the_default_alerts_critically_on_silent_losses_and_logs() -> None:
    config = default_config()
    assert len(config.rules) == 1
    rule = config.rules[0]
    assert rule.name == "silent-dropped-orphaned"
    assert set(rule.verdicts) == {"silent", "dropped", "orphaned"}
    assert set(rule.verdicts) <= set(VERDICTS)
    assert rule.severity == "critical"
    assert (rule.agents, rule.tools, rule.must_keep_lost) == ((), (), False)
    assert config.sinks == (LogSink(type="log"),)
    assert (config.group_window_s, config.resolve_after_s, config.max_attempts) == (300, 900, 12)
    assert (config.max_backoff_s, config.label_cap) == (3600, 100)


def test_models_check_themselves_when_built_in_code() -> None:
    with pytest.raises(pydantic.ValidationError, match="every journey, including intact ones"):
        Rule(name="any")
    with pytest.raises(pydantic.ValidationError, match="duplicate rule name"):
        AlertsConfig(
            rules=(Rule(name="a", verdicts=("silent",)), Rule(name="a", must_keep_lost=True)),
            sinks=(LogSink(type="log"),),
        )


# --- Mistakes, each with its line ---------------------------------------------------------


def test_a_verdict_typo_names_the_verdict_and_its_line() -> None:
    problem = _one_problem("""\
        rules:
          - name: a
            verdicts:
              - silent
              - slient
        sinks:
          - type: log
        """)
    assert problem.startswith("alerts.yaml:5: rules[0].verdicts[1]: 'slient' is not a verdict")
    assert "(did you mean 'silent'?)" in problem
    assert "known: " + ", ".join(VERDICTS) in problem


def test_an_unknown_key_is_an_error_with_a_suggestion() -> None:
    problem = _one_problem("""\
        rules:
          - name: a
            verdicts: [silent]
          - name: b
            verdits: [dropped]
            must_keep_lost: true
        sinks:
          - type: log
        """)
    assert problem.startswith("alerts.yaml:5: rules[1].verdits: unknown key 'verdits'")
    assert "(did you mean 'verdicts'?)" in problem


def test_an_unknown_top_level_key_is_an_error() -> None:
    problem = _one_problem("""\
        rules:
          - {name: a, verdicts: [silent]}
        sinks:
          - type: log
        group_windows_s: 10
        """)
    assert problem.startswith("alerts.yaml:5: group_windows_s: unknown key")
    assert "did you mean 'group_window_s'?" in problem


@pytest.mark.parametrize("share", ["0", "1.5", "-0.1", ".inf"])
def test_a_share_outside_zero_to_one_is_an_error(share: str) -> None:
    problem = _one_problem(f"""\
        rules:
          - name: a
            verdicts: [silent]

            min_lost_token_share: {share}
        sinks:
          - type: log
        """)
    assert problem.startswith("alerts.yaml:5: rules[0].min_lost_token_share: ")
    assert "a share is > 0 and <= 1" in problem


def test_a_share_of_one_is_allowed() -> None:
    config = parse_alerts_config(
        "rules: [{name: a, min_lost_token_share: 1}]\nsinks: [{type: log}]"
    )
    assert config.rules[0].min_lost_token_share == 1


def test_a_duplicate_rule_name_points_at_the_second_one() -> None:
    problem = _one_problem("""\
        rules:
          - name: lost
            verdicts: [silent]
          - verdicts: [dropped]
            name: lost
        sinks:
          - type: log
        """)
    assert problem == (
        "alerts.yaml:5: rules[1].name: duplicate rule name 'lost' (already used by rules[0])"
    )


def test_a_bad_rule_name_is_an_error() -> None:
    problem = _one_problem("""\
        rules:
          - name: Lost Silently
            verdicts: [silent]
        sinks:
          - type: log
        """)
    assert problem.startswith("alerts.yaml:2: rules[0].name: ")
    assert "^[a-z0-9][a-z0-9_.-]*$" in problem


def test_a_rule_without_a_condition_is_an_error() -> None:
    problem = _one_problem("""\
        rules:
          - name: a
            verdicts: [silent]
          - name: everything
            agents: [researcher]
            severity: critical
        sinks:
          - type: log
        """)
    assert problem.startswith("alerts.yaml:4: rules[1]: the rule sets no condition")
    assert "would alert on every journey, including intact ones" in problem


def test_a_webhook_without_secrets_is_an_error() -> None:
    missing = _one_problem("""\
        rules: [{name: a, verdicts: [silent]}]
        sinks:
          - type: log
          - type: webhook
            name: ops
            url: https://hooks.example.com/x
        """)
    assert missing == "alerts.yaml:4: sinks[1].secrets: required, but not given"
    empty = _one_problem("""\
        rules: [{name: a, verdicts: [silent]}]
        sinks:
          - type: webhook
            name: ops
            url: https://hooks.example.com/x
            secrets: []
        """)
    assert empty.startswith("alerts.yaml:6: sinks[0].secrets: a webhook needs at least one")


@pytest.mark.parametrize(
    ("secret", "message"),
    [
        ("c2VjcmV0IHdpdGhvdXQgcHJlZml4", "a signing secret starts with 'whsec_'"),
        ("whsec_not*base64!", "this one is not valid base64"),
        ("whsec_", "the signing secret is empty"),
    ],
)
def test_a_malformed_secret_is_an_error_that_does_not_show_it(secret: str, message: str) -> None:
    problem = _one_problem(f"""\
        rules: [{{name: a, verdicts: [silent]}}]
        sinks:
          - type: webhook
            name: ops
            url: https://hooks.example.com/x
            secrets:
              - {SECRET}
              - "{secret}"
        """)
    assert problem.startswith("alerts.yaml:8: sinks[0].secrets[1]: ")
    assert message in problem
    if secret != "whsec_":
        assert secret not in problem


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://hooks.example.com/x", "scheme 'ftp'"),
        ("hooks.slack.com/services/T0/B0/XX", "no scheme"),
        ("https:///only-a-path", "scheme 'https'"),
    ],
)
def test_a_bad_url_is_an_error(url: str, message: str) -> None:
    problem = _one_problem(f"""\
        rules: [{{name: a, verdicts: [silent]}}]
        sinks:
          - type: slack
            name: team
            url: "{url}"
        """)
    assert problem.startswith("alerts.yaml:5: sinks[0].url: not an http:// or https:// URL")
    assert message in problem
    assert url.split("//")[-1] not in problem  # a Slack URL is a credential


def test_a_yaml_syntax_error_gives_its_line() -> None:
    problem = _one_problem("""\
        rules:
          - name: a
            verdicts: [silent, dropped
        sinks:
          - type: log
        """)
    assert problem.startswith("alerts.yaml:4: YAML syntax error: ")
    assert "flow sequence" in problem


def test_a_duplicate_yaml_key_is_an_error() -> None:
    problem = _one_problem("""\
        rules:
          - name: a
            severity: critical
            verdicts: [silent]
            severity: info
        sinks:
          - type: log
        """)
    assert problem == "alerts.yaml:5: rules[0].severity: duplicate key (first on line 3)"
    # YAML keeps the last of equal keys, so that is the one whose mistakes are shown.
    problems = _problems("""\
        rules:
          - name: a
            verdicts: [silent]
            verdicts: [slient]
        sinks:
          - type: log
        """)
    assert [problem.split(": ")[0:2] for problem in problems] == [
        ["alerts.yaml:4", "rules[0].verdicts"],
        ["alerts.yaml:4", "rules[0].verdicts[0]"],
    ]


def test_a_missing_environment_variable_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    problems = _problems(VALID_YAML)
    assert problems == [
        f"alerts.yaml:20: sinks[0].secrets[1]: environment variable {ENV} is not set "
        f"(the value is ${{{ENV}}}): export it in the shell that runs this check and the "
        "collector, or write the value here"
    ]


def test_sink_mistakes_point_at_the_sink() -> None:
    problems = _problems("""\
        rules: [{name: a, verdicts: [silent]}]
        sinks:
          - type: log
          - type: email
            name: mail
          - name: no-type
          - type: log
          - type: slack
            name: team
            url: https://hooks.slack.com/x
            timeout_s: 0
        """)
    assert problems == [
        "alerts.yaml:4: sinks[1].type: unknown sink type 'email'; known: webhook, slack, log",
        "alerts.yaml:6: sinks[2]: a sink needs a 'type': one of webhook, slack, log",
        "alerts.yaml:11: sinks[4].timeout_s: Input should be greater than 0",
    ]
    duplicate = _one_problem("""\
        rules: [{name: a, verdicts: [silent]}]
        sinks:
          - type: log
          - type: log
        """)
    assert duplicate == (
        "alerts.yaml:4: sinks[1].name: duplicate sink name 'log' (already used by sinks[0])"
    )


def test_every_problem_is_reported_in_line_order() -> None:
    problems = _problems("""\
        max_attempts: 0
        rules:
          - name: a
            verdicts: [slient]
          - name: b
        sinks:
          - type: webhook
            name: ops
            url: ftp://x
            secrets: [nope]
            name: ops2
        """)
    assert [problem.split(": ")[0:2] for problem in problems] == [
        ["alerts.yaml:1", "max_attempts"],
        ["alerts.yaml:4", "rules[0].verdicts[0]"],
        ["alerts.yaml:5", "rules[1]"],
        ["alerts.yaml:9", "sinks[0].url"],
        ["alerts.yaml:10", "sinks[0].secrets[0]"],
        ["alerts.yaml:11", "sinks[0].name"],
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", ["alerts.yaml: rules: required, but not given", "alerts.yaml: sinks: required"]),
        ("- 1\n", ["alerts.yaml:1: expected a mapping"]),
        ("rules: []\nsinks: []\n", ["alerts.yaml:1: rules: at least one", "alerts.yaml:2: sinks:"]),
    ],
)
def test_an_empty_or_shapeless_file_is_an_error(text: str, expected: list[str]) -> None:
    problems = _problems(text)
    assert len(problems) == len(expected)
    for problem, start in zip(problems, expected, strict=True):
        assert problem.startswith(start)


def test_toml_mistakes_give_their_lines() -> None:
    syntax = _one_problem('[[rules]]\nname = "a"\nverdicts = ["silent",\nseverity = "x"\n', True)
    assert syntax.startswith("alerts.toml:4: TOML syntax error: ")
    problems = _problems(
        """\
        [[rules]]
        name = "a"
        verdicts = ["silent"]

        [[rules]]
        name = "b"
        verdicts = ["slient"]
        tols = ["x"]

        [[sinks]]
        type = "webhook"
        name = "ops"
        url = "https://hooks.example.com/x"
        """,
        toml=True,
    )
    assert problems == [
        "alerts.toml:7: rules[1].verdicts[0]: 'slient' is not a verdict (did you mean "
        f"'silent'?); known: {', '.join(VERDICTS)}",
        "alerts.toml:8: rules[1].tols: unknown key 'tols' (did you mean 'tools'?); allowed: "
        "name, verdicts, min_lost_token_share, must_keep_lost, agents, tools, layers, severity",
        "alerts.toml:10: sinks[0].secrets: required, but not given",
    ]


def test_an_unreadable_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(AlertsConfigError) as raised:
        load_alerts_config(tmp_path / "missing.yaml")
    assert raised.value.problems[0].startswith(f"{tmp_path / 'missing.yaml'}: cannot read")


# --- The command line ------------------------------------------------------------------


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / d) for d in ("sdk", "collector", "cli")]),
        "PYTHONIOENCODING": "utf-8",
    }
    environment.pop(ENV, None)
    environment.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "ctxledger_cli", *args],
        env=environment,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )


def test_cli_check_says_ok_for_a_valid_file(tmp_path: Path) -> None:
    path = tmp_path / "alerts.toml"
    path.write_text(VALID_TOML, encoding="utf-8")
    result = _cli("alerts", "check", str(path), env={ENV: OTHER_SECRET})
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == f"{path}: OK — 3 rules, 3 sinks\n"


def test_cli_check_prints_every_problem_and_fails(tmp_path: Path) -> None:
    path = tmp_path / "alerts.yaml"
    path.write_text(VALID_YAML.replace("[silent, dropped", "[slient, dropped"), encoding="utf-8")
    result = _cli("alerts", "check", str(path))
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        f"{path}:7: rules[0].verdicts[0]: 'slient' is not a verdict (did you mean 'silent'?); "
        f"known: {', '.join(VERDICTS)}",
        f"{path}:20: sinks[0].secrets[1]: environment variable {ENV} is not set "
        f"(the value is ${{{ENV}}}): export it in the shell that runs this check and the "
        "collector, or write the value here",
        f"{ENV} is a signing secret; make one with: export {ENV}=$(python -c "
        "'from ctxledger.webhooks import generate_secret; print(generate_secret())')",
    ]
