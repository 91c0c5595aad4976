"""One-hop reads along ``related_to`` edges after a lexical recall (the durable-memory policy).

A query that names an index page ("release signing handbook") finds the page
lexically; the procedure the page points at shares no words with the query.
Following each hit's ``related_to`` edges once, with a bounded number of reads,
recovers it without embeddings. Never recursive, never through other edge kinds
(a ``conflicts_with`` neighbour is not a suggestion), and every target must pass
the same ``accept`` gate as the hits (active, same namespace).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

MAX_RELATED_READS = 100


def one_hop(
    hits: Sequence[str],
    related_of: Callable[[str], Iterable[str]],
    *,
    max_reads: int,
    accept: Callable[[str], bool],
    limit: int | None = None,
) -> list[str]:
    """``hits`` followed by their accepted ``related_to`` targets, in hit order then edge order.

    ``max_reads`` bounds how many targets are looked at (each costs a read of the
    target), 0 turns expansion off. Targets already present are not repeated and
    not counted. ``limit`` caps the whole list.
    """
    if isinstance(max_reads, bool) or not isinstance(max_reads, int) or not 0 <= max_reads <= MAX_RELATED_READS:
        raise ValueError(f"max_reads must be a whole number from 0 to {MAX_RELATED_READS}, not {max_reads!r}")
    out = list(hits)
    seen = set(out)
    reads = 0
    for hit in hits:
        if reads >= max_reads:
            break
        for target in related_of(hit):
            if target in seen:
                continue
            if reads >= max_reads:
                break
            reads += 1
            seen.add(target)
            if accept(target):
                out.append(target)
    return out if limit is None else out[:limit]
