"""The index is read from its files, not memory-mapped copies: columns come back in blocks, exactly as Whoosh reads them."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitmem.index import engine


@pytest.mark.parametrize("files", [1, 4096, 4097, 9000])
def test_column_values_read_in_blocks_equal_whooshs_own_reading(tmp_path: Path, files: int) -> None:
    ix = engine.create_index(str(tmp_path / "ix"))
    docs = [engine.file_document(f"d{i % 7}/n{i:05}.md", f"{i:040x}", "x" * (i % 13) + f" note {i}\n") for i in range(files)]
    with engine.writing(ix) as writer:
        engine.apply(writer, docs, "0" * 40, fresh=True)
    assert not ix.storage.supports_mmap  # each part is read where it lies, never copied whole
    with engine.searching(ix) as searcher:
        for reader, _ in searcher.reader().leaf_readers():
            for name in ("file", "sig"):
                column = reader.column_reader(name, translate=False)
                assert getattr(column, "_lengths", None) is not None, name  # the block path, not the fallback
                assert list(engine._values(column)) == list(column), (name, files)
