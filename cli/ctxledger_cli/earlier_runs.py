"""What ``ctxledger up`` says when its database already holds runs from earlier: the demo's
figures then add to theirs, so the counts stop matching the README's, and how to start
fresh."""

from __future__ import annotations

from ctxledger_cli.query_api import get_json


def runs_held(collector_url: str) -> int | None:
    """How many runs the collector holds (None when it cannot say)."""
    try:
        answer = get_json(f"{collector_url.rstrip('/')}/api/v1/runs?limit=1", timeout_s=10)
        return int(answer["total"])
    except (OSError, KeyError, TypeError, ValueError):
        return None


def earlier_runs_note(held: int | None, database: str) -> str | None:
    """One line when ``database`` held runs before the demo was sent, else None."""
    if not held:
        return None
    runs = f"{held:,} run{'s' * (held != 1)}"
    if database.startswith("sqlite"):
        fresh = "stop it and delete the SQLite file (and its -wal, -shm and -spool siblings)"
    else:
        fresh = "point CTXLEDGER_DATABASE_URL at an empty database"
    return (
        f"  Note:       {database} already held {runs} from earlier; the counts and the "
        f"dashboard add this demo's to them, so they are not the README's. To start fresh, "
        f"{fresh}."
    )
