"""A passthrough FUSE file system that can be switched to answer EROFS to every write,
the way a disk that went read-only does, while the files stay open.

Run as ``python -m tests.reliability.switchable_fs BACKING MOUNTPOINT`` (root, with
/dev/fuse and libfuse). It prints ``mounted`` once the mount answers, then reads
commands on stdin, one a line: ``ro`` (every write, create, rename, delete, truncate
and fsync fails with EROFS, also through descriptors opened before) or ``rw``; each
is answered ``ro`` or ``rw`` once in force. End of stdin unmounts.

A tmpfs or ext4 ``remount,ro`` is no substitute: it fails with EBUSY while SQLite
holds its files open for writing.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import mfusepy  # type: ignore[import-untyped]


class SwitchableFs(mfusepy.Operations):  # type: ignore[misc]
    use_ns = True

    def __init__(self, backing: Path) -> None:
        self.backing = backing
        self.read_only = False

    def _real(self, path: str) -> str:
        return str(self.backing / path.lstrip("/"))

    def _refuse_writes(self) -> None:
        if self.read_only:
            raise mfusepy.FuseOSError(errno.EROFS)

    def getattr(self, path: str, fh: int | None = None) -> dict[str, Any]:
        stats = os.fstat(fh) if fh is not None else os.lstat(self._real(path))
        keys = ("st_mode", "st_nlink", "st_uid", "st_gid", "st_size")
        found: dict[str, Any] = {key: getattr(stats, key) for key in keys}
        for key in ("st_atime", "st_mtime", "st_ctime"):
            found[key] = getattr(stats, key + "_ns")
        return found

    def readdir(self, path: str, fh: int) -> list[str]:
        return [".", "..", *os.listdir(self._real(path))]

    def statfs(self, path: str) -> dict[str, int]:
        stats = os.statvfs(self._real(path))
        fields = "f_bavail f_bfree f_blocks f_bsize f_favail f_ffree f_files f_flag f_frsize"
        return {key: getattr(stats, key) for key in (*fields.split(), "f_namemax")}

    def access(self, path: str, amode: int) -> int:
        if amode & os.W_OK:
            self._refuse_writes()
        if not os.access(self._real(path), amode):
            raise mfusepy.FuseOSError(errno.EACCES)
        return 0

    def open(self, path: str, flags: int) -> int:
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_TRUNC | os.O_APPEND):
            self._refuse_writes()
        return os.open(self._real(path), flags)

    def create(self, path: str, mode: int, fi: object = None) -> int:
        self._refuse_writes()
        return os.open(self._real(path), os.O_RDWR | os.O_CREAT, mode)

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        return os.pread(fh, size, offset)

    def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
        self._refuse_writes()
        return os.pwrite(fh, data, offset)

    def truncate(self, path: str, length: int, fh: int | None = None) -> int:
        self._refuse_writes()
        if fh is not None:
            os.ftruncate(fh, length)
        else:
            os.truncate(self._real(path), length)
        return 0

    def fsync(self, path: str, datasync: int, fh: int) -> int:
        self._refuse_writes()
        (os.fdatasync if datasync else os.fsync)(fh)
        return 0

    def flush(self, path: str, fh: int) -> int:
        return 0

    def release(self, path: str, fh: int) -> int:
        os.close(fh)
        return 0

    def unlink(self, path: str) -> int:
        self._refuse_writes()
        os.unlink(self._real(path))
        return 0

    def rename(self, old: str, new: str) -> int:
        self._refuse_writes()
        os.rename(self._real(old), self._real(new))
        return 0

    def mkdir(self, path: str, mode: int) -> int:
        self._refuse_writes()
        os.mkdir(self._real(path), mode)
        return 0

    def rmdir(self, path: str) -> int:
        self._refuse_writes()
        os.rmdir(self._real(path))
        return 0

    def chmod(self, path: str, mode: int) -> int:
        self._refuse_writes()
        os.chmod(self._real(path), mode)
        return 0

    def chown(self, path: str, uid: int, gid: int) -> int:
        self._refuse_writes()
        os.chown(self._real(path), uid, gid)
        return 0

    def utimens(self, path: str, times: tuple[int, int] | None = None) -> int:
        self._refuse_writes()
        if times is None:
            os.utime(self._real(path))
        else:
            os.utime(self._real(path), ns=times)
        return 0


def _answer_commands(fs: SwitchableFs, mountpoint: str) -> None:
    while not os.path.ismount(mountpoint):
        time.sleep(0.01)
    print("mounted", flush=True)
    for line in sys.stdin:
        command = line.strip()
        if command in ("ro", "rw"):
            fs.read_only = command == "ro"
            print(command, flush=True)
    subprocess.run(["umount", "-l", mountpoint], check=False)


def main() -> None:
    backing, mountpoint = Path(sys.argv[1]).resolve(), sys.argv[2]
    fs = SwitchableFs(backing)
    threading.Thread(target=_answer_commands, args=(fs, mountpoint), daemon=True).start()
    mfusepy.FUSE(fs, mountpoint, foreground=True, fsname="ctxledger-switchable")


if __name__ == "__main__":
    main()
