"""Fields of grades.csv read back: :func:`attngrade.names.csv_cell_text` undoes only csv_cell's quote."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from attngrade.names import csv_cell, csv_cell_text, shown


#: Texts as students write them, without control characters (csv_cell shows those escaped, so a
#: leading tab keeps its quote) and not beginning with a quote of their own.
TEXTS = st.text(st.characters(blacklist_categories=("Cc", "Cs")), max_size=30).filter(lambda t: not t.startswith("'"))


@given(TEXTS)
def test_a_field_csv_cell_wrote_reads_back_as_the_text_shown(text):
    assert csv_cell_text(csv_cell(text)) == shown(text)


@given(st.text(max_size=30))
def test_only_a_quote_before_a_formula_character_is_removed(text):
    formula = text.startswith(("=", "+", "-", "@", "\t", "\r"))
    assert csv_cell_text("'" + text) == (text if formula else "'" + text)
    if not text.startswith("'"):
        assert csv_cell_text(text) == text


@pytest.mark.parametrize("bad", [None, 3, b"'=1"])
def test_a_field_that_is_not_text_is_refused_by_name(bad):
    with pytest.raises(TypeError, match="field"):
        csv_cell_text(bad)
