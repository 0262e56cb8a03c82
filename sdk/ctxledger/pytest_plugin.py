"""A pytest gate: fail the test during which the local ledger found a loss.

Installed with the package (the ``pytest11`` entry point) or loaded with
``pytest -p ctxledger.pytest_plugin``. Inert unless asked for: with
``--ctxledger-fail-on=silent,dropped,orphaned`` (or a test marked
``@pytest.mark.ctxledger(fail_on=...)``) the SDK runs with its local ledger, and each loss
the ledger reports with one of those verdicts fails the test during which it was
recorded, its LOSS lines in the failure report. ``@pytest.mark.ctxledger(fail_on=[])``
opts a test out. Nothing is exported unless ``CTXLEDGER_EXPORT`` says so.
"""

from __future__ import annotations

import os
from collections.abc import Generator, Iterable
from dataclasses import dataclass, field

import pytest

from ctxledger._client import Client
from ctxledger.verdicts import VERDICTS, Report

_MARKER = "ctxledger"
_STASH_GATE = pytest.StashKey["_Gate"]()
_STASH_START = pytest.StashKey["tuple[int, int]"]()
_SECTION = "ctxledger losses"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ctxledger", "ctxledger: loss of tool-result data")
    group.addoption(
        "--ctxledger-fail-on",
        metavar="VERDICTS",
        default=None,
        help="Fail a test during which the local ledger found a loss with one of these "
        "verdicts (comma-separated, e.g. silent,dropped,orphaned).",
    )
    group.addoption(
        "--ctxledger-ledger",
        metavar="TARGET",
        default=None,
        help="Also write the whole ledger (every stage line) to stderr or a file path, "
        "unless CTXLEDGER_LEDGER says where.",
    )


def parse_verdicts(value: str | Iterable[str] | None) -> frozenset[str]:
    """The verdicts named in ``value`` (a comma-separated text or a sequence)."""
    if value is None:
        return frozenset()
    names = value.split(",") if isinstance(value, str) else list(value)
    verdicts = {name.strip().lower() for name in names if name.strip()}
    unknown = sorted(verdicts - set(VERDICTS))
    if unknown:
        raise pytest.UsageError(
            f"ctxledger: unknown verdict(s) {', '.join(unknown)}; known: {', '.join(VERDICTS)}"
        )
    return frozenset(verdicts)


@dataclass
class _Gate:
    """The session's ledger and which verdicts fail a test."""

    fail_on: frozenset[str]
    ledger_target: str | None
    client: Client | None = None
    saved_env: dict[str, str | None] = field(default_factory=dict)

    def start(self) -> None:
        """Run the SDK with a local ledger (once, on the first test that needs it). The
        ledger also goes to clients the tests configure themselves, through
        ``CTXLEDGER_LEDGER``, unless that is set already."""
        if self.client is not None:
            return
        import ctxledger

        if "CTXLEDGER_LEDGER" not in os.environ:
            self.saved_env["CTXLEDGER_LEDGER"] = None
            os.environ["CTXLEDGER_LEDGER"] = self.ledger_target or os.devnull
        export = None if "CTXLEDGER_EXPORT" in os.environ else False
        self.client = ctxledger.configure(
            service_name=os.environ.get("OTEL_SERVICE_NAME"), export=export
        )

    def stop(self) -> None:
        """Undo :meth:`start`: the environment as it was, no client of this session left."""
        from ctxledger import _client

        for name, value in self.saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self.saved_env.clear()
        client, self.client = self.client, None
        if client is None:
            return
        with _client._client_lock:
            if _client._client is client:
                _client._client = None
        client.shutdown(timeout_s=5.0)

    @staticmethod
    def reports() -> tuple[int, list[Report]]:
        """The current client's ledger (by identity) and the losses it reported so far,
        after the worker measured everything submitted."""
        from ctxledger._client import get_client

        client = get_client()
        client.flush(timeout_s=10.0)
        ledger = client.ledger
        return (id(ledger), ledger.reports if ledger is not None else [])


def _marker_verdicts(item: pytest.Item) -> frozenset[str] | None:
    marker = item.get_closest_marker(_MARKER)
    if marker is None:
        return None
    return parse_verdicts(marker.kwargs.get("fail_on", marker.args[0] if marker.args else ()))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{_MARKER}(fail_on=...): the loss verdicts that fail this test (a comma-separated "
        "text or a list; empty: none), instead of --ctxledger-fail-on",
    )
    fail_on = parse_verdicts(config.getoption("--ctxledger-fail-on"))
    config.stash[_STASH_GATE] = _Gate(fail_on, config.getoption("--ctxledger-ledger"))


def pytest_unconfigure(config: pytest.Config) -> None:
    gate = config.stash.get(_STASH_GATE, None)
    if gate is not None:
        gate.stop()


def _fail_on(item: pytest.Item) -> frozenset[str]:
    gate = item.config.stash[_STASH_GATE]
    marked = _marker_verdicts(item)
    return gate.fail_on if marked is None else marked


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    gate = item.config.stash.get(_STASH_GATE, None)
    if gate is not None and _fail_on(item):
        gate.start()
        ledger, reports = gate.reports()
        item.stash[_STASH_START] = (ledger, len(reports))
    return (yield)


def _new_losses(item: pytest.Item) -> list[Report]:
    """The losses reported since the last look, with a verdict that fails this test."""
    start = item.stash.get(_STASH_START, None)
    if start is None:
        return []
    gate = item.config.stash[_STASH_GATE]
    ledger, reports = gate.reports()
    first = start[1] if ledger == start[0] else 0  # the test configured its own client
    item.stash[_STASH_START] = (ledger, len(reports))
    fail_on = _fail_on(item)
    return [r for r in reports[first:] if r.verdict in fail_on]


def _loss_text(losses: list[Report]) -> str:
    from ctxledger._ledger import format_loss

    lines = [format_loss(r) for r in losses]
    verdicts = sorted({r.verdict for r in losses})
    head = f"ctxledger: {len(losses)} loss(es) with verdict {', '.join(verdicts)} in this test"
    return "\n".join([head, *lines])


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if call.when not in ("call", "teardown") or item.stash.get(_STASH_START, None) is None:
        return report
    losses = _new_losses(item)
    if not losses:
        return report
    text = _loss_text(losses)
    if report.passed:
        report.outcome = "failed"
        report.longrepr = text
    else:  # failed for its own reason too: the losses go beside it
        report.sections.append((_SECTION, text))
    return report


def pytest_report_header(config: pytest.Config) -> str | None:
    gate = config.stash.get(_STASH_GATE, None)
    if gate is None or not gate.fail_on:
        return None
    return f"ctxledger: a loss with verdict {', '.join(sorted(gate.fail_on))} fails its test"
