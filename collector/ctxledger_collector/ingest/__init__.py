"""Ingest: what happens to an export request before it is judged.

Request bodies (gzip inflated within a limit), admission control, OTLP decoding of protobuf
and JSON into decoded records (with the spans that never met the SDK handed to
:mod:`ctxledger_collector.derive`), the durable spool for exports the database cannot take
yet and its replayer, and the answers at shutdown.

May import: ``derive``, ``decoded``. Never ``storage``, ``judge``, ``query``, ``ops``,
``routes`` or the app: the routes hand what it decoded to the judge.
"""
