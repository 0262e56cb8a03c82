"""The ctxledger collector: OTLP ingest, storage, verdicts, query API (issue 3).

Not built yet; this package exists so the wheel layout is final from the start.
"""
