"""Forwarding: every accepted OTLP export, unchanged, to other OTLP/HTTP backends
(Phoenix, Langfuse, an OpenTelemetry Collector, ...), so ctxledger can sit in front of
the backend a team already uses.

``destinations`` (the settings), ``queue`` (bounded, drops the oldest), ``retry``
(what is retried, and the backoff), ``sender`` (a thread per destination), ``limits``,
``forwarder`` (what ingest and the app's lifespan call). The package ``__init__``
imports nothing, so the settings can import the pure modules alone.

May import: ``alerts`` (its destination guard) and ``decoded``; the metrics reach the
forwarder through a protocol, so ``ops`` stays above it.
"""
