"""`ctxledger serve --forward-to URL --forward-header NAME=VALUE` as a user runs it."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from tests.cli.test_serve_cli import _cli, _env
from tests.collector import otlp_payloads as op
from tests.collector.forward_receivers import RecordingEndpoint
from tests.collector.live_collector import free_port


def _wait_ready(url: str, process: subprocess.Popen[str]) -> None:
    for _ in range(300):
        assert process.poll() is None, "ctxledger serve exited"
        try:
            if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        with contextlib.suppress(subprocess.TimeoutExpired):  # a pause that notices an exit
            process.wait(timeout=0.1)
    raise AssertionError("ctxledger serve did not become ready")


def test_serve_forwards_accepted_exports_with_the_headers_given(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with RecordingEndpoint() as phoenix, RecordingEndpoint() as collector_downstream:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ctxledger_cli",
                "serve",
                "--port",
                str(port),
                "--forward-to",
                phoenix.url,
                "--forward-to",
                collector_downstream.url,
                "--forward-header",
                "Authorization=Bearer x",
                "--forward-header",
                "x-project = agents=prod",
            ],
            env=_env(f"sqlite:///{tmp_path / 'ctxledger.db'}"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            _wait_ready(url, process)
            body = op.gzipped(op.proto_body(op.new_trace_id(), op.journey_spans("c", "r")))
            answer = httpx.post(
                f"{url}/v1/traces",
                content=body,
                headers={"content-type": op.PROTOBUF, "content-encoding": "gzip"},
            )
            assert answer.status_code == 200, answer.text
            arrived = [phoenix.wait_for(1), collector_downstream.wait_for(1)]
        finally:
            process.send_signal(signal.SIGINT)
            try:
                _, stderr = process.communicate(timeout=30)
            finally:
                process.kill()
    for (request,) in arrived:
        assert request.body == body
        assert (request.content_type, request.content_encoding) == (op.PROTOBUF, "gzip")
        assert request.headers["authorization"] == "Bearer x"
        assert request.headers["x-project"] == "agents=prod"
    assert f"forwarding accepted exports to {phoenix.url}" in stderr


def test_serve_refuses_unusable_forwarding_flags(tmp_path: Path) -> None:
    database = f"sqlite:///{tmp_path / 'ctxledger.db'}"
    bad_url = _cli("serve", "--port", "1", "--forward-to", "phoenix:6006", database_url=database)
    assert bad_url.returncode == 2
    assert "not an http(s) URL" in bad_url.stderr
    bad_header = _cli(
        "serve",
        "--forward-to",
        "http://h/v1/traces",
        "--forward-header",
        "Bearer x",
        database_url=database,
    )
    assert bad_header.returncode == 2
    assert "expected NAME=VALUE" in bad_header.stderr


def test_serve_refuses_a_numeric_form_of_the_metadata_address(tmp_path: Path) -> None:
    refused = _cli(
        "serve",
        "--port",
        str(free_port()),
        "--forward-to",
        "http://2852039166/v1/traces",
        "--forward-header",
        "Authorization=Bearer x",
        database_url=f"sqlite:///{tmp_path / 'ctxledger.db'}",
    )
    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [
        "ctxledger serve: CTXLEDGER_FORWARD_TO: 'http://2852039166/v1/traces' names a cloud "
        "metadata address"
    ]
    assert not (tmp_path / "ctxledger.db").exists()


def test_serve_and_alerts_check_refuse_a_webhook_to_the_metadata_address(tmp_path: Path) -> None:
    rules = tmp_path / "alerts.yaml"
    rules.write_text(
        "rules: [{name: a, verdicts: [silent]}]\n"
        "sinks:\n"
        "  - type: webhook\n"
        "    name: ops\n"
        "    url: http://0xa9fea9fe/hook\n"
        '    secrets: ["whsec_aGVsbG8="]\n',
        encoding="utf-8",
    )
    problem = (
        f"{rules}:5: sinks[0].url: sink 'ops': the URL's host is a cloud metadata address; "
        "notifications are never sent there (allow_loopback does not change that)"
    )
    database_url = f"sqlite:///{tmp_path / 'ctxledger.db'}"
    checked = _cli("alerts", "check", str(rules), database_url=database_url)
    assert (checked.returncode, checked.stdout.splitlines()) == (1, [problem])
    with_env = {**_env(database_url), "CTXLEDGER_ALERTS_FILE": str(rules)}
    refused = subprocess.run(
        [sys.executable, "-m", "ctxledger_cli", "serve", "--port", str(free_port())],
        env=with_env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [
        f"ctxledger serve: invalid alert rules in {rules}:",
        f"  {problem}",
    ]
