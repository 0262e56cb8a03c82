"""The ctxledger collector: OTLP/HTTP ingest, storage (SQLite or PostgreSQL), verdicts,
query API and Prometheus metrics. Start it with ``ctxledger serve``; build the app with
:func:`ctxledger_collector.app.create_app`."""
