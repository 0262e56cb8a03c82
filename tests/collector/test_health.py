from __future__ import annotations

from tests.collector.live_collector import LiveCollector


def test_health_readiness_and_metrics(collector: LiveCollector) -> None:
    with collector.client() as http:
        assert http.get("/healthz").json() == {"status": "ok"}
        ready = http.get("/readyz")
        assert ready.status_code == 200
        assert ready.json()["status"] == "ready"
        assert ready.json()["spool"]["requests"] == 0
        metrics = http.get("/metrics")
        assert metrics.status_code == 200
        assert "ctxledger_ingest_requests" in metrics.text
        assert http.get("/docs").status_code == 200
        assert "/v1/traces" in http.get("/openapi.json").json()["paths"]
