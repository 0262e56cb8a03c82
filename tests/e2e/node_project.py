"""A JavaScript project of the tests (``package.json`` + ``package-lock.json``) installed
once into a cache outside the repository, keyed by the digest of its files: the npm
packages' pins never touch ours, and a second run installs nothing."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

#: What a project installs from: these files decide the node_modules.
PACKAGE_FILES = ("package.json", "package-lock.json")
INSTALL_TIMEOUT_S = 600


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ctxledger-tests" / "node"


def require_node() -> None:
    """Skip, saying why, where this machine has no Node.js or npm."""
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not on PATH: the Vercel AI SDK is a Node.js package")


def _digest(project: Path) -> str:
    digest = hashlib.sha256()
    for name in PACKAGE_FILES:
        digest.update(name.encode() + b"\0" + (project / name).read_bytes())
    return digest.hexdigest()[:16]


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def installed_node_modules(project: Path) -> Path:
    """The project's ``node_modules``, installed with ``npm ci`` (the lock file's exact
    versions) on first use and reused after; concurrent callers wait for one install."""
    require_node()
    target = cache_root() / f"{project.name}-{_digest(project)}"
    modules = target / "node_modules"
    with _locked(target.with_suffix(".lock")):
        if (target / ".complete").exists():
            return modules
        staging = Path(tempfile.mkdtemp(prefix=f"{project.name}-", dir=target.parent))
        for name in PACKAGE_FILES:
            shutil.copy2(project / name, staging / name)
        done = subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"],
            cwd=staging, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S,
        )  # fmt: skip
        if done.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            raise RuntimeError(f"npm ci of {project} failed:\n{done.stderr[-3000:]}")
        (staging / ".complete").touch()
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    return modules


def prepared_project(project: Path, workdir: Path) -> Path:
    """A copy of the project's scripts in ``workdir`` with the cached ``node_modules``
    linked beside them (Node resolves ES module imports from the script's directory)."""
    modules = installed_node_modules(project)
    for script in project.glob("*.mjs"):
        shutil.copy2(script, workdir / script.name)
    shutil.copy2(project / "package.json", workdir / "package.json")
    link = workdir / "node_modules"
    if not link.exists():
        link.symlink_to(modules, target_is_directory=True)
    return workdir
