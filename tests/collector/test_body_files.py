"""Request bodies in files are read only inside the directories the operator named: never
through ``..``, never through a link that leads out, never a file too large or not
text; each refusal says why and which setting would let it be read."""

from __future__ import annotations

import os
from pathlib import Path

from ctxledger_collector.ingest.body_files import BodyFiles

BODY = '{"model": "m", "messages": [{"role": "user", "content": "时间"}]}'


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    allowed = tmp_path / "bodies"
    allowed.mkdir()
    (allowed / "a.request.json").write_text(BODY, encoding="utf-8")
    secret = tmp_path / "secret.json"
    secret.write_text('{"key": "do not read"}')
    return allowed, secret


def test_a_file_inside_a_named_directory_is_read(tmp_path: Path) -> None:
    allowed, _ = _tree(tmp_path)
    found = BodyFiles((str(allowed),)).read(str(allowed / "a.request.json"))
    assert found.text == BODY and found.unread is None


def test_nothing_is_read_without_a_named_directory(tmp_path: Path) -> None:
    allowed, _ = _tree(tmp_path)
    found = BodyFiles().read(str(allowed / "a.request.json"))
    assert found.text is None and found.unread is not None
    assert "--read-bodies-from" in found.unread and "CTXLEDGER_READ_BODIES_FROM" in found.unread


def test_no_path_leads_out_of_the_named_directories(tmp_path: Path) -> None:
    allowed, secret = _tree(tmp_path)
    files = BodyFiles((str(allowed),))
    os.symlink(secret, allowed / "link.request.json")
    os.symlink(tmp_path, allowed / "up")
    refs = [
        str(secret),
        str(allowed / ".." / "secret.json"),
        str(allowed / "link.request.json"),
        str(allowed / "up" / "secret.json"),
        "bodies/a.request.json",
    ]
    for ref in refs:
        found = files.read(ref)
        assert found.text is None, ref
        assert found.unread is not None and ref in found.unread
    # A link that stays inside is followed.
    os.symlink(allowed / "a.request.json", allowed / "inside.request.json")
    assert files.read(str(allowed / "inside.request.json")).text == BODY


def test_large_missing_odd_and_binary_files_are_not_read(tmp_path: Path) -> None:
    allowed, _ = _tree(tmp_path)
    (allowed / "big.json").write_text("x" * 101)
    (allowed / "binary.json").write_bytes(b"\xff\xfe\x00")
    (allowed / "dir.json").mkdir()
    files = BodyFiles((str(allowed),), max_bytes=100)
    reasons = {
        name: files.read(str(allowed / name)).unread
        for name in ("big.json", "binary.json", "dir.json", "gone.json")
    }
    assert "over 100" in (reasons["big.json"] or "")
    assert "not UTF-8" in (reasons["binary.json"] or "")
    assert reasons["dir.json"] and reasons["gone.json"]
