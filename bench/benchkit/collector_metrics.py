"""Reading the collector's ``/metrics`` from the outside."""

from __future__ import annotations

import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def scrape(base_url: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    with urllib.request.urlopen(f"{base_url}/metrics", timeout=30) as answer:
        text = answer.read().decode()
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def total(base_url: str, name: str) -> float:
    """The sum of every sample of ``name`` (all label values)."""
    return sum(value for (sample, _), value in scrape(base_url).items() if sample == name)


def by_label(base_url: str, name: str, label: str) -> dict[str, float]:
    found: dict[str, float] = {}
    for (sample, labels), value in scrape(base_url).items():
        if sample == name:
            key = dict(labels).get(label, "")
            found[key] = found.get(key, 0.0) + value
    return found


def wait_until_idle(base_url: str, timeout_s: float = 600.0) -> float:
    """Wait until no export request is in flight (requests whose client gave up are
    still being stored); returns the seconds waited."""
    started = time.monotonic()
    while total(base_url, "ctxledger_ingest_in_flight_requests") > 0:
        if time.monotonic() - started > timeout_s:
            raise RuntimeError(f"the collector was still busy after {timeout_s:.0f} s")
        time.sleep(0.2)
    return time.monotonic() - started
