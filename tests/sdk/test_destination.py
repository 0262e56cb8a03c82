"""A spool folder per destination: the URL and the credentials an export carries choose
it; the folder's label names the credential headers, never their values."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from ctxledger._client import Client
from ctxledger._destination import DESTINATION_FILE, Destination
from ctxledger._otlp_config import SenderConfig
from ctxledger._settings import Settings


def _destination(env: dict[str, str] | None = None, **settings: str) -> Destination:
    resolved = Settings.resolve(env=env or {}, **settings)  # type: ignore[arg-type]
    return Destination.of(SenderConfig.resolve(resolved, env or {}))


def test_the_url_and_every_credential_choose_the_folder() -> None:
    base = _destination(endpoint="http://127.0.0.1:4318")
    assert base == _destination(endpoint="http://127.0.0.1:4318/v1/traces")
    assert base.folder_name == f"127.0.0.1_4318-{base.digest}"
    others = [
        _destination(endpoint="http://127.0.0.1:4319"),
        _destination(endpoint="https://127.0.0.1:4318"),
        _destination(endpoint="http://127.0.0.1:4318", api_key="key-a"),
        _destination(endpoint="http://127.0.0.1:4318", api_key="key-b"),
        _destination(
            {"OTEL_EXPORTER_OTLP_HEADERS": "X-Scope-OrgID=tenant-1"},
            endpoint="http://127.0.0.1:4318",
        ),
        _destination({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel:4318"}),
        _destination(
            {"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": "/etc/client.pem"},
            endpoint="http://127.0.0.1:4318",
        ),
    ]
    assert len({d.folder_name for d in [base, *others]}) == 1 + len(others)
    # What every export carries alike does not split destinations.
    compressed = _destination({"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"}, endpoint=base.url)
    assert compressed == base


def test_the_label_names_credential_headers_never_their_values(tmp_path: Path) -> None:
    env = {"CTXLEDGER_SPOOL_DIR": str(tmp_path), "OTEL_EXPORTER_OTLP_HEADERS": "x-tenant=t-9"}
    settings = Settings.resolve(
        service_name="svc", endpoint="http://127.0.0.1:1", api_key="s3cret-key", env=env
    )
    destination = Destination.of(SenderConfig.resolve(settings, env))
    label = destination.description("svc")
    assert b"s3cret-key" not in label and b"t-9" not in label
    assert json.loads(label) == {
        "url": "http://127.0.0.1:1/v1/traces",
        "service_name": "svc",
        "credential_headers": ["authorization", "x-tenant"],
        "digest": destination.digest,
    }


def test_a_client_spools_in_its_destinations_folder_and_labels_it(tmp_path: Path) -> None:
    settings = Settings.resolve(
        service_name="svc", endpoint="http://127.0.0.1:9", spool_dir=tmp_path, env={}
    )
    client = Client(settings)
    try:
        assert client._processor is not None and client._processor.spool is not None
        spool = client._processor.spool
        expected = Destination.of(SenderConfig.resolve(settings, {}))
        assert spool.directory == tmp_path / expected.folder_name
        assert spool.put(b"body", 3)
        label = json.loads((spool.directory / DESTINATION_FILE).read_text())
        assert label["url"] == "http://127.0.0.1:9/v1/traces"
        parked = client.parked()
        assert parked is not None
        assert (parked.spans, parked.files, parked.url) == (3, 1, label["url"])
    finally:
        client.shutdown(timeout_s=0.5, say_what_is_parked=False)


def test_batches_an_earlier_version_parked_are_named_once_and_never_sent(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    legacy = tmp_path / "01796684551462260972-5344-10cf628e-00000002-62.otlp"
    legacy.write_bytes(b"an earlier version's batch, for an unknown collector")
    settings = Settings.resolve(
        service_name="svc", endpoint="http://127.0.0.1:9", spool_dir=tmp_path, env={}
    )
    with caplog.at_level(logging.WARNING, logger="ctxledger"):
        client = Client(settings)
    try:
        assert client._processor is not None and client._processor.spool is not None
        assert client._processor.spool.claim() is None  # not in this destination's folder
        assert client.parked() is None
    finally:
        client.shutdown(timeout_s=0.5, say_what_is_parked=False)
    warned = [r.getMessage() for r in caplog.records if "earlier ctxledger" in r.getMessage()]
    assert warned == [
        f"ctxledger: 62 spans in {tmp_path} were parked by an earlier ctxledger that did not "
        "record their collector; they are not sent (`ctxledger spool list` shows them, "
        f"`ctxledger spool drop --folder {tmp_path}` discards them)"
    ]
    assert legacy.exists()
