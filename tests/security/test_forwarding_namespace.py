"""Forwarding never reaches the cloud metadata address, in a private network namespace
where 169.254.169.254 answers (a receiver on it): each numeric spelling of the address
stops `ctxledger serve` at start-up, and a destination name that comes to resolve to it
is given up on before the request (and its `Authorization` header) leaves — the request
goes to the address that was checked, never to a second DNS answer."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.helpers import subprocess_env
from tests.security.netns_forwarding_child import METADATA, NAME, NUMERIC_FORMS, SECRET

ROOT = Path(__file__).resolve().parents[2]


def _in_namespace(workdir: Path) -> dict[str, object]:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        pytest.skip("unshare or ip (util-linux, iproute2) is missing")
    probe = subprocess.run(["unshare", "-n", "-m", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"no private namespaces here: {probe.stderr.decode().strip()}")
    done = subprocess.run(
        ["unshare", "-n", "-m", "--propagation", "private", sys.executable, "-m",
         "tests.security.netns_forwarding_child", str(workdir)],
        cwd=ROOT, env=subprocess_env(), capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return result


def test_forwarding_never_reaches_the_metadata_address(tmp_path: Path) -> None:
    result = _in_namespace(tmp_path)
    numeric = result["numeric"]
    assert isinstance(numeric, dict)
    for form in NUMERIC_FORMS:
        answer = numeric[form]
        assert answer["exit"] == 2, (form, answer)
        assert len(answer["stderr"]) == 1 and "cloud metadata address" in answer["stderr"][0]
    # Before the move: delivered to the name's loopback address, headers and Host kept.
    assert result["before_move"] == [
        {"address": "127.0.0.1", "authorization": SECRET, "host": answer_host(result)}
    ]
    # After it: given up on, nothing (and no secret) ever reached 169.254.169.254.
    received = result["all"]
    assert isinstance(received, list)
    assert [r for r in received if r["address"] == METADATA] == []
    assert len(received) == 1


def answer_host(result: dict[str, object]) -> str:
    (first,) = result["before_move"]  # type: ignore[misc]
    host = first["host"]
    assert isinstance(host, str) and host.startswith(f"{NAME}:")
    return host
