"""ctxledger: make every loss of tool-result data on its way to the model visible.

Measure each tool result at four stages (``original``, ``serialized``, ``assembled``,
``sent``) and emit the measurements as OpenTelemetry spans that follow the ctxledger
wire contract. ``import ctxledger`` loads no server dependency.
"""

from ctxledger.__about__ import __version__
from ctxledger._api import (
    configure,
    flush,
    measure,
    measure_messages,
    measure_request,
    settings,
    stats,
)
from ctxledger._decorator import tool
from ctxledger._http_hooks import httpx_event_hooks, instrument_http_client
from ctxledger._items import DEFAULT_ID_FIELDS, DEFAULT_ITEM_KEYS
from ctxledger._markers import DEFAULT_MARKERS, EMERGENCY_TRIM_PLACEHOLDER, Marker
from ctxledger._pipeline_stats import PipelineStats
from ctxledger._runs import llm_request, new_run, run, tool_call
from ctxledger._settings import Settings
from ctxledger.remedies.govern import Policy, govern
from ctxledger.verdicts import Tolerances

__all__ = [
    "DEFAULT_ID_FIELDS",
    "DEFAULT_ITEM_KEYS",
    "DEFAULT_MARKERS",
    "EMERGENCY_TRIM_PLACEHOLDER",
    "Marker",
    "PipelineStats",
    "Policy",
    "Settings",
    "Tolerances",
    "__version__",
    "configure",
    "flush",
    "govern",
    "httpx_event_hooks",
    "instrument_http_client",
    "llm_request",
    "measure",
    "measure_messages",
    "measure_request",
    "new_run",
    "run",
    "settings",
    "stats",
    "tool",
    "tool_call",
]
