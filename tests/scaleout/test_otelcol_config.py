"""``deploy/otelcol-gateway.yaml`` and ``deploy/otelcol-relay.yaml`` as far as this machine
allows (no otelcol binary, no Docker): every component's keys are keys of its
configuration struct in opentelemetry-collector(-contrib) (``mapstructure`` tags of
``otlpreceiver.Config``, ``memorylimiterprocessor.Config``, ``batchprocessor.Config``,
``loadbalancingexporter.Config`` with the OTLP exporter's ``Config`` as its protocol,
``otlphttpexporter.Config``, ``filestorage.Config``, ``healthcheckextension.Config``,
``exporterhelper``'s queue and retry settings), the values have the types those structs
want, the pipelines use only defined components, and every port, path and host agrees
with the project's own (the compose file, the collector's routes and settings)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import yaml

from ctxledger_collector.ops.settings import Settings
from tests.scaleout.project_facts import parse_cli, route_paths
from tests.scaleout.topology import ROOT, compose_services

GATEWAY = ROOT / "deploy" / "otelcol-gateway.yaml"
RELAY = ROOT / "deploy" / "otelcol-relay.yaml"
DURATION = re.compile(r"^(\d+(\.\d+)?(ns|us|ms|s|m|h))+$")

Schema = dict[str, Any]
TLS: Schema = {
    "insecure": bool,
    "insecure_skip_verify": bool,
    "ca_file": str,
    "cert_file": str,
    "key_file": str,
    "server_name_override": str,
}
RETRY: Schema = {
    "enabled": bool,
    "initial_interval": "duration",
    "randomization_factor": float,
    "multiplier": float,
    "max_interval": "duration",
    "max_elapsed_time": "duration",
}
QUEUE: Schema = {
    "enabled": bool,
    "num_consumers": int,
    "queue_size": int,
    "storage": str,
    "blocking": bool,
    "sizer": str,
}
OTLP_EXPORTER: Schema = {
    "endpoint": str,
    "timeout": "duration",
    "compression": str,
    "headers": dict,
    "tls": TLS,
    "sending_queue": QUEUE,
    "retry_on_failure": RETRY,
    "balancer_name": str,
    "keepalive": dict,
    "write_buffer_size": int,
    "wait_for_ready": bool,
}
SCHEMAS: dict[str, Schema] = {
    "receivers/otlp": {
        "protocols": {
            "grpc": {
                "endpoint": str,
                "transport": str,
                "max_recv_msg_size_mib": int,
                "max_concurrent_streams": int,
                "tls": dict,
                "keepalive": dict,
                "include_metadata": bool,
            },
            "http": {
                "endpoint": str,
                "max_request_body_size": int,
                "traces_url_path": str,
                "cors": dict,
                "tls": dict,
                "include_metadata": bool,
            },
        }
    },
    "processors/memory_limiter": {
        "check_interval": "duration",
        "limit_mib": int,
        "spike_limit_mib": int,
        "limit_percentage": int,
        "spike_limit_percentage": int,
    },
    "processors/batch": {
        "timeout": "duration",
        "send_batch_size": int,
        "send_batch_max_size": int,
        "metadata_keys": list,
        "metadata_cardinality_limit": int,
    },
    "exporters/loadbalancing": {
        "routing_key": str,
        "protocol": {"otlp": OTLP_EXPORTER},
        "resolver": {
            "static": {"hostnames": list},
            "dns": dict,
            "k8s": dict,
            "aws_cloud_map": dict,
        },
        "timeout": "duration",
        "retry_on_failure": RETRY,
        "sending_queue": QUEUE,
    },
    "exporters/otlphttp": {
        "endpoint": str,
        "traces_endpoint": str,
        "compression": str,
        "timeout": "duration",
        "headers": dict,
        "tls": TLS,
        "retry_on_failure": RETRY,
        "sending_queue": QUEUE,
        "encoding": str,
    },
    "extensions/file_storage": {
        "directory": str,
        "timeout": "duration",
        "fsync": bool,
        "create_directory": bool,
        "directory_permissions": str,
        "compaction": {
            "on_start": bool,
            "on_rebound": bool,
            "directory": str,
            "max_transaction_size": int,
            "rebound_needed_threshold_mib": int,
            "rebound_trigger_threshold_mib": int,
            "check_interval": "duration",
            "cleanup_on_start": bool,
        },
    },
    "extensions/health_check": {"endpoint": str, "path": str, "tls": dict},
}


def _check(value: Any, schema: Any, where: str) -> None:
    if isinstance(schema, dict):
        assert isinstance(value, dict), f"{where}: expected a mapping"
        unknown = set(value) - set(schema)
        assert not unknown, f"{where}: no such settings {sorted(unknown)}"
        for key, item in value.items():
            _check(item, schema[key], f"{where}.{key}")
    elif schema == "duration":
        assert isinstance(value, str) and DURATION.match(value), f"{where}: not a duration"
    elif schema is float:
        assert isinstance(value, (int, float)), where
    else:
        assert isinstance(value, schema), f"{where}: expected {schema.__name__}"


def _load(path: Path) -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load(path.read_text())
    return config


def _check_components(config: dict[str, Any]) -> None:
    for kind in ("receivers", "processors", "exporters", "extensions"):
        for name, settings in (config.get(kind) or {}).items():
            component = name.split("/")[0]
            assert f"{kind}/{component}" in SCHEMAS, f"{kind}/{name}: not a component used here"
            _check(settings, SCHEMAS[f"{kind}/{component}"], f"{kind}.{name}")
    service = config["service"]
    for extension in service.get("extensions", []):
        assert extension in config["extensions"]
    for pipeline, parts in service["pipelines"].items():
        assert pipeline.split("/")[0] == "traces"
        for kind in ("receivers", "processors", "exporters"):
            for name in parts.get(kind, []):
                assert name in config[kind], f"{pipeline}: {kind} {name} is not defined"
        if parts.get("processors"):
            assert parts["processors"][0] == "memory_limiter"


def _port(endpoint: str) -> int:
    return int(endpoint.rsplit(":", 1)[1])


def test_the_gateway_config_has_the_components_the_deployment_needs() -> None:
    config = _load(GATEWAY)
    _check_components(config)
    pipeline = config["service"]["pipelines"]["traces"]
    assert pipeline["processors"] == ["memory_limiter", "batch"]
    assert pipeline["exporters"] == ["loadbalancing"]
    balancer = config["exporters"]["loadbalancing"]
    assert balancer["routing_key"] == "traceID"
    otlp = balancer["protocol"]["otlp"]
    assert "endpoint" not in otlp  # the resolver fills it in
    queue = otlp["sending_queue"]
    assert queue["enabled"] and queue["storage"] in config["service"]["extensions"]
    assert queue["storage"].split("/")[0] == "file_storage"
    assert otlp["retry_on_failure"]["enabled"]
    batch = config["processors"]["batch"]
    assert batch["send_batch_max_size"] >= batch["send_batch_size"]
    limiter = config["processors"]["memory_limiter"]
    assert limiter["spike_limit_mib"] < limiter["limit_mib"]


def test_every_port_path_and_host_matches_the_project(tmp_path: Path) -> None:
    gateway, relay = _load(GATEWAY), _load(RELAY)
    services = compose_services()
    settings = Settings()
    receiver = gateway["receivers"]["otlp"]["protocols"]
    assert _port(receiver["grpc"]["endpoint"]) == 4317
    assert _port(receiver["http"]["endpoint"]) == settings.port  # OTLP/HTTP's 4318
    assert receiver["http"]["max_request_body_size"] == settings.max_body_bytes
    published = {p.split(":")[-1] for p in services["otelcol-gateway"]["ports"]}
    assert {"4317", "4318"} <= published
    relay_port = _port(relay["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"])
    hostnames = gateway["exporters"]["loadbalancing"]["resolver"]["static"]["hostnames"]
    assert len(hostnames) == 3
    for hostname in hostnames:
        host, port = hostname.split(":")
        assert host in services and int(port) == relay_port
        target = services[host]["environment"]["RELAY_TO"]
        replica, replica_port = target.split(":")
        assert parse_cli(services[replica]["command"])["port"] == int(replica_port)
        assert services[host]["depends_on"] == {replica: {"condition": "service_healthy"}}
    exporter = relay["exporters"]["otlphttp/ctxledger"]
    url = urlparse(exporter["traces_endpoint"].replace("${env:RELAY_TO}", "replica:4318"))
    assert url.scheme == "http"
    assert url.path == "/v1/traces" and url.path in route_paths(tmp_path)
    directory = gateway["extensions"]["file_storage/queue"]["directory"]
    mounts = [v.split(":") for v in services["otelcol-gateway"]["volumes"]]
    assert any(target == directory and source in {"otelcol-queue"} for source, target, *_ in mounts)
    config_mount = {target for _, target, *_ in mounts}
    flag = services["otelcol-gateway"]["command"][0].split("=", 1)[1]
    assert flag in config_mount
    _check_components(relay)
