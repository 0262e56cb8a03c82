"""The counter tables (sqlmodel): the reports summed for the aggregates, kept in step
with the reports by ingest in the same transaction
(:mod:`ctxledger_collector.storage.journey_counts`; see
:mod:`ctxledger_collector.storage.tables` for the rest of the schema; migrations ``0004``,
``0007``, ``0012`` and ``0015`` create them)."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Integer, Text, text
from sqlmodel import Field, SQLModel

from ctxledger_collector.storage.table_columns import WITHOUT_ROWID, added_counter, big_integer
from ctxledger_collector.storage.typed_tables import table_of


class JourneyCountRow(SQLModel, table=True):
    """Journeys by time bucket, agent, tool, verdict and layer, with what they lost: the
    timeline, the breakdowns, a tool's totals and the Prometheus gauges read these
    rather than the reports. Each journey is counted at every grain (a minute, an hour
    and a day: ``grain`` seconds) in the bucket of its ``last_observed_at``
    (``bucket`` <= it < ``bucket + grain``). A missing agent or tool name is ``""``
    (the decoder never stores an empty name); so is a journey without a layer (migration
    0015 added it: the report's layer sentence, which the layer filter selects)."""

    __tablename__ = "journey_counts"
    __table_args__ = WITHOUT_ROWID

    grain: int = Field(primary_key=True)
    bucket: int = Field(sa_column=Column(BigInteger, primary_key=True))
    agent_name: str = Field(primary_key=True, max_length=256)
    tool_name: str = Field(primary_key=True, max_length=256)
    verdict: str = Field(primary_key=True, max_length=16)
    layer: str = Field(sa_column=Column(Text, primary_key=True))
    journeys: int = big_integer()
    lost_items: int = big_integer()
    lost_tokens: int = big_integer()
    #: Lost results (each counted once, at its first lost journey) and what they lost.
    lost_results: int = added_counter()
    result_lost_items: int = added_counter()
    result_lost_tokens: int = added_counter()
    #: Journeys, and lost results, whose lost tokens are not known (migration 0012).
    tokens_unknown: int = added_counter()
    result_tokens_unknown: int = added_counter()


class RunJourneyCountRow(SQLModel, table=True):
    """One run's journeys by agent, verdict and layer: the runs list's counts, its
    verdict and layer filters, and which agents a run's journeys name."""

    __tablename__ = "run_journey_counts"
    __table_args__ = WITHOUT_ROWID

    run_id: int = Field(primary_key=True)
    agent_name: str = Field(primary_key=True, max_length=256)
    verdict: str = Field(primary_key=True, max_length=16)
    layer: str = Field(sa_column=Column(Text, primary_key=True))
    journeys: int
    lost_results: int = Field(
        default=0, sa_column=Column(Integer, nullable=False, server_default=text("0"))
    )


JOURNEY_COUNTS = table_of(JourneyCountRow)
RUN_JOURNEY_COUNTS = table_of(RunJourneyCountRow)
