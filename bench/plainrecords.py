"""The baseline for record memory: one JSON file per record in a plain directory.

The simplest record store that keeps record memory's promises on one machine:
``<root>/<namespace>/<id>.json`` holding ``{"id", "text", "created", "updated"}``;
every change takes an exclusive ``flock`` on ``<root>/write.lock``, writes a temp
file and ``os.replace``s it over the record, so readers never see half a file.
Text goes through the same rule as gitmem's (:func:`validate_record_text`), and
ids come from the same generator, so the benchmark compares storage, not rules.
It keeps no history: that is what git adds.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

from gitmem.errors import MemoryStoreError
from gitmem.records.rules import IdGenerator, encode_namespace, format_time, validate_record_text


class PlainRecordStore:
    def __init__(self, root: str, namespace: str) -> None:
        self.root = os.path.abspath(root)
        self.folder = os.path.join(self.root, encode_namespace(namespace))
        self.tmp = os.path.join(self.root, "tmp")
        os.makedirs(self.folder, exist_ok=True)
        os.makedirs(self.tmp, exist_ok=True)
        self.ids = IdGenerator()
        self._lock_path = os.path.join(self.root, "write.lock")

    @contextmanager
    def _locked(self) -> Iterator[None]:
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _put(self, record: dict[str, str]) -> None:
        tmp = os.path.join(self.tmp, f"{record['id']}.{os.getpid()}.tmp")
        with open(tmp, "w", encoding="utf-8") as out:
            json.dump(record, out, ensure_ascii=False)
        os.replace(tmp, os.path.join(self.folder, f"{record['id']}.json"))

    def add(self, text: str) -> dict[str, str]:
        text = validate_record_text(text)
        now = format_time(datetime.now(UTC))
        record = {"id": self.ids.next(), "text": text, "created": now, "updated": now}
        with self._locked():
            self._put(record)
        return record

    def update(self, record_id: str, text: str) -> dict[str, str]:
        text = validate_record_text(text)
        path = os.path.join(self.folder, f"{record_id}.json")
        with self._locked():
            try:
                with open(path, encoding="utf-8") as f:
                    record: dict[str, str] = json.load(f)
            except FileNotFoundError:
                raise MemoryStoreError("record_not_found", record_id) from None
            record = {**record, "text": text, "updated": format_time(datetime.now(UTC))}
            self._put(record)
        return record

    def texts(self) -> Iterator[tuple[str, str]]:
        for name in os.listdir(self.folder):
            with open(os.path.join(self.folder, name), encoding="utf-8") as f:
                record = json.load(f)
            yield record["id"], record["text"]
