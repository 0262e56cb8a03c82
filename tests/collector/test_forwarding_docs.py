"""The forwarding docs' OpenTelemetry Collector snippets parse and match ctxledger.

Each ``yaml`` block of the "Forwarding" section of docs/collector.md is a Collector
configuration; its first line names its topology. They must parse, every pipeline must
name components the file defines, ctxledger's exporter must reach ctxledger's default
port and its traces route, and the Collector that ctxledger forwards to must listen
where the section's ``--forward-to`` sends.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from ctxledger_collector.ops.settings import Settings
from ctxledger_collector.routes.ingest import router

DOC = Path(__file__).resolve().parents[2] / "docs" / "collector.md"


def _section() -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("\n## Forwarding")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def _snippets() -> dict[str, dict[str, Any]]:
    blocks = re.findall(r"```yaml\n(.*?)```", _section(), flags=re.DOTALL)
    configs: dict[str, dict[str, Any]] = {}
    for block in blocks:
        first = block.splitlines()[0]
        assert first.startswith("# "), f"a snippet must say its topology first: {first!r}"
        topology = first[2:].split(":", 1)[0]
        configs[topology] = yaml.safe_load(block)
    return configs


def _traces_route() -> str:
    paths = [str(getattr(route, "path", "")) for route in router.routes]
    (path,) = [path for path in paths if path.endswith("/traces")]
    return path


def _http_port(config: dict[str, Any]) -> int:
    endpoint = config["receivers"]["otlp"]["protocols"]["http"]["endpoint"]
    return int(str(endpoint).rsplit(":", 1)[1])


def test_the_section_has_both_topologies() -> None:
    assert set(_snippets()) == {"behind ctxledger", "fan-out"}


@pytest.mark.parametrize("topology", ["behind ctxledger", "fan-out"])
def test_every_pipeline_names_defined_components(topology: str) -> None:
    config = _snippets()[topology]
    for pipeline in config["service"]["pipelines"].values():
        for kind in ("receivers", "processors", "exporters"):
            for name in pipeline.get(kind, []):
                assert name in config[kind], f"{topology}: {kind} {name} is not defined"
    for name, exporter in config["exporters"].items():
        assert name.split("/")[0] == "otlphttp"
        assert urlsplit(exporter["traces_endpoint"]).path.endswith("/v1/traces"), name


def test_the_fan_out_reaches_ctxledger_at_its_defaults() -> None:
    config = _snippets()["fan-out"]
    exporter = config["exporters"]["otlphttp/ctxledger"]
    url = urlsplit(exporter["traces_endpoint"])
    assert url.port == Settings().port == 4318
    assert url.path == _traces_route() == "/v1/traces"
    assert exporter.get("compression", "none") in ("gzip", "none")  # what ingest reads
    assert "otlphttp/ctxledger" in config["service"]["pipelines"]["traces"]["exporters"]


def test_ctxledger_forwards_where_the_collector_behind_it_listens() -> None:
    config = _snippets()["behind ctxledger"]
    targets = [
        urlsplit(url)
        for url in re.findall(r"--forward-to (\S+)", _section())
        if "otel-collector" in url
    ]
    assert targets, "the section shows ctxledger forwarding to the Collector"
    for target in targets:
        assert target.port == _http_port(config)
        assert target.path == "/v1/traces"  # what the Collector's otlp receiver serves
