"""Storage: the database and nothing above it.

Tables, rows and the records read back, column limits, the SQL written once for SQLite
and PostgreSQL, engines and the outage rule, the migrations runner, partitions, retention
and the journey counters kept in step with the reports.

May import: ``decoded`` only.
"""
