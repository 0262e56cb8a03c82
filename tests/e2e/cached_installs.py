"""Packages the tests run whose pins must not touch ours (agent frameworks, npm packages),
installed once into a cache outside the repository, keyed by the digest of the files
that pin them: a second run installs nothing, and concurrent callers wait for one
install. A JavaScript project (``package.json`` + ``package-lock.json``) gets its
``node_modules`` by ``npm ci``; a Python one (``requirements.txt``, every package pinned)
a virtual environment of its own."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

INSTALL_TIMEOUT_S = 900
NODE_FILES = ("package.json", "package-lock.json")
PYTHON_FILES = ("requirements.txt",)


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ctxledger-tests"


def require_node() -> None:
    """Skip, saying why, where this machine has no Node.js or npm."""
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not on PATH: the Vercel AI SDK is a Node.js package")


def _digest(project: Path, files: tuple[str, ...]) -> str:
    digest = hashlib.sha256(sys.version.encode())
    for name in files:
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


def _run(command: list[str], cwd: Path) -> None:
    done = subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")


def _cached(
    kind: str, project: Path, files: tuple[str, ...], build: Callable[[Path], None]
) -> Path:
    """The directory ``build`` filled from copies of ``files``, built once per digest."""
    target = cache_root() / kind / f"{project.name}-{_digest(project, files)}"
    with _locked(target.with_suffix(".lock")):
        if (target / ".complete").exists():
            return target
        staging = Path(tempfile.mkdtemp(prefix=f"{project.name}-", dir=target.parent))
        try:
            for name in files:
                shutil.copy2(project / name, staging / name)
            build(staging)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        (staging / ".complete").touch()
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    return target


def installed_node_modules(project: Path) -> Path:
    """The project's ``node_modules``, the lock file's exact versions."""
    require_node()
    npm_ci = ["npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"]
    return _cached("node", project, NODE_FILES, lambda d: _run(npm_ci, d)) / "node_modules"


def prepared_node_project(project: Path, workdir: Path) -> Path:
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


def installed_python(project: Path) -> Path:
    """The interpreter of a virtual environment holding the project's
    ``requirements.txt``, and nothing of ours."""

    def build(directory: Path) -> None:
        venv = directory / "venv"
        _run([sys.executable, "-m", "venv", str(venv)], directory)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-input"]
        _run([*pip, "-r", str(directory / "requirements.txt")], directory)

    # The venv's scripts name its path: it is built where it stays (the digest's name).
    target = cache_root() / "python" / f"{project.name}-{_digest(project, PYTHON_FILES)}"
    with _locked(target.with_suffix(".lock")):
        if not (target / ".complete").exists():
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir(parents=True)
            shutil.copy2(project / "requirements.txt", target / "requirements.txt")
            try:
                build(target)
            except BaseException:
                shutil.rmtree(target, ignore_errors=True)
                raise
            (target / ".complete").touch()
    return target / "venv" / "bin" / "python"
