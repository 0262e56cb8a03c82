"""The documentation's code blocks run as written.

Every python and shell block of README.md and docs/*.md is compiled (``bash -n`` for
shell), then run: document by document, block by block, in order, in real subprocesses
with the project's venv, against a real collector and a real provider stand-in on free
ports (see ``markdown_blocks.py`` for the ``<!-- docs-test: … -->`` directives). A block
that cannot run here says why in the document (``skip REASON``), and the test reports it
(a skipped test per block, with the reason). Every ``name==version`` a document pins is
the version constraints.txt installs."""

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


def _blocks(document: Path) -> list[CodeBlock]:
    return [b for b in code_blocks(document) if b.lang in ("python", *SHELL) or b.directive]


#: The documents with a block to run (the others hold no python or shell block).
RUN = [d for d in DOCUMENTS if any(b.directive != "skip" for b in _blocks(d))]
SKIPPED = [b for d in DOCUMENTS for b in _blocks(d) if b.directive == "skip"]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: path.name)
def test_every_block_compiles(document: Path) -> None:
    for block in code_blocks(document):
        if block.lang == "python":
            compile(block.text, block.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        elif block.lang in SHELL:
            check = subprocess.run(["bash", "-n"], input=block.text, capture_output=True, text=True)
            assert check.returncode == 0, f"{block.where}: {check.stderr}"


@pytest.mark.slow
@pytest.mark.parametrize("document", RUN, ids=lambda path: path.name)
def test_the_blocks_run_in_order(document: Path, tmp_path: Path) -> None:
    blocks = [b for b in _blocks(document) if b.directive != "skip"]
    with DocSession(tmp_path) as session:
        for block in blocks:
            session.run(block)


@pytest.mark.parametrize("block", SKIPPED, ids=lambda block: block.where)
def test_a_block_that_cannot_run_here_is_reported(block: CodeBlock) -> None:
    pytest.skip(f"{block.where} not run: {block.argument}")


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
