"""Coverage-guided fuzzing of the two OTLP decoders with atheris (not part of CI).

Run from the repository root, with the ``fuzz`` extra installed::

    .venv/bin/pip install -c constraints.txt -e '.[fuzz]'
    .venv/bin/python bench/fuzz_decoders.py -max_total_time=60        # libFuzzer flags
    .venv/bin/python bench/fuzz_decoders.py -runs=100000 corpus_dir/

Each input's first byte picks the encoding (protobuf or OTLP/JSON) and small limits;
the rest is the body. A decoder may return a batch (its rejections carry a reason of the
fixed vocabulary) or raise one of its declared errors (``MalformedRequest``,
``TooManySpans``); anything else is a crash, which atheris reports with the input that
caused it. The seed inputs are valid exports of the test payloads, so mutations start
from real structure.
"""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

with atheris.instrument_imports():
    from ctxledger_collector.decoded.rejection_codes import REASONS
    from ctxledger_collector.ingest.otlp_decode import (
        JSON_TYPE,
        PROTOBUF,
        DecodeLimits,
        MalformedRequest,
        TooManySpans,
        decode_export_request,
    )

LIMITS = DecodeLimits(max_spans=64, max_attributes=32, max_value_chars=256, max_depth=4)


def one_input(data: bytes) -> None:
    if not data:
        return
    media = PROTOBUF if data[0] & 1 else JSON_TYPE
    try:
        batch = decode_export_request(data[1:], media, limits=LIMITS)
    except (MalformedRequest, TooManySpans):
        return
    unknown = {r.code for r in batch.rejected} - set(REASONS)
    if unknown:
        raise AssertionError(f"rejection codes outside the vocabulary: {unknown}")


def _seed_corpus(directory: Path) -> None:
    """Write valid exports of the test payloads as the starting corpus."""
    from tests.collector import otlp_payloads as op

    directory.mkdir(parents=True, exist_ok=True)
    trace = bytes.fromhex("5b8efff798038103d269b633813fc60c")
    spans = op.journey_spans("call_1", "req_1")
    (directory / "proto").write_bytes(b"\x01" + op.proto_body(trace, spans))
    (directory / "json").write_bytes(b"\x00" + op.json_body(trace, spans))


def main() -> None:
    corpus = [arg for arg in sys.argv[1:] if not arg.startswith("-")]
    if not corpus:
        seeds = Path(__file__).resolve().parent / ".fuzz_corpus"
        _seed_corpus(seeds)
        sys.argv.append(str(seeds))
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
