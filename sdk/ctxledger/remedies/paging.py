"""Pagination envelope (seed 002): one page of the records with the page, the page
count, the total, the next cursor, and a line telling the model when it must read
further pages — so a first page is never mistaken for the whole result."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ctxledger._safety import raise_errors, report_failure
from ctxledger.remedies.budget import Budget, Declaration, as_budget, declaration
from ctxledger.remedies.fitting import largest
from ctxledger.remedies.row_document import Envelope, Path, load, locate_rows

DEFAULT_PAGE_SIZE = 100
STRATEGY = "page"


@dataclass(frozen=True)
class Page:
    """One page of a result, as the JSON envelope the model sees."""

    text: str
    page: int
    page_count: int
    page_size: int
    total: int
    next_cursor: int | None
    """The next page number, None on the last page (or past it)."""
    kept_indices: tuple[int, ...]
    """0-based positions of this page's items in the whole result."""
    path: Path | None
    fits: bool = True
    """False when a page cannot fit the budget (a single item larger than it, or an
    explicit ``page_size`` too large)."""
    strategy: str = STRATEGY

    @property
    def omitted(self) -> int:
        return self.total - len(self.kept_indices)

    def declaration(self) -> Declaration:
        """Declared whenever this page does not show every item."""
        return declaration(self.omitted > 0, self.strategy)


def _note(page: int, page_count: int, page_size: int, total: int, cursor_param: str) -> str:
    if page_count <= 1 and page == 1:
        return f"[ctxledger: page 1 of 1 — all {total:,} items; nothing omitted]"
    if page > page_count:
        return (
            f"[ctxledger: page {page:,} of {page_count:,} does not exist ({page_size:,} items "
            f"per page, {total:,} in total); ask for {cursor_param}=1 to {page_count}]"
        )
    where = (
        f"next: call again with {cursor_param}={page + 1}"
        if page < page_count
        else "this is the last page"
    )
    return (
        f"[ctxledger: page {page:,} of {page_count:,} ({page_size:,} items per page, "
        f"{total:,} in total): to conclude that something is absent you must read all pages "
        f"or narrow the query; {where}]"
    )


def split_lines(text: str) -> list[str]:
    """Lines as ``\\n`` separates them (a final ``\\r`` dropped), as the clip counts them."""
    if not text:
        return []
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _as_int(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return default


class _Pager:
    def __init__(self, envelope: Envelope, total: int, cursor_param: str) -> None:
        self.envelope = envelope
        self.total = total
        self.cursor_param = cursor_param

    def pages(self, size: int) -> int:
        return max(1, math.ceil(self.total / size))

    def indices(self, page: int, size: int) -> range:
        start = (page - 1) * size
        return range(min(start, self.total), min(start + size, self.total))

    def render(self, page: int, size: int) -> str:
        count = self.pages(size)
        fields: dict[str, Any] = {
            "page": page,
            "page_count": count,
            "page_size": size,
            "total": self.total,
            "next_cursor": page + 1 if page < count else None,
            "note": _note(page, count, size, self.total, self.cursor_param),
        }
        return self.envelope.render(self.indices(page, size), fields, fields_first=True)

    def fitted_size(self, budget: Budget) -> int | None:
        """The largest page size every page of which fits ``budget`` (the next size up
        does not), or None when even one item per page does not fit."""
        chunks = [f" {row}," for row in self.envelope.row_json]
        if budget.tokens is not None:
            weights = budget.tokens_of_many(chunks)
        else:
            weights = [len(chunk) for chunk in chunks]
        prefix = [0]
        for weight in weights:
            prefix.append(prefix[-1] + weight)

        def page_sums(size: int) -> list[int]:
            return [
                prefix[min(start + size, self.total)] - prefix[start]
                for start in range(0, self.total, size)
            ]

        def all_fit(size: int) -> bool:
            sums = page_sums(size)
            worst_first = sorted(range(len(sums)), key=lambda p: -sums[p])
            return all(budget.fits(self.render(p + 1, size)) for p in worst_first)

        # An additive estimate (a page costs its shell plus " <item>," per item; exact
        # for chars, within a few tokens otherwise) finds the size; exact renderings of
        # every page, worst first, then settle it.
        limit = budget.limit or 0
        shell = budget.size(self.render(1, 1)) - (weights[0] if weights else 0)
        estimate = largest(1, max(1, self.total), lambda s: shell + max(page_sums(s)) <= limit)
        if all_fit(estimate):
            return largest(estimate, max(1, self.total), all_fit)
        if estimate > 1 and all_fit(1):
            return largest(1, estimate - 1, all_fit)
        return None


def paginate(
    items_or_json: Any,
    *,
    page: int = 1,
    page_size: int | None = None,
    budget: Budget | int | None = None,
    cursor_param: str = "page",
) -> Page:
    """Page ``page`` (1-based) of a result's records as a JSON envelope with ``page``,
    ``page_count``, ``page_size``, ``total``, ``next_cursor`` (null on the last page),
    a ``note`` telling the model when it must read further pages, and ``items`` (the
    document's other fields are kept; text that is not JSON pages by lines).

    Without ``page_size``, the page size is the largest for which every page fits
    ``budget`` (100 without a budget). Never raises."""
    loaded = load(items_or_json)
    found = locate_rows(loaded.parsed, None) if loaded.ok else None
    if found is None:
        found = ([loaded.parsed], ()) if loaded.ok else (split_lines(loaded.text), ())
    rows, path = found
    parsed = loaded.parsed if loaded.ok else rows
    cursor = cursor_param if isinstance(cursor_param, str) and cursor_param else "page"
    limits = as_budget(budget)
    number = max(1, _as_int(page, 1))
    try:
        pager = _Pager(Envelope(parsed, path, rows), len(rows), cursor)
        return _page(pager, number, page_size, limits, path)
    except Exception as error:
        if raise_errors():
            raise
        report_failure("paginate", error)
        return Page(loaded.text, 1, 1, len(rows), len(rows), None, (), path, fits=False)


def _page(pager: _Pager, number: int, page_size: int | None, budget: Budget, path: Path) -> Page:
    size: int | None = None
    if page_size is not None:
        size = max(1, _as_int(page_size, DEFAULT_PAGE_SIZE))
    elif budget.unlimited:
        size = DEFAULT_PAGE_SIZE
    else:
        size = pager.fitted_size(budget)
    fitted = size is not None
    size = max(1, size or 1)
    text = pager.render(number, size)
    count = pager.pages(size)
    return Page(
        text=text,
        page=number,
        page_count=count,
        page_size=size,
        total=pager.total,
        next_cursor=number + 1 if number < count else None,
        kept_indices=tuple(pager.indices(number, size)),
        path=path,
        fits=fitted and budget.fits(text),
    )
