"""Query: the read side behind the query API and the dashboard.

Report filters, the runs list, one run's steps, report documents, aggregates over time and
keyset pagination, with the response models each route declares.

May import: ``storage``, ``decoded``. Never the write path (``judge``, ``ingest``).
"""
