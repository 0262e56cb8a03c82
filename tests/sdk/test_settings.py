from __future__ import annotations

from ctxledger._settings import DEFAULT_ENDPOINT, Settings


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
