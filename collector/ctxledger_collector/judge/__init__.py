"""Judge: decoded records in, journeys and verdicts out.

The store's write path (idempotent upserts, then re-judging every journey a batch touched),
the stored traces it asks about, tool spans matched to the calls that issued them, where
each lost result was first lost, and the calls' records.

May import: ``alerts`` (the events a verdict change raises), ``storage``, ``decoded``.
Never ``ingest``, ``derive``, ``query``, ``ops``, ``routes`` or the app.
"""
