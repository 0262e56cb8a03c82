"""The bounded gzip inflater: stops at the limit holding at most the limit, reads every
member, names a corrupt or truncated body, and leaves nothing of a refused body behind."""

from __future__ import annotations

import gc
import gzip
import traceback
import tracemalloc
from collections.abc import Iterator

import pytest

from ctxledger_collector.ingest.gzip_bodies import GzipInvalid, GzipTooLarge, inflate
from ctxledger_collector.routes.otlp_answers import RequestRejected, gunzip

MIB = 1 << 20


def zeros_bomb(inflated: int) -> bytes:
    return gzip.compress(bytes(inflated), compresslevel=9)


def test_a_bomb_stops_at_the_limit_and_never_holds_more() -> None:
    sizes: list[int] = []
    bomb = zeros_bomb(64 * MIB)
    assert len(bomb) < 100_000

    with pytest.raises(GzipTooLarge, match="over the limit of 3145728 bytes"):
        inflate(bomb, 3 * MIB, sizes.append, piece_bytes=MIB)

    assert sizes == [MIB, 2 * MIB, 3 * MIB]  # one piece at a time, none past the limit


def test_a_body_of_exactly_the_limit_passes_and_one_byte_more_does_not() -> None:
    data = bytes(range(256)) * 4_000
    body = gzip.compress(data)

    assert inflate(body, len(data), piece_bytes=4_096) == data
    with pytest.raises(GzipTooLarge):
        inflate(body, len(data) - 1, piece_bytes=4_096)


@pytest.mark.parametrize("piece_bytes", [1, 7, MIB])
def test_concatenated_members_are_read_whole(piece_bytes: int) -> None:
    first, second = "第一部分 first ".encode() * 50, "第二部分 second".encode() * 70
    body = gzip.compress(first) + gzip.compress(second)
    sizes: list[int] = []

    assert inflate(body, 10 * MIB, sizes.append, piece_bytes) == first + second
    assert sizes[-1] == len(first) + len(second)


def test_the_limit_counts_every_member_together() -> None:
    half = bytes(1_000)
    body = gzip.compress(half) + gzip.compress(half)
    with pytest.raises(GzipTooLarge):
        inflate(body, 1_999)
    assert inflate(body, 2_000) == half + half


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"this is not gzip", "body is not valid gzip: "),
        (gzip.compress(b"x" * 10_000)[:-12], "gzip body is truncated"),
        (gzip.compress(b"ok") + b"trailing junk", "body is not valid gzip: "),
        (gzip.compress(b"ok")[:5], "gzip body is truncated"),
    ],
    ids=["not gzip", "truncated", "junk after a member", "header only"],
)
def test_a_corrupt_or_truncated_body_is_named_and_answered_400(body: bytes, message: str) -> None:
    with pytest.raises(GzipInvalid, match=message):
        inflate(body, MIB)
    with pytest.raises(RequestRejected) as answered:
        gunzip(body, MIB)
    assert answered.value.status == 400
    assert answered.value.message.startswith(message)


def test_an_empty_body_inflates_to_nothing() -> None:
    assert inflate(b"", MIB) == b""
    assert inflate(gzip.compress(b""), MIB) == b""


def test_the_budget_may_refuse_midway_and_its_error_passes_through() -> None:
    class Refused(Exception):
        pass

    def refuse_past_two(size: int) -> None:
        if size > 2 * MIB:
            raise Refused

    with pytest.raises(Refused):
        inflate(zeros_bomb(8 * MIB), 64 * MIB, refuse_past_two, piece_bytes=MIB)


@pytest.fixture
def collector_off() -> Iterator[None]:
    """No garbage collection: what a refusal leaves is freed by reference counts or not
    at all, as between two runs of the collector's garbage collector."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect()


def test_a_refused_bomb_kept_in_a_reference_cycle_holds_none_of_its_pieces(
    collector_off: None,
) -> None:
    bomb = zeros_bomb(64 * MIB)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept: list[object] = []
        try:
            gunzip(bomb, 16 * MIB)
        except RequestRejected as refused:
            assert refused.status == 413
            assert refused.__context__ is None and refused.__cause__ is None
            frames = [frame.f_code.co_name for frame, _ in traceback.walk_tb(refused.__traceback__)]
            assert "_inflate_into" not in frames and "inflate" not in frames
            kept.extend((refused, kept))  # a cycle, as a thread pool's future makes one
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept
    assert held < MIB, f"a refused bomb still holds {held:,} bytes"


@pytest.mark.parametrize(
    "body", [zeros_bomb(4 * MIB), b"not gzip at all"], ids=["too large", "not gzip"]
)
def test_a_refusal_leaves_no_reference_cycle_behind(collector_off: None, body: bytes) -> None:
    """A refusal in a cycle with a frame (``refusal = ...; raise refusal``) keeps that
    frame, and the body it holds, until the garbage collector runs."""
    with pytest.raises(RequestRejected):
        gunzip(body, MIB)
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        cyclic = [type(o).__name__ for o in gc.garbage if isinstance(o, BaseException)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert cyclic == []
