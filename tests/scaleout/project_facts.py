"""What the deployment files must agree with, read from the project itself: the CLI's
parser, the settings, the collector's routes, HAProxy's configuration."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from ctxledger_cli.parser import build_parser
from ctxledger_collector.app import create_app
from ctxledger_collector.ops.settings import Settings
from tests.scaleout.topology import HAPROXY_CFG


def parse_cli(args: list[str]) -> dict[str, object]:
    """The CLI's parse of ``args`` (argparse exits on an unknown command or flag)."""
    namespace = build_parser().parse_args(args)
    assert callable(namespace.handler)
    return vars(namespace)


def setting_names() -> set[str]:
    return {f"CTXLEDGER_{name.upper()}" for name in Settings.model_fields}


@cache
def route_paths(workdir: Path) -> frozenset[str]:
    """Every path the collector app serves (its own routes and its routers')."""
    app = create_app(Settings(database_url=f"sqlite:///{workdir / 'routes.db'}"))
    paths: set[str] = set()
    for route in app.routes:
        router = getattr(route, "original_router", None)
        routes = router.routes if router is not None else [route]
        paths |= {str(getattr(r, "path", "")) for r in routes}
    return frozenset(paths - {""})


def haproxy_bind_port() -> int:
    match = re.search(r"^\s*bind \S*:(\d+)\s*$", HAPROXY_CFG.read_text(), re.MULTILINE)
    assert match
    return int(match.group(1))


def haproxy_servers() -> dict[str, tuple[str, int]]:
    """HAProxy's backend servers: name -> (host, port)."""
    found = re.findall(r"^\s*server (\S+) ([^:\s]+):(\d+)", HAPROXY_CFG.read_text(), re.MULTILINE)
    return {name: (host, int(port)) for name, host, port in found}


def haproxy_health_path() -> str:
    match = re.search(r"option httpchk GET (\S+)", HAPROXY_CFG.read_text())
    assert match
    return match.group(1)
