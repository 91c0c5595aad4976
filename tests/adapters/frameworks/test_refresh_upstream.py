"""The refresh script's rules, offline: a rule that no longer matches stops it, and a left-out test goes whole."""

from __future__ import annotations

import pytest

from tests.adapters.frameworks.refresh_upstream import COPIES, RELEASES, Copy, RuleMismatch, _drop, transform

SOURCE = """import pytest


@pytest.mark.parametrize(
    "kind", ["a", "b"]
)
def test_gone(kind: str) -> None:
    assert kind


@pytest.mark.asyncio
async def test_kept() -> None:
    assert True


class TestThing:
    def test_method_gone(
        self,
    ) -> None:
        pass

    def test_method_kept(self) -> None:
        pass
"""


def test_a_left_out_test_goes_with_its_decorators_and_nothing_else() -> None:
    text = _drop(SOURCE, "test_gone", method=False)
    assert "test_gone" not in text and '"kind"' not in text and "parametrize" not in text
    assert "@pytest.mark.asyncio\nasync def test_kept" in text
    text = _drop(text, "test_method_gone", method=True)
    assert "test_method_gone" not in text and "def test_method_kept(self)" in text and "class TestThing:" in text
    compile(text, "copy", "exec")


def test_a_rule_that_no_longer_matches_stops_the_refresh() -> None:
    with pytest.raises(RuleMismatch, match="gone"):
        transform(Copy("openai-agents", "x.py", "x.py", replace=(("not in the file", ""),)), SOURCE)
    with pytest.raises(RuleMismatch, match="no test"):
        transform(Copy("openai-agents", "x.py", "x.py", drop=("test_missing",)), SOURCE)
    with pytest.raises(RuleMismatch, match="matches nothing"):
        transform(Copy("openai-agents", "x.py", "x.py", regex=((r"zzz\(", "y("),)), SOURCE)


def test_every_copy_names_a_pinned_release_in_its_header() -> None:
    for copy in COPIES:
        assert copy.dist in RELEASES
        header = transform(Copy(copy.dist, copy.source, copy.target), "")
        assert f"{copy.dist} {RELEASES[copy.dist]}" in header and "LICENSE-" in header


def test_a_kept_selection_is_the_prelude_and_those_tests_whole() -> None:
    text = transform(Copy("langgraph", "x.py", "x.py", keep=("test_gone",), prelude="import os"), SOURCE)
    assert "import os\n" in text and "import pytest" not in text
    assert '@pytest.mark.parametrize(\n    "kind", ["a", "b"]\n)\ndef test_gone(kind: str)' in text
    assert "test_kept" not in text and "TestThing" not in text
    with pytest.raises(RuleMismatch, match="no test"):
        transform(Copy("langgraph", "x.py", "x.py", keep=("test_missing",)), SOURCE)
