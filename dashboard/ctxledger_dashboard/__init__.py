"""The ctxledger dashboard: browse the drops of every agent step during an incident.

It reads only the collector's HTTP API. Start it with ``ctxledger dashboard --api URL``
(or the whole stack with ``ctxledger up``)."""
