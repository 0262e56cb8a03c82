from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ctxledger._settings import (
    DEFAULT_ENDPOINT,
    DEFAULT_SPOOL_MAX_BYTES,
    Settings,
    default_spool_dir,
)


def test_argument_then_environment_then_default():
    env = {"CTXLEDGER_ENDPOINT": "http://env:4318", "OTEL_SERVICE_NAME": "from-env"}
    assert Settings.resolve(env={}).endpoint == DEFAULT_ENDPOINT
    assert Settings.resolve(env=env).endpoint == "http://env:4318"
    assert Settings.resolve(endpoint="http://arg:1", env=env).endpoint == "http://arg:1"
    assert Settings.resolve(env=env).service_name == "from-env"
    assert Settings.resolve(env=env).traces_url == "http://env:4318/v1/traces"


def test_otel_endpoint_variables_are_left_to_the_exporter():
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel:4318"}
    assert Settings.resolve(env=env).traces_url is None


def test_otel_sdk_disabled_turns_export_off_unless_asked_explicitly():
    env = {"OTEL_SDK_DISABLED": "true"}
    assert Settings.resolve(env=env).export is False
    assert Settings.resolve(export=True, env=env).export is True


def test_api_key_and_ledger_from_environment():
    settings = Settings.resolve(env={"CTXLEDGER_API_KEY": "k", "CTXLEDGER_LEDGER": "stderr"})
    assert (settings.api_key, settings.ledger) == ("k", "stderr")


def test_spool_folder_argument_then_environment_then_the_user_cache(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "XDG_CACHE_HOME": ""}
    default = Settings.resolve(service_name="orders agent/v2", env=env).spool_dir
    if sys.platform.startswith("linux"):
        assert default == str(tmp_path / ".cache" / "ctxledger" / "spool" / "orders_agent_v2")
    assert Settings.resolve(env=env).spool_dir == str(default_spool_dir(None, env))
    assert str(default_spool_dir(None, env)).endswith("default")
    xdg = {**env, "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    if sys.platform.startswith("linux"):
        expected = tmp_path / "xdg" / "ctxledger" / "spool" / "svc"
        assert Settings.resolve(service_name="svc", env=xdg).spool_dir == str(expected)
    from_env = {**env, "CTXLEDGER_SPOOL_DIR": str(tmp_path / "from-env")}
    assert Settings.resolve(env=from_env).spool_dir == str(tmp_path / "from-env")
    assert Settings.resolve(spool_dir=tmp_path / "arg", env=from_env).spool_dir == str(
        tmp_path / "arg"
    )
    for off in ("off", "OFF", "none", "false", "0"):
        assert Settings.resolve(env={**env, "CTXLEDGER_SPOOL_DIR": off}).spool_dir is None
    assert Settings.resolve(spool_dir="off", env=from_env).spool_dir is None


def test_spool_size_argument_then_environment_then_default() -> None:
    assert Settings.resolve(env={}).spool_max_bytes == DEFAULT_SPOOL_MAX_BYTES
    env = {"CTXLEDGER_SPOOL_MAX_BYTES": "1048576"}
    assert Settings.resolve(env=env).spool_max_bytes == 1_048_576
    assert Settings.resolve(spool_max_bytes=4096, env=env).spool_max_bytes == 4096
    for bad in ("lots", "-5"):
        with pytest.raises(ValueError, match=r"CTXLEDGER_SPOOL_MAX_BYTES|spool_max_bytes"):
            Settings.resolve(env={"CTXLEDGER_SPOOL_MAX_BYTES": bad})
