"""Finding the most that still fits a budget: the largest count a monotone test allows
(galloping, then bisection), and the head and tail counts of a clip."""

from __future__ import annotations

from collections.abc import Callable, Sequence


def largest(lo: int, hi: int, ok: Callable[[int], bool]) -> int:
    """The largest ``k`` in ``[lo, hi]`` reached from ``lo`` (where ``ok`` holds) with
    ``ok(k)`` true and ``ok(k + 1)`` false (or ``k == hi``): galloping, then bisection."""
    if hi <= lo:
        return lo
    bad = hi + 1
    step = 1
    while lo < hi:
        probe = min(lo + step, hi)
        if not ok(probe):
            bad = probe
            break
        lo = probe
        step *= 2
    while bad - lo > 1:
        mid = (lo + bad) // 2
        if ok(mid):
            lo = mid
        else:
            bad = mid
    return lo


def fit_head_and_tail(
    heads: Sequence[int],
    tails: Sequence[int],
    fits: Callable[[int, int], bool],
    head_fits: Callable[[int], bool],
) -> tuple[int, int] | None:
    """Head and tail counts ``(i, j)`` whose rendering fits, such that neither one more
    head unit nor one more tail unit would. ``heads[i]`` is the end of a head of ``i``
    units, ``tails[j]`` the start of a tail of ``j`` units; something is always omitted.
    """
    if not fits(0, 0):
        return None

    def max_i(j: int) -> int:
        return largest(0, len(heads) - 1, lambda k: heads[k] < tails[j])

    def max_j(i: int) -> int:
        return largest(0, len(tails) - 1, lambda k: tails[k] > heads[i])

    i = largest(0, max_i(0), head_fits)  # the head takes its share first
    if not fits(i, 0):
        i = largest(0, i, lambda k: fits(k, 0))
    j = 0
    for _ in range(64):
        new_j = largest(j, max_j(i), _tail_of(fits, i))
        new_i = largest(i, max_i(new_j), _head_of(fits, new_j))
        if (new_i, new_j) == (i, j):
            break
        i, j = new_i, new_j
    return i, j


def _tail_of(fits: Callable[[int, int], bool], i: int) -> Callable[[int], bool]:
    return lambda k: fits(i, k)


def _head_of(fits: Callable[[int, int], bool], j: int) -> Callable[[int], bool]:
    return lambda k: fits(k, j)
