"""A count a caller gives (a search's or a log's limit, a records page, a session's n) outside its range is
refused with the spec code of its call, whatever the value: the refusal names the value, cut short, and a
number too long to print is no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitmem import GitFileStore, MemoryStoreError
from gitmem.errors import whole_number

_VALUES = [10**5000, -(10**5000), "x" * 100_000, [0] * 100_000, 0, True, 2.0]


@pytest.mark.parametrize("value", _VALUES, ids=["huge", "huge negative", "long text", "long list", "0", "True", "2.0"])
def test_a_count_out_of_range_is_refused_with_its_code_and_a_short_message(value: object) -> None:
    with pytest.raises(MemoryStoreError) as err:
        whole_number("limit", value, 100, "invalid_pattern")
    assert err.value.code == "invalid_pattern"
    assert len(str(err.value)) < 300


def test_a_search_or_log_limit_too_long_to_print_is_invalid_pattern(tmp_path: Path) -> None:
    store = GitFileStore.init(tmp_path / "m.git").sync
    for call in (lambda: store.search("a", limit=10**5000), lambda: store.log(limit=10**5000)):
        with pytest.raises(MemoryStoreError) as err:
            call()
        assert err.value.code == "invalid_pattern"
