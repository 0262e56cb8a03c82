"""The documentation's code blocks run as written.

Every python and bash block of README.md and docs/*.md is compiled (``bash -n`` for
shell). The documents in RUN are run block by block, in order, in real subprocesses with
the project's venv, against a real collector and a real provider stand-in on free ports
(see ``markdown_blocks.py`` for the ``<!-- docs-test: … -->`` directives, each skip with
its reason in the document). Every ``name==version`` a document pins is the version
constraints.txt installs."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest

from tests.docs.doc_session import DocSession
from tests.docs.markdown_blocks import CodeBlock, code_blocks
from tests.e2e.helpers import REPO_ROOT

DOCUMENTS = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
SHELL = ("bash", "sh")
#: The documents whose blocks are run. The others are compiled only, because their
#: blocks are fragments of the reader's own agent (instrumenting.md, provider-stand-in.md:
#: `call`, `db`, `messages` come from it), start long-running servers or deployments
#: (collector.md, deployment.md, dashboard.md, alerting.md), or run minutes-long
#: benchmarks (performance.md); semantic-conventions.md, security.md and architecture.md
#: hold no python or bash block.
RUN = ["README.md", "zero-sdk.md", "remedies.md"]


def _blocks(document: Path) -> list[CodeBlock]:
    return [b for b in code_blocks(document) if b.lang in ("python", *SHELL) or b.directive]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: path.name)
def test_every_block_compiles(document: Path) -> None:
    for block in code_blocks(document):
        if block.lang == "python":
            compile(block.text, block.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        elif block.lang in SHELL:
            check = subprocess.run(["bash", "-n"], input=block.text, capture_output=True, text=True)
            assert check.returncode == 0, f"{block.where}: {check.stderr}"


@pytest.mark.slow
@pytest.mark.parametrize("name", RUN)
def test_the_blocks_run_in_order(name: str, tmp_path: Path) -> None:
    document = REPO_ROOT / name if name == "README.md" else REPO_ROOT / "docs" / name
    blocks = [b for b in _blocks(document) if b.directive != "skip"]
    assert blocks, f"{name} has no block to run"
    with DocSession(tmp_path) as session:
        for block in blocks:
            session.run(block)


def test_each_skip_says_why() -> None:
    for document in DOCUMENTS:
        for block in code_blocks(document):
            if block.directive == "skip":
                assert len(block.argument.split()) >= 3, f"{block.where}: skip without a reason"


def _constraints() -> dict[str, str]:
    pins = {}
    for line in (REPO_ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==")
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version.strip()
    return pins


def test_pins_match_constraints() -> None:
    """A pin in a document that pip would resolve to another version than the tested one
    (or to none: a range that only pre-releases satisfy) fails here."""
    pins = _constraints()
    pattern = re.compile(r"([A-Za-z0-9][A-Za-z0-9_.-]*)==([0-9][0-9A-Za-z.+!-]*)")
    found = 0
    for document in DOCUMENTS:
        for block in code_blocks(document):
            if block.lang not in SHELL or "pip install" not in block.text:
                continue
            for name, version in pattern.findall(block.text):
                key = re.sub(r"[-_.]+", "-", name).lower()
                assert pins.get(key) == version, f"{block.where}: {name}=={version}"
                found += 1
    assert found >= 2  # zero-sdk.md pins the openai-v2 instrumentation and util-genai


def test_no_document_installs_ctxledger_from_the_registry() -> None:
    """ctxledger is not on PyPI yet: `pip install ctxledger` or `'ctxledger[server]'` fails
    for a reader (or installs someone else's package); the documents install the clone."""
    registry_install = re.compile(r"pip install (?:-\S+ )*['\"]?ctxledger\b")
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        for number, line in enumerate(text.splitlines(), 1):
            assert not registry_install.search(line), f"{document.name}:{number}: {line}"
