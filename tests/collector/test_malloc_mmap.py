"""The collector fixes glibc's mmap threshold: in a real process, after a 2 MiB block
was freed (which moves glibc's own threshold up to 2 MiB), a 1 MiB block is still a
mapping of its own (glibc's mallinfo2 counts them), so freeing it returns it."""

from __future__ import annotations

import platform
import textwrap

import pytest

from tests.collector.glibc_program import run_program

pytestmark = pytest.mark.skipif(
    platform.libc_ver()[0] != "glibc", reason="the mmap threshold is glibc's"
)

_PROGRAM = textwrap.dedent(
    """
    import ctypes, json, os, sys
    from ctxledger_collector.ops.malloc_mmap import fix_mmap_threshold

    fixed = fix_mmap_threshold(int(sys.argv[1])) if sys.argv[1] != "skip" else None

    class MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
            "uordblks", "fordblks", "keepcost")]

    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = MallInfo2
    freed = bytearray(2 << 20)  # a mapping (over glibc's first 128 KiB threshold) ...
    del freed  # ... freed: glibc moves its threshold up to 2 MiB unless it is fixed
    mapped_before = libc.mallinfo2().hblks
    kept = bytearray(1 << 20)
    mapped = libc.mallinfo2().hblks - mapped_before
    env = os.environ.get("MALLOC_MMAP_THRESHOLD_")
    print(json.dumps({"fixed": fixed, "mapped": mapped, "env": env}))
    """
)


def _run(argument: str, threshold_env: str | None = None) -> dict[str, object]:
    return run_program(_PROGRAM, argument, "MALLOC_MMAP_THRESHOLD_", threshold_env)


def test_a_fixed_threshold_maps_a_large_block_after_a_larger_one_was_freed() -> None:
    assert _run(str(256 * 1024)) == {"fixed": True, "mapped": 1, "env": str(256 * 1024)}


def test_without_it_glibc_serves_the_block_from_the_heap() -> None:
    """The control: glibc's moving threshold, after the 2 MiB block was freed."""
    assert _run("skip")["mapped"] == 0


def test_zero_and_an_operators_setting_are_left_alone() -> None:
    zero = _run("0")
    assert zero == {"fixed": False, "mapped": 0, "env": None}
    operator = _run(str(256 * 1024), threshold_env=str(4 << 20))
    assert operator["fixed"] is False and operator["env"] == str(4 << 20)
    assert operator["mapped"] == 0  # glibc applied the operator's 4 MiB itself
