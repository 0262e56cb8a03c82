"""The demo's spans to the collector it was given: every one exported, or within seconds
one line saying that nothing answers there and where the spans are parked."""

from __future__ import annotations

import time
import urllib.error
import urllib.request

from ctxledger._client import Client
from ctxledger._otlp_sender import UNREACHABLE

#: How long the demo waits for a collector that answers but is slow (busy, 503).
FLUSH_S = 30.0
_STEP_S = 0.25
_PROBE_TIMEOUT_S = 3.0


def nothing_answers(endpoint: str) -> str | None:
    """Why nothing answers at ``endpoint`` (refused, no such host, no answer in time), or
    None when something does (any HTTP answer, an error status included)."""
    try:
        with urllib.request.urlopen(endpoint, timeout=_PROBE_TIMEOUT_S):
            return None
    except urllib.error.HTTPError:
        return None
    except urllib.error.URLError as error:
        return str(error.reason)
    except (OSError, ValueError) as error:
        return str(error)


def unreachable_line(endpoint: str, problem: str) -> str:
    return (
        f"ctxledger demo: nothing answers at {endpoint} ({problem}); nothing was run or "
        "parked. Start a collector there (`ctxledger serve`, or `ctxledger up` for the "
        "dashboard too), or run `ctxledger demo` without --endpoint"
    )


def deliver(client: Client, endpoint: str) -> str | None:
    """Flush ``client``; None once every span is exported (or refused, counted), else one
    line. A collector that cannot be reached is given up on at its first refusal."""
    deadline = time.monotonic() + FLUSH_S
    client.recorder.flush(FLUSH_S)  # measuring is local work: let it finish
    while not client.flush(timeout_s=_STEP_S):
        problem = client.stats().export_problem
        if problem.startswith(UNREACHABLE) or time.monotonic() >= deadline:
            client.shutdown(timeout_s=1.0, say_what_is_parked=False)
            return _not_delivered(client, endpoint, problem or "it did not take them in time")
    return None


def _not_delivered(client: Client, endpoint: str, problem: str) -> str:
    parked = client.parked()
    if parked is None:
        dropped = client.stats().dropped
        return (
            f"ctxledger demo: {endpoint} did not take the spans ({problem}); with the spool "
            f"off they are not kept ({dropped:,} dropped)"
        )
    return (
        f"ctxledger demo: {endpoint} did not take the spans ({problem}); {parked.spans:,} "
        f"spans are parked in {parked.folder} and go to {parked.url or endpoint} when it "
        f"answers (`ctxledger spool drop --endpoint {endpoint}` discards them)"
    )
