"""Which rows structured preservation must keep: :class:`KeepRule` and the default
rule table (errors, anomaly statuses, large amounts, notes that ask for a second look)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from ctxledger.remedies.row_document import dumps


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except (re.error, TypeError, ValueError):
        return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip().replace(",", "").replace("_", ""))
        except ValueError:
            return None
    return None


def _same(value: Any, wanted: Any) -> bool:
    if isinstance(value, str) and isinstance(wanted, str):
        return value.strip().casefold() == wanted.casefold()
    if isinstance(value, bool) or isinstance(wanted, bool):
        return value is wanted
    return bool(value == wanted)


def _field(row: Any, name: str) -> tuple[bool, Any]:
    if not isinstance(row, dict):
        return False, None
    if name in row:
        return True, row[name]
    node: Any = row
    for part in name.split("."):
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


@dataclass(frozen=True)
class KeepRule:
    """Keep rows whose ``field`` matches every condition given: ``equals`` (a value or
    a tuple of values; strings compare case-insensitively), ``regex`` (searched in the
    value's text), ``min``/``max`` (numbers or numeric strings), ``non_empty``. With
    ``field="*"`` any field of the row may match. A rule with no condition matches a
    present, non-null field. ``field`` may be a dotted path (``error.code``)."""

    name: str
    field: str
    equals: Any = None
    regex: str | None = None
    min: float | None = None
    max: float | None = None
    non_empty: bool = False

    def matches(self, row: Any) -> bool:
        """Whether ``row`` matches; never raises (a failing check is no match)."""
        try:
            if self.field == "*":
                if isinstance(row, dict):
                    return any(self._test(v) for v in row.values())
                return self._test(row)
            present, value = _field(row, self.field)
            return present and self._test(value)
        except Exception:
            return False

    def _test(self, value: Any) -> bool:
        if self.equals is not None:
            options = (
                self.equals
                if isinstance(self.equals, (tuple, list, set, frozenset))
                else (self.equals,)
            )
            if not any(_same(value, option) for option in options):
                return False
        if self.regex is not None:
            pattern = _compiled(self.regex)
            if pattern is None or value is None:
                return False
            text = value if isinstance(value, str) else dumps(value)
            if not pattern.search(text):
                return False
        if self.min is not None or self.max is not None:
            number = _number(value)
            if number is None:
                return False
            if self.min is not None and number < self.min:
                return False
            if self.max is not None and number > self.max:
                return False
        if self.non_empty:
            if value is None or value in ("", [], {}):
                return False
            if isinstance(value, str) and not value.strip():
                return False
        return value is not None


#: Notes that ask for a second look (English and Chinese, as in the seeds' data).
SUSPICIOUS_NOTE = (
    r"(?i)\b(?:fraud\w*|suspicious|chargeback|disput\w*|complain\w*|urgent|escalat\w*|"
    r"manual review|do not ship|blacklist\w*|stolen)\b|欺诈|可疑|异常|投诉|争议|拒付|风控|"
    r"人工审核|加急"
)
#: Status values that mark a row as an anomaly.
ANOMALY_STATUSES = (
    "refunding",
    "refund_failed",
    "failed",
    "error",
    "rejected",
    "disputed",
    "chargeback",
    "timeout",
)

DEFAULT_RULES: tuple[KeepRule, ...] = (
    KeepRule("error_code", "error_code", non_empty=True),
    KeepRule("error", "error", non_empty=True),
    KeepRule("status", "status", equals=ANOMALY_STATUSES),
    KeepRule("amount>=10000", "amount", min=10_000),
    KeepRule("suspicious_note", "note", regex=SUSPICIOUS_NOTE),
)
