"""Runs one document's code blocks in order, as a reader would in a shell: real servers
(``ctxledger serve``, ``ctxledger provider``) on free ports, real subprocesses with the
project's venv first on PATH, exports carried from one bash block to the next."""

from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

from tests.collector.live_collector import free_port
from tests.docs.markdown_blocks import CodeBlock
from tests.e2e.helpers import REPO_ROOT, subprocess_env

VENV_BIN = Path(sys.executable).parent
#: The reader's-program contexts the ``context`` directive names.
CONTEXTS = Path(__file__).with_name("contexts")
#: A block's run, or a server's start, may take this long on a busy machine.
BLOCK_TIMEOUT_S = 120
#: The port each server takes when the documents do not say (the CLI's defaults).
DEFAULT_PORTS = {"serve": 4318, "provider": 8765}


def _addresses(server: str, port: int) -> dict[str, str]:
    """The variables a reader sets to reach ``server`` on ``port``."""
    if server == "serve":
        return {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}"}
    return {
        "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
        "OPENAI_API_KEY": "x",
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
        "ANTHROPIC_API_KEY": "x",
    }


def _wait_listening(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + BLOCK_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"server exited {process.returncode}: {log.read_text()}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"server not listening on {port}: {log.read_text()}")


class DocSession:
    """``with DocSession(workdir) as session: session.run(block)`` for each block."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        # HOME in the working folder: the SDK's spool and caches stay out of the real one.
        self.env = subprocess_env(
            PATH=f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}", HOME=str(workdir)
        )
        self.addresses: dict[str, str] = {}  # of the servers started, on their free ports
        self.doc_ports: dict[str, int] = {}  # the port the document gives each server
        self._servers: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> DocSession:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for process in self._servers:
            process.terminate()
        for process in self._servers:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def run(self, block: CodeBlock) -> str:
        """Run ``block`` as its directive says; what it printed."""
        if block.directive == "file":
            (self.workdir / block.argument).write_text(block.text, encoding="utf-8")
            return ""
        if block.directive == "server":
            for line in block.text.splitlines():
                if argv := shlex.split(line, comments=True):
                    self.start(argv)
            return ""
        if block.directive == "needs":
            for server in block.argument.split():
                if server not in self.doc_ports:
                    self.start(["ctxledger", server])
        if block.directive == "env":
            self.check_exports(block)
            return ""
        cwd = REPO_ROOT if block.directive == "in-clone" else self.workdir
        output = self._execute(block, cwd)
        if block.directive == "expect":
            assert block.argument in output, f"{block.where}: no {block.argument!r} in {output}"
        return output

    def start(self, argv: list[str]) -> None:
        assert argv[0] == "ctxledger" and argv[1] in DEFAULT_PORTS, f"not a server: {argv}"
        server = argv[1]
        self.doc_ports[server] = (
            int(argv[argv.index("--port") + 1]) if "--port" in argv else DEFAULT_PORTS[server]
        )
        port = free_port()
        log = self.workdir / f"{server}.log"
        process = subprocess.Popen(
            [*argv, "--port", str(port)],
            cwd=self.workdir,
            env=self.env,
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
        )
        self._servers.append(process)
        _wait_listening(port, process, log)
        addresses = _addresses(server, port)
        self.addresses.update(addresses)
        self.env.update(addresses)

    def check_exports(self, block: CodeBlock) -> None:
        """Each exported variable is the address of a server of this document, at the port
        the document gives it; the session keeps its own servers' addresses."""
        documented: dict[str, str] = {}
        for server, port in self.doc_ports.items():
            documented.update(_addresses(server, port))
        for line in block.text.splitlines():
            words = shlex.split(line, comments=True)
            assert not words or words[0] == "export", f"{block.where}: not an export: {line}"
            for assignment in words[1:]:
                name, _, value = assignment.partition("=")
                assert name in documented, f"{block.where}: no server of the document for {name}"
                assert value == documented[name], f"{block.where}: {name}={value}"

    def _execute(self, block: CodeBlock, cwd: Path) -> str:
        # The test reaches no network: a block that installs or clones must say skip.
        assert not re.search(r"\b(pip install|git clone)\b", block.text), (
            f"{block.where} installs or clones: mark it <!-- docs-test: skip REASON -->"
        )
        if block.lang == "python":
            script = self.workdir / f"block_{block.line}.py"
            text = block.text
            if block.directive == "context":
                context = CONTEXTS / f"{block.argument}.py"
                text = f"{context.read_text(encoding='utf-8')}\n# --- {block.where}\n{text}"
            script.write_text(text, encoding="utf-8")
            argv = [str(VENV_BIN / "python"), str(script)]
        else:
            # The exports of a bash block carry to the next, as in one terminal.
            dump = self.workdir / "env.after"
            text = f"{block.text}\nenv -0 > {shlex.quote(str(dump))}\n"
            argv = ["bash", "-e", "-o", "pipefail", "-c", text]
        done = subprocess.run(
            argv, cwd=cwd, env=self.env, capture_output=True, text=True, timeout=BLOCK_TIMEOUT_S
        )
        assert done.returncode == 0, (
            f"{block.where} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
        )
        if block.lang != "python":
            pairs = dump.read_text(encoding="utf-8").split("\0")
            self.env = dict(pair.split("=", 1) for pair in pairs if "=" in pair)
            self.env.update(self.addresses)
        return done.stdout
