"""Parts the ingest benchmarks share: the workload, the collector subprocess, the
databases, the stock-exporter client, the floor, verification, tables and the plot."""
