"""Record memory: short texts ("prefers green tea") recalled by closeness to a run's input.

A layer above the store seam and the recall engine. Each record is one file in
a ``record`` mount (or any file store), so every record change is a commit that
people can review, restore and erase like a file.

- :mod:`~gitmem.records.rules`: the pure rules (text, ids, namespaces, cursors,
  the record file).
- :mod:`~gitmem.records.store`: :class:`RecordStore`, bound to one namespace.
- :mod:`~gitmem.records.aio`: :class:`AsyncRecordStore`, its async face.
"""

from gitmem.records.aio import AsyncRecordStore
from gitmem.records.model import MemoryRecord, RecordPage, RecordStoreProtocol
from gitmem.records.rules import RECORD_CHARS, IdGenerator, encode_namespace, validate_record_text
from gitmem.records.store import RecordBackend, RecordStore

__all__ = [
    "RECORD_CHARS",
    "AsyncRecordStore",
    "IdGenerator",
    "MemoryRecord",
    "RecordBackend",
    "RecordPage",
    "RecordStore",
    "RecordStoreProtocol",
    "encode_namespace",
    "validate_record_text",
]
