"""Fixtures of the end-to-end tests: a real OTLP receiver, a real stand-in LLM server,
and the ctxledger SDK configured per test to export to that receiver."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

import ctxledger
from ctxledger._client import Client
from ctxledger_cli.provider import ProviderStandIn

from .otlp_receiver import OTLPReceiver


@pytest.fixture
def receiver() -> Iterator[OTLPReceiver]:
    with OTLPReceiver() as running:
        yield running


@pytest.fixture
def llm_server() -> Iterator[ProviderStandIn]:
    with ProviderStandIn() as running:
        yield running


@pytest.fixture
def configure_sdk(receiver: OTLPReceiver) -> Iterator[Callable[..., Client]]:
    """``configure_sdk(**kwargs)`` installs a fresh process-wide client exporting to this
    test's receiver. Afterwards the client is shut down while the receiver still listens,
    and an inert (non-exporting) client is left in place for whatever runs next."""

    def configure(**kwargs: Any) -> Client:
        kwargs.setdefault("service_name", "e2e-agent")
        kwargs.setdefault("endpoint", receiver.url)
        return ctxledger.configure(**kwargs)

    yield configure
    receiver.recover()
    ctxledger.configure(service_name="e2e-idle", export=False)
