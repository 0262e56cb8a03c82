"""Gzip request bodies inflated within a limit, one bounded piece at a time.

A body is inflated in pieces of at most ``PIECE_BYTES``, so the output held never
exceeds the limit plus one piece, and ``on_growth`` hears the inflated size after each
piece (the ingest route reserves it in the admission budget, which may refuse). Every
member of a multi-member body (RFC 1952) is read. On refusal the pieces are dropped
before the error leaves, and the error raised carries no traceback into the frame that
held them: an exception kept alive by a reference cycle (as one that crossed a thread
pool's future is) must not keep a rejected body's memory until the garbage collector
runs. Stdlib only.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

#: The largest piece inflated at once: the memory a body may hold past its limit.
PIECE_BYTES = 1 << 20
_GZIP_WINDOW = 16 + zlib.MAX_WBITS


class GzipRefused(Exception):
    """A gzip body that is not inflated: too large or not valid gzip."""


class GzipTooLarge(GzipRefused):
    def __init__(self, limit: int) -> None:
        super().__init__(f"decompressed body is over the limit of {limit} bytes")
        self.limit = limit


class GzipInvalid(GzipRefused):
    pass


def inflate(
    body: bytes,
    limit: int,
    on_growth: Callable[[int], None] | None = None,
    piece_bytes: int = PIECE_BYTES,
) -> bytes:
    """``body`` decompressed, every gzip member of it; :class:`GzipTooLarge` past
    ``limit`` bytes, :class:`GzipInvalid` for a corrupt or truncated body. Exceptions
    ``on_growth`` raises pass through, with the pieces dropped all the same."""
    pieces: list[bytes] = []
    refusal: BaseException
    try:
        _inflate_into(pieces, body, limit, on_growth, piece_bytes)
    # A fresh error, raised outside the handler: no traceback into the pieces, no context.
    except GzipTooLarge as too_large:
        refusal = GzipTooLarge(too_large.limit)
    except GzipInvalid as invalid:
        refusal = GzipInvalid(str(invalid))
    except BaseException:
        pieces.clear()
        raise
    else:
        whole = b"".join(pieces)
        pieces.clear()
        return whole
    pieces.clear()
    try:
        raise refusal
    finally:
        del refusal  # else this frame and the error's traceback form a cycle


def _inflate_into(
    pieces: list[bytes],
    body: bytes,
    limit: int,
    on_growth: Callable[[int], None] | None,
    piece_bytes: int,
) -> None:
    size = 0
    rest = body
    while rest:
        inflater = zlib.decompressobj(_GZIP_WINDOW)
        pending = rest
        while not inflater.eof:
            wanted = min(piece_bytes, limit - size + 1)  # never 0: zlib reads 0 as unbounded
            try:
                piece = inflater.decompress(pending, wanted)
            except zlib.error as error:
                raise GzipInvalid(f"body is not valid gzip: {error}") from None
            size += len(piece)
            if size > limit:
                raise GzipTooLarge(limit)
            if piece:
                pieces.append(piece)
                if on_growth is not None:
                    on_growth(size)
            pending = inflater.unconsumed_tail
            if not pending and len(piece) < wanted and not inflater.eof:
                raise GzipInvalid("gzip body is truncated")
        rest = inflater.unused_data
