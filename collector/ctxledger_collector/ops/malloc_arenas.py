"""Fewer glibc malloc arenas for the collector's process and the workers it starts.

glibc gives a thread that first allocates an arena of its own (up to eight per CPU) and
keeps each arena's freed memory for that arena's reuse. The collector decodes and stores
exports on a pool of threads, so under load each of several arenas grows to a request's
peak and the process's resident memory depends on which thread happened to take which
request. Two arenas keep the peak lower and steadier at no measurable cost in speed
(``bench/admission.py``, overload: peak RSS 245-294 MiB, median ~270, over 4 runs with
glibc's default; 234-275 MiB, median 244, over 16 runs with two arenas).
"""

from __future__ import annotations

import ctypes
import os
import sys

#: glibc's mallopt parameter for the arena limit (malloc.h).
M_ARENA_MAX = -8
#: The variable glibc itself reads at start-up; an operator's value is left alone.
ENVIRONMENT_VARIABLE = "MALLOC_ARENA_MAX"


def set_malloc_option(parameter: int, value: int, environment_variable: str) -> bool:
    """Set glibc's malloc ``parameter`` to ``value`` in this process (``mallopt``) and,
    through ``environment_variable`` (the one glibc reads at start-up), in the processes
    it starts. False where nothing was done: ``value`` is 0, the variable is already set
    (glibc applied the operator's value at start-up), or the C library is not glibc."""
    if value <= 0 or environment_variable in os.environ or not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # musl and other C libraries have no mallopt
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    if mallopt(parameter, value) != 1:
        return False
    os.environ[environment_variable] = str(value)
    return True


def limit_malloc_arenas(arenas: int) -> bool:
    """Cap glibc's malloc arenas at ``arenas`` (see :func:`set_malloc_option`)."""
    return set_malloc_option(M_ARENA_MAX, arenas, ENVIRONMENT_VARIABLE)
