"""Read tables as tools and LLM tools write them: markdown (GitHub) tables and CSV/TSV
with a header row. Each row is a record keyed by the header; a cell that is a number as
JSON writes it reads as that number, so a JSON record and its CSV row carry the same
data."""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass
from typing import Any

_SEPARATOR_ROW = re.compile(r"\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_BOOLEANS = {"true": True, "false": False, "True": True, "False": False}
_MAX_HEADER_CHARS = 64


@dataclass(frozen=True)
class Table:
    """The rows of a table; ``whole`` is False when other text surrounds it or its last
    row was cut."""

    rows: list[dict[str, Any]]
    whole: bool


def cell_value(cell: str) -> Any:
    """A cell as the JSON value it shows: numbers and booleans as such, else the text."""
    if _NUMBER.fullmatch(cell):
        number = json.loads(cell)
        return number if json.dumps(number) == cell else cell
    return _BOOLEANS.get(cell, cell)


def _cells(line: str) -> list[str]:
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    return [c.strip().replace("\\|", "|") for c in _CELL_SPLIT.split(body)]


def _header_ok(names: list[str]) -> bool:
    return (
        len(names) >= 2
        and len(set(names)) == len(names)
        and all(
            n and len(n) <= _MAX_HEADER_CHARS and (n[0].isalpha() or n[0] == "_") for n in names
        )
    )


def read_markdown_table(text: str) -> Table | None:
    """The first markdown table of ``text`` (a header row, then a ``|---|`` row)."""
    lines = text.splitlines()
    for index in range(len(lines) - 1):
        if lines[index].lstrip().startswith("|") and _SEPARATOR_ROW.fullmatch(lines[index + 1]):
            break
    else:
        return None
    header = _cells(lines[index])
    if len(header) < 1 or len(set(header)) != len(header) or not all(header):
        return None
    end = index + 2
    while end < len(lines) and lines[end].lstrip().startswith("|"):
        end += 1
    rows = []
    for line in lines[index + 2 : end]:
        cells = _cells(line)
        cells += [""] * (len(header) - len(cells))  # as GitHub renders a short row
        rows.append({name: cell_value(cell) for name, cell in zip(header, cells, strict=False)})
    surrounded = any(line.strip() for line in (*lines[:index], *lines[end:]))
    return Table(rows, whole=not surrounded)


def read_csv_table(text: str) -> Table | None:
    """CSV (or, when the first line has a tab, TSV) with a header row of field names,
    every row as wide as the header (the last one may be cut: it does not count)."""
    first_line = text.lstrip("\r\n").split("\n", 1)[0]
    delimiter = "\t" if "\t" in first_line else ","
    if delimiter not in first_line:
        return None
    try:
        first = next(csv.reader([first_line], delimiter=delimiter))
        if not _header_ok([name.strip() for name in first]):  # before reading all of it
            return None
        parsed = [row for row in csv.reader(io.StringIO(text), delimiter=delimiter) if row]
    except (csv.Error, StopIteration):
        return None
    if len(parsed) < 2:
        return None
    header = [name.strip() for name in parsed[0]]
    body = parsed[1:]
    whole = True
    if len(body[-1]) < len(header):
        body, whole = body[:-1], False
    if not body or any(len(row) != len(header) for row in body):
        return None
    return Table(
        [{n: cell_value(c) for n, c in zip(header, row, strict=True)} for row in body], whole
    )


def table_format(text: str) -> str:
    """``csv`` or ``tsv``: which delimiter :func:`read_csv_table` used."""
    return "tsv" if "\t" in text.lstrip("\r\n").split("\n", 1)[0] else "csv"
