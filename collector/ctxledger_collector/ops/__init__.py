"""Ops: how the collector process is configured, opened, watched and stopped.

Settings, Prometheus metrics, readiness, access keys, exposure of the listening address,
the listening ports, opening the database a command was given, the exit deadline and the
malloc arena cap.

May import every step below it (``ingest``, ``judge``, ``query``, ``storage``, ``alerts``,
``forwarding``, ``derive``, ``decoded``); never ``routes`` or the app.
"""
