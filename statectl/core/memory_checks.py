"""The long-term memory store in `size` and `doctor`: its bytes apart from the checkpoints', and
what is wrong with it (expired items never swept, vectors whose item is gone, an index whose
dimensions disagree, values that do not decode)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from statectl.core.findings import ERROR, WARNING, Finding
from statectl.sources.memory.base import MemorySource, NamespaceInfo, ns_text

SHOWN = 20
"""Items named in a finding (the count says how many in all)."""


def memory_size(memory: MemorySource) -> dict[str, Any]:
    """The store's counts, from the index (no value decoded): namespaces, items, value bytes,
    items with a TTL, the vector index's rows and bytes, and the files' bytes where it has files."""
    import heapq

    totals = {"namespaces": 0, "items": 0, "value_bytes": 0, "expiring": 0}

    def counted() -> Iterator[NamespaceInfo]:  # (one namespace at a time: flat however many)
        for info in memory.each_namespace():
            totals["namespaces"] += 1
            totals["items"] += info.items
            totals["value_bytes"] += info.bytes
            totals["expiring"] += info.expiring
            yield info

    largest = heapq.nsmallest(10, counted(), key=lambda i: (-i.bytes, i.namespace))
    vectors = memory.vectors()
    out: dict[str, Any] = {
        **totals,
        "largest": [{"namespace": list(i.namespace), "items": i.items, "bytes": i.bytes} for i in largest],
    }
    if vectors is not None:
        out["vectors"] = {"count": vectors.count, "bytes": vectors.bytes, "dims": list(vectors.dims)}
    if files := memory.table_bytes():
        out["files"] = files
    return out


def memory_findings(memory: MemorySource, now: str) -> list[Finding]:
    """What is wrong with the store (`now`: ISO 8601 UTC, for expiry)."""
    findings: list[Finding] = []
    expired: list[str] = []
    broken: list[str] = []
    count_expired = count_broken = 0
    for item in memory.scan():
        where = f"{ns_text(item.namespace)} {item.key}"
        if item.expires_at and item.expires_at < now:
            count_expired += 1
            if len(expired) < SHOWN:
                expired.append(where)
        if item.error is not None:
            count_broken += 1
            if len(broken) < SHOWN:
                broken.append(f"{where}: {item.error}")
    if count_expired:
        findings.append(
            Finding(
                WARNING,
                "memory",
                "expired-unswept",
                f"{count_expired:,} store item(s) expired but were never swept: search and get still "
                f"return them ({', '.join(expired)})",
                "start the store's TTL sweeper (ttl={'sweep_interval_minutes': N}) or call store.sweep_ttl()",
                count=count_expired,
            )
        )
    if count_broken:
        findings.append(
            Finding(
                ERROR,
                "memory",
                "value-undecodable",
                f"{count_broken:,} store item(s) hold a value that does not decode ({'; '.join(broken)})",
                "LangGraph's get/search fail on them: put the value again or delete the item",
                count=count_broken,
            )
        )
    vectors = memory.vectors()
    if vectors is not None and vectors.orphans:
        named = ", ".join(f"{ns_text(ns)} {key}" for ns, key in vectors.orphans[:SHOWN])
        findings.append(
            Finding(
                WARNING,
                "memory",
                "vector-orphaned",
                f"{len(vectors.orphans):,} indexed item(s) have vectors but no item ({named})",
                "the rows were deleted without the store (no foreign keys enforced): delete their store_vectors rows",
                count=len(vectors.orphans),
            )
        )
    if vectors is not None and len(vectors.dims) > 1:
        findings.append(
            Finding(
                ERROR,
                "memory",
                "vector-dims",
                f"the vector index holds vectors of {len(vectors.dims)} sizes ({', '.join(map(str, vectors.dims))} "
                "dimensions): the embedding model changed without a re-index",
                "re-embed the items with one model (put them again), or drop the index and set it up again",
            )
        )
    return findings
