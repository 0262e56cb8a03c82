"""Request bodies a runtime wrote to files and referenced from its log events (Claude
Code's ``OTEL_LOG_RAW_API_BODIES=file:DIR``: each ``api_request_body`` event's
``body_ref`` names ``DIR/<id>.request.json``).

The collector reads such a file only inside a directory the operator named
(``--read-bodies-from DIR``): the path, with every link resolved, must lie inside it, so
neither ``..`` nor a link leads out; only regular files, up to a size limit. Anything
else is not read, and the reason says which setting would let it be.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

SETTING = "--read-bodies-from DIR (CTXLEDGER_READ_BODIES_FROM)"


@dataclass(frozen=True)
class BodyText:
    """A body file's text, or why it was not read."""

    text: str | None
    unread: str | None = None


@dataclass(frozen=True)
class BodyFiles:
    """The directories body files may be read from (as given; resolved when read)."""

    directories: tuple[str, ...] = ()
    max_bytes: int = 64 * 1024 * 1024

    def read(self, ref: str) -> BodyText:
        where = f"the body is in a file, {ref}"
        if not self.directories:
            return BodyText(None, f"{where}: let the collector read it with {SETTING}")
        path = Path(ref)
        if not path.is_absolute():
            return BodyText(None, f"{where}, a relative path the collector cannot place")
        real = Path(os.path.realpath(path))
        roots = [Path(os.path.realpath(d)) for d in self.directories]
        if not any(real.is_relative_to(root) for root in roots):
            return BodyText(
                None, f"{where}, outside the directories named with {SETTING} (links resolved)"
            )
        try:
            with open(real, "rb") as file:
                status = os.fstat(file.fileno())
                if not stat.S_ISREG(status.st_mode):
                    return BodyText(None, f"{where}, not a regular file")
                if status.st_size > self.max_bytes:
                    return BodyText(
                        None, f"{where} of {status.st_size:,} bytes, over {self.max_bytes:,}"
                    )
                data = file.read(self.max_bytes + 1)
        except OSError as error:
            return BodyText(None, f"{where} the collector cannot read: {error.strerror}")
        try:
            return BodyText(data.decode("utf-8"))
        except UnicodeDecodeError:
            return BodyText(None, f"{where} that is not UTF-8 text")
