"""The pytest gate, in real pytest sessions (``pytester``, each in its own process): a
test during which the local ledger found a loss fails with its LOSS line, a clean one
passes, and a suite that does not ask for the gate is left alone."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

AGENT_TESTS = """
import json

import pytest

import ctxledger


def journey(kept):
    records = [{"id": f"kb-{i:03d}", "text": "退款规则"} for i in range(50)]
    with ctxledger.run("kb-agent"):
        ctxledger.measure("serialized", records, tool_call_id="call_1", tool_name="search")
        content = json.dumps(records[:kept], ensure_ascii=False)
        ctxledger.measure_messages([{"role": "tool", "tool_call_id": "call_1", "content": content}])


def test_loses_records():
    journey(20)


def test_keeps_them():
    journey(50)


@pytest.mark.ctxledger(fail_on=[])
def test_opted_out():
    journey(20)


@pytest.mark.ctxledger(fail_on="silent")
def test_opts_in_by_its_marker():
    journey(20)
"""

RESENT_TESTS = """
import json

import ctxledger


def test_cuts_a_result_and_re_sends_it():
    records = [{"id": f"kb-{i:03d}", "text": "退款规则"} for i in range(50)]
    call = {"id": "call_1", "type": "function", "function": {"name": "search"}}
    cut = json.dumps(records[:20], ensure_ascii=False)
    messages = [
        {"role": "assistant", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": cut},
    ]
    with ctxledger.run("kb-agent"):
        ctxledger.measure("serialized", records, tool_call_id="call_1", tool_name="search")
        ctxledger.measure_request({"model": "gpt-4o", "messages": messages})
        messages.append({"role": "user", "content": "再查"})
        ctxledger.measure_request({"model": "gpt-4o", "messages": messages})
"""

UNRELATED_TESTS = """
import os


def test_nothing_of_ctxledger_runs():
    from ctxledger import _client

    assert _client._client is None
    assert "CTXLEDGER_LEDGER" not in os.environ


def test_plain():
    assert 1 + 1 == 2
"""

# Other installed plugins only slow each inner session's start.
_QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:langsmith_plugin")


@pytest.fixture
def suites(pytester: pytest.Pytester) -> pytest.Pytester:
    # test_0_… runs first: before any test of the agent suite made a client.
    pytester.makepyfile(test_agent=AGENT_TESTS, test_0_unrelated=UNRELATED_TESTS)
    return pytester


def test_a_losing_test_fails_with_its_loss_line_and_clean_ones_pass(suites):
    result = suites.runpytest_subprocess(
        "-p", "ctxledger.pytest_plugin",  # loaded by name too, beside the entry point
        "--ctxledger-fail-on=silent,dropped,orphaned",
        "test_agent.py",
        *_QUIET,
    )  # fmt: skip
    result.assert_outcomes(passed=2, failed=2)
    out = result.stdout.str()
    assert "FAILED test_agent.py::test_loses_records" in out
    assert "FAILED test_agent.py::test_opts_in_by_its_marker" in out
    result.stdout.fnmatch_lines([
        "*ctxledger: 1 loss(es) with verdict silent in this test*",
        "*LOSS silent: search[[]call_1] serialized -> assembled lost 30 items*lost ids: kb-020, *",
    ])  # fmt: skip
    assert "a loss with verdict dropped, orphaned, silent fails its test" in out


def test_a_result_cut_and_re_sent_fails_its_test_with_the_loss_once(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_resent=RESENT_TESTS)
    result = pytester.runpytest_subprocess(
        "-p", "ctxledger.pytest_plugin", "--ctxledger-fail-on=silent", *_QUIET
    )  # fmt: skip
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "ctxledger: 1 loss(es) with verdict silent in this test" in out, out
    # Once in the test's report; pytest's short summary may repeat the message.
    report = out.split("short test summary info")[0]
    assert report.count("LOSS silent: search[call_1]") == 1, out


def test_without_the_option_the_suite_is_left_alone_but_a_marked_test(suites):
    result = suites.runpytest_subprocess("--strict-markers", *_QUIET)
    result.assert_outcomes(passed=5, failed=1)
    out = result.stdout.str()
    assert "FAILED test_agent.py::test_opts_in_by_its_marker" in out
    assert "a loss with verdict" not in out  # no header line either


def test_verdicts_are_parsed_and_checked():
    from ctxledger.pytest_plugin import parse_verdicts

    assert parse_verdicts(" Silent,dropped ,") == {"silent", "dropped"}
    assert parse_verdicts(["orphaned"]) == {"orphaned"}
    assert parse_verdicts([]) == parse_verdicts(None) == frozenset()
    with pytest.raises(pytest.UsageError, match="unknown verdict"):
        parse_verdicts("silnt")
