"""The server commands need the ``[server]`` extra; a plain install has the SDK only."""

from __future__ import annotations

import importlib.util


def install_hint(extra: str) -> str:
    """How to install one of the package's extras: ctxledger is not on PyPI yet, so from
    the clone, with the versions it is tested with."""
    return f"pip install -c constraints.txt '.[{extra}]' in the ctxledger clone"


SERVER_EXTRA_HINT = f"this command needs the collector's dependencies: {install_hint('server')}"
SERVER_MODULES = ("fastapi", "sqlmodel", "streamlit", "uvicorn")


def require_server_extra() -> None:
    """Exit with the install hint when a module of the extra is missing.

    Only looks the modules up: the command imports what it uses once this passed.
    """
    for name in SERVER_MODULES:
        if importlib.util.find_spec(name) is None:
            raise SystemExit(f"ctxledger: {SERVER_EXTRA_HINT} ({name} is missing)")
