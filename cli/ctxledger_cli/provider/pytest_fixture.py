"""pytest fixtures for the provider stand-in.

``pytest_plugins = ["ctxledger_cli.provider.pytest_fixture"]`` in a ``conftest.py`` gives:

* ``provider``: a started :class:`~ctxledger_cli.provider.ProviderStandIn` on a free
  port, stopped after the test; script it with ``provider.script(...)``. Unscripted it
  answers ``"ok"``; once scripted, a request after the last step is refused with a 409
  (``provider.reset()`` rewinds the script).
* ``provider_factory``: ``provider_factory(**kwargs)`` starts one with other options
  (``context_window=…``, ``silent_front_discard=True``, ``loop=True``); all are stopped
  after the test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ctxledger_cli.provider.server import ProviderStandIn


@pytest.fixture
def provider_factory() -> Iterator[Callable[..., ProviderStandIn]]:
    started: list[ProviderStandIn] = []

    def start(**kwargs: Any) -> ProviderStandIn:
        stand_in = ProviderStandIn(**kwargs).start()
        started.append(stand_in)
        return stand_in

    yield start
    for stand_in in started:
        stand_in.stop()


@pytest.fixture
def provider(provider_factory: Callable[..., ProviderStandIn]) -> ProviderStandIn:
    return provider_factory()
