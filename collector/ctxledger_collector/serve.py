"""Run the collector under uvicorn."""

from __future__ import annotations

import sys

import uvicorn

from ctxledger_collector.app import SchemaNotMigrated, create_app, prepare_database
from ctxledger_collector.settings import Settings


def serve(host: str = "127.0.0.1", port: int = 4318, log_level: str = "info") -> int:
    """Serve until interrupted. Refuses to start on an un-migrated database (exit 2)."""
    settings = Settings()
    try:
        prepare_database(settings)
    except SchemaNotMigrated as error:
        print(f"ctxledger serve: {error}", file=sys.stderr)
        return 2
    print(
        f"ctxledger collector on http://{host}:{port} "
        f"(OTLP: POST /v1/traces, API: /api/v1, docs: /docs) storing in {settings.database_url}",
        file=sys.stderr,
    )
    uvicorn.run(create_app(settings), host=host, port=port, log_level=log_level)
    return 0
