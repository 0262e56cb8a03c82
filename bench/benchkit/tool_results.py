"""The tool results ``sdk_overhead.py`` measures: JSON arrays of records with mixed
Chinese/English text, generated from a fixed seed to a target UTF-8 size, and variants of
one result that differ in a single field (so no cache serves a repetition)."""

from __future__ import annotations

import json
import random

SEED = 20240611

# fmt: off
_ZH_WORDS = (
    "数据", "分析", "用户", "订单", "系统", "模型", "结果", "上下文", "工具", "调用",
    "接口", "记录", "字段", "北京", "上海", "客户", "服务", "搜索", "文档", "报告",
    "价格", "库存", "日志", "错误", "请求", "响应", "版本", "配置", "缓存", "索引",
)
_EN_WORDS = (
    "invoice", "latency", "customer", "pipeline", "tokenizer", "request", "payload",
    "shipment", "warehouse", "context", "summary", "ticket", "status", "region",
    "timeout", "retry", "quota", "vector", "embedding", "record", "the", "of", "and",
)
# fmt: on
# Fullwidth comma, ideographic full stop, fullwidth semicolon, ideographic comma, ASCII.
_PUNCT = ("\uff0c", "\u3002", ", ", ". ", "\uff1b", " ", "\u3001")


def _sentence(rng: random.Random, words: int) -> str:
    parts: list[str] = []
    for _ in range(words):
        if rng.random() < 0.55:
            parts.append(rng.choice(_ZH_WORDS))
        else:
            parts.append(" " + rng.choice(_EN_WORDS) + " ")
        if rng.random() < 0.12:
            parts.append(rng.choice(_PUNCT))
    return "".join(parts).strip()


def _record(rng: random.Random, index: int) -> dict[str, object]:
    return {
        "id": f"doc-{index:06d}",
        "rev": "r000000",
        "title": _sentence(rng, rng.randint(3, 8)),
        "lang": rng.choice(("zh", "en", "zh-en")),
        "score": round(rng.random(), 4),
        "tags": [rng.choice(_EN_WORDS + _ZH_WORDS) for _ in range(rng.randint(1, 4))],
        "body": _sentence(rng, rng.randint(15, 45)),
        "url": f"https://example.com/docs/{index}?q={rng.randint(0, 99999)}",
    }


def _dump(records: list[dict[str, object]]) -> str:
    return json.dumps(records, ensure_ascii=False)


def make_records(target_bytes: int) -> list[dict[str, object]]:
    """Records whose JSON text is just over ``target_bytes`` UTF-8 bytes."""
    rng = random.Random(f"{SEED}:{target_bytes}")
    records: list[dict[str, object]] = []
    size = 2
    while size < target_bytes:
        record = _record(rng, len(records))
        records.append(record)
        size += len(json.dumps(record, ensure_ascii=False).encode("utf-8")) + 2
    return records


def variants(records: list[dict[str, object]], count: int, tag: str) -> list[str]:
    """``count`` texts of equal length that differ only in the first record's ``rev``."""
    texts: list[str] = []
    first = records[0]
    for n in range(count):
        records[0] = {**first, "rev": f"{tag}{n + 1:06d}"}
        texts.append(_dump(records))
    records[0] = first
    return texts
