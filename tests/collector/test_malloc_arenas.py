"""The collector caps glibc's malloc arenas: counted in a real process with glibc's own
report (malloc_info), after threads that each allocate while all are alive."""

from __future__ import annotations

import platform
import textwrap

import pytest

from tests.collector.glibc_program import run_program

pytestmark = pytest.mark.skipif(
    platform.libc_ver()[0] != "glibc", reason="malloc arenas are glibc's"
)

# Eight threads allocate from the C heap (4 KiB bytearrays are glibc allocations, not
# pymalloc's) while all are alive, then glibc lists its heaps, one per arena.
_PROGRAM = textwrap.dedent(
    """
    import ctypes, json, os, sys, threading
    from ctxledger_collector.ops.malloc_arenas import limit_malloc_arenas

    limited = limit_malloc_arenas(int(sys.argv[1])) if sys.argv[1] != "skip" else None
    barrier = threading.Barrier(8)
    kept = []

    def allocate() -> None:
        kept.append([bytearray(4096) for _ in range(64)])
        barrier.wait()

    threads = [threading.Thread(target=allocate) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    libc = ctypes.CDLL(None)
    libc.open_memstream.restype = ctypes.c_void_p
    libc.open_memstream.argtypes = (
        ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_size_t)
    )
    libc.malloc_info.argtypes = (ctypes.c_int, ctypes.c_void_p)
    libc.fclose.argtypes = (ctypes.c_void_p,)
    buffer, size = ctypes.c_char_p(), ctypes.c_size_t()
    stream = libc.open_memstream(ctypes.byref(buffer), ctypes.byref(size))
    libc.malloc_info(0, stream)
    libc.fclose(stream)
    heaps = buffer.value.decode().count("<heap nr=")
    env = os.environ.get("MALLOC_ARENA_MAX")
    print(json.dumps({"limited": limited, "heaps": heaps, "env": env}))
    """
)


def _run(argument: str, malloc_arena_max: str | None = None) -> dict[str, object]:
    return run_program(_PROGRAM, argument, "MALLOC_ARENA_MAX", malloc_arena_max)


def test_two_arenas_serve_eight_allocating_threads() -> None:
    limited = _run("2")
    assert limited == {"limited": True, "heaps": 2, "env": "2"}


def test_without_the_cap_glibc_gives_the_threads_arenas_of_their_own() -> None:
    """The control: the same program, nothing capped, uses more than two arenas."""
    unlimited = _run("skip")
    assert unlimited["heaps"] > 2, unlimited


def test_zero_and_an_operators_malloc_arena_max_are_left_alone() -> None:
    zero = _run("0")
    assert zero["limited"] is False and zero["env"] is None and zero["heaps"] > 2
    operator = _run("2", malloc_arena_max="3")
    assert operator["limited"] is False and operator["env"] == "3"
    assert operator["heaps"] == 3  # glibc applied the operator's value itself
