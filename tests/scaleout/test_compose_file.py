"""``docker-compose.yml`` and ``deploy/haproxy.cfg`` against the project's own CLI and
settings (no Docker engine runs here; ``test_replicas.py`` runs the same commands as
processes): every ``ctxledger`` command and flag parses, every ``CTXLEDGER_*`` variable
is a setting, every port and path lines up."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import yaml

from tests.scaleout.project_facts import (
    haproxy_bind_port,
    haproxy_health_path,
    haproxy_servers,
    parse_cli,
    route_paths,
    setting_names,
)
from tests.scaleout.topology import HAPROXY, HAPROXY_CFG, ROOT, compose_services

CTXLEDGER_IMAGE = "ctxledger:local"


def _ctxledger_services() -> dict[str, Any]:
    return {
        name: service
        for name, service in compose_services().items()
        if service.get("image") == CTXLEDGER_IMAGE
    }


def _published(service: dict[str, Any]) -> list[tuple[int, int]]:
    """(host port, container port) of each published port."""
    found = []
    for entry in service.get("ports", []):
        *_, host, container = str(entry).split(":")
        found.append((int(host), int(container)))
    return found


def test_every_ctxledger_command_and_flag_exists_in_the_cli() -> None:
    services = _ctxledger_services()
    assert {"migrate", "replica-1", "replica-2", "replica-3", "dashboard"} <= set(services)
    parsed = {name: parse_cli(service["command"]) for name, service in services.items()}
    assert (parsed["migrate"]["command"], parsed["migrate"]["db_command"]) == ("db", "upgrade")
    assert services["migrate"]["restart"] == "no"
    for n in (1, 2, 3):
        replica = parsed[f"replica-{n}"]
        assert replica["command"] == "serve" and replica["host"] == "0.0.0.0"
        depends = services[f"replica-{n}"]["depends_on"]
        assert depends == {"migrate": {"condition": "service_completed_successfully"}}
    dashboard = parsed["dashboard"]
    assert dashboard["command"] == "dashboard"
    assert (dashboard["port"], dashboard["port"]) in _published(services["dashboard"])
    api = urlparse(str(dashboard["api"]))
    assert api.hostname == "haproxy" and api.port == haproxy_bind_port()
    build = services["replica-1"]["build"]
    dockerfile = (ROOT / build["context"] / build["dockerfile"]).read_text()
    assert 'ENTRYPOINT ["ctxledger"]' in dockerfile


def test_every_environment_variable_is_a_setting() -> None:
    known = setting_names()
    for name, service in _ctxledger_services().items():
        environment = service.get("environment") or {}
        names = {key for key in environment if key.startswith("CTXLEDGER_")}
        assert names, name
        assert names <= known, (name, names - known)
        database = urlparse(environment["CTXLEDGER_DATABASE_URL"])
        assert database.scheme == "postgresql+psycopg"
        assert database.hostname in compose_services() and database.port == 5432


def test_ports_health_checks_and_haproxy_agree(tmp_path: Path) -> None:
    services = compose_services()
    paths = route_paths(tmp_path)
    servers = haproxy_servers()
    assert set(servers) == {"replica-1", "replica-2", "replica-3"}
    for name, (host, port) in servers.items():
        assert host == name and name in services
        replica = parse_cli(services[name]["command"])
        assert replica["port"] == port
        probe = " ".join(services[name]["healthcheck"]["test"])
        url = urlparse(probe.split("'")[1])
        assert url.port == port and url.path in paths
    assert haproxy_health_path() == "/readyz" and "/readyz" in paths
    assert (haproxy_bind_port(), haproxy_bind_port()) in _published(services["haproxy"])
    mounted = services["haproxy"]["volumes"][0].split(":")
    assert (ROOT / mounted[0]).resolve() == HAPROXY_CFG
    assert mounted[1] == "/usr/local/etc/haproxy/haproxy.cfg"
    check = subprocess.run([HAPROXY, "-c", "-f", str(HAPROXY_CFG)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def test_volumes_are_declared() -> None:
    declared = set(yaml.safe_load((ROOT / "docker-compose.yml").read_text())["volumes"])
    for service in compose_services().values():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if not source.startswith("."):
                assert source in declared, source
            else:
                assert (ROOT / source).exists(), source
