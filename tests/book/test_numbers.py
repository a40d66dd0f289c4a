"""The chapters' numbers come from their code: every number in a chapter's prose, captions, alt
text, exercises and solutions is glued from the executed code, cited, or listed with a reason in
book/numbers_allowed.yml (book/_ext/attnmath_numbers.py). No build is needed: the check reads
the MyST sources, and the book build runs the same check on every chapter it reads.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import attnmath_numbers as numbers  # noqa: E402  (book/_ext/attnmath_numbers.py)

CHAPTERS = sorted(p for p in (ROOT / "book").glob("*.md")
                  if numbers.CHAPTER.match(p.relative_to(ROOT).as_posix()))


def found(source: str) -> list[str]:
    """The unsourced numbers of a MyST source, as strings."""
    return [hit.number for hit in numbers.source_numbers(source, "book/99_test.md")]


def test_the_check_reads_every_chapter():
    assert len(CHAPTERS) >= 14
    assert [p.name[:2] for p in CHAPTERS] == [f"{n:02d}" for n in range(1, len(CHAPTERS) + 1)]


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_every_number_of_a_chapter_is_glued_cited_or_allowed(chapter):
    hits = numbers.unsourced_numbers(chapter, ROOT)
    assert not hits, "glue these from the chapter's code, cite them, or list them with a " \
                     "reason in book/numbers_allowed.yml:\n" + "\n".join(map(str, hits))


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_every_pasted_number_is_glued_by_its_chapter(chapter):
    assert not numbers.unglued_keys(chapter.read_text())


def test_every_allowance_matches_a_number_and_gives_a_reason():
    allowed = numbers.load_allowed()
    assert allowed and all(str(entry["reason"]).strip() for entry in allowed)
    assert not numbers.stale_allowances(CHAPTERS, ROOT, allowed)


def test_an_allowance_without_a_reason_is_an_error(tmp_path):
    path = tmp_path / "allowed.yml"
    path.write_text('- {file: book/01_softmax.md, number: "5", context: "x", reason: " "}\n')
    with pytest.raises(ValueError, match="reason"):
        numbers.load_allowed(path)


# The checker on made-up sources: what counts as a number of the text, and what does not.

DECIMALS = st.builds(lambda a, b: f"{a}.{b}", st.integers(0, 9999), st.integers(0, 999))
LARGE = st.integers(13, 10**7).filter(lambda n: not 1950 <= n <= 2029).map(str)


@given(value=st.one_of(DECIMALS, LARGE))
def test_a_typed_number_in_prose_caption_alt_or_solution_is_found(value):
    sources = [
        f"The median ratio is {value} here.\n",
        f"```{{code-cell}} ipython3\n:mystnb:\n:  figure:\n:    caption: |\n"
        f":      The steps are {value} times finer.\n:    name: fig-x\n"
        f":  image:\n:    alt: A bar at {value}.\nx = 1\n```\n",
        f"```{{figure}} x.png\n:alt: A curve near {value}.\n\nCaption with {value} in it.\n```\n",
        f"```{{solution}} ex-x\n:class: dropdown\n\nThe answer is {value}.\n```\n",
        f":::{{admonition}} Note\n:class: warning\n\nA count of {value}.\n:::\n",
    ]
    for source in sources:
        assert value in found(source), source


@given(value=st.one_of(DECIMALS, LARGE))
def test_a_glued_cited_or_coded_number_is_not_found(value):
    sources = [
        f"The ratio is {{glue:text}}`ratio:.1f` and `x = {value}` in code.\n",
        f"A GPU has {value} GB/s {{cite:p}}`nvidia2023h100`.\n",
        f"```{{code-cell}} ipython3\nx = {value}\n```\n",
        f"```python\nx = {value}\n```\n",
        f"% a comment with {value}\n",
        f"A source says \"it takes {value} steps\", which is wrong.\n",
    ]
    for source in sources:
        assert found(source) == [], source


def test_a_citation_sources_the_numbers_of_its_own_sentence_only():
    assert found("It has 132 units {cite:p}`x`. The rest is 77 units.\n") == ["77"]


@given(value=DECIMALS)
def test_decimals_in_maths_are_found_but_integers_are_definitions(value):
    assert found(f"The scale is $1/\\sqrt{{D}}$ and $2^{{16}}$, and $x = {value}$.\n") == [value]
    assert found(f"```{{math}}\n\\sqrt{{1/t}} = {value} \\ln s + 1\n```\n") == [value]
    assert found(f"$$\ny = {value}\\,x\n$$\n") == [value]


@pytest.mark.parametrize("text", [
    "Bahdanau et al. (2015) and Vaswani et al. 2017 introduced it.",
    "See Chapter 6, Section 4.1, Eq. 3.2, Theorem 2 and Figures 3 and 4.",
    "A tensor of shape (2, 3, 8) in tiles of 64 × 64.",
    "Two heads, 3 experts and 8 layers are used as words.",
    "fp16, bf16, H100, GPT-3, Llama-2-7B, top-2 and 8-bit are names.",
    "1. The first item of an ordered list.",
    "Python 3.10 and version 1.4 are versions.",
])
def test_years_references_shapes_names_and_small_words_are_not_found(text):
    assert found(text + "\n") == []


@pytest.mark.parametrize("text, expected", [
    ("the gap has mean 1/p = 4 tokens", ["4"]),
    ("the outliers are 25× the other channels", ["25"]),
    ("the steps are 3 times finer", ["3"]),
    ("it saves 7 % of the memory", ["7"]),
])
def test_a_small_integer_that_is_a_result_is_found(text, expected):
    assert found(text + "\n") == expected


def test_a_pasted_key_without_its_glue_call_is_reported():
    source = ("```{code-cell} ipython3\nglue('a', 1.0, display=False)\n"
              "for n in (1, 2):\n    glue(f'b_{n}', n, display=False)\n```\n"
              "{glue:text}`a:.1f`, {glue:text}`b_1`, {glue:text}`c:.2f` and {glue}`d`.\n")
    assert numbers.unglued_keys(source) == {"c", "d"}


# Values that a cell prints, repeated by hand in maths or as a small integer of prose.

def printed_hits(source: str, printed: list[str], allowed=()) -> list[str]:
    return [hit.number for hit in numbers.repeated_printed_values(source, "book/99_test.md", printed,
                                                                   list(allowed))]


def test_a_printed_value_repeated_in_maths_or_as_a_small_integer_is_found():
    printed = ["first negative value at k = 725", "4 heads with W_O: rank 8 (bound 8)"]
    assert printed_hits("It is negative first at $k = 725$.\n", printed) == ["725"]
    assert printed_hits("Four heads reach rank 8 here.\n", printed) == ["8"]
    assert printed_hits("It is negative first at $k =$ {glue:text}`first_k`.\n", printed) == []
    assert printed_hits("The bound is $\\min(L, C)$ and $2^{16}$, LLaMA 2 and layer 2.\n", printed) == []


def test_a_value_the_code_sets_or_the_list_allows_is_not_found():
    code = "```{code-cell} ipython3\nC, H = 8, 4\nfor L, S in [(12, 3), (12, 2)]:\n    pass\n```\n"
    printed = ["L = 12, S = 3: C = 8, rank 8"]
    assert printed_hits(code + "With $L = 12$, $S = 3$ and $C = 8$ four heads reach rank 8.\n", printed) == ["8"]
    allowed = [{"file": "book/99_test.md", "number": "8", "context": "reach rank 8", "printed": True,
                "reason": "x"}]
    assert printed_hits(code + "With $C = 8$ four heads reach rank 8.\n", printed, allowed) == []
    assert numbers.stale_printed_allowances(code + "Nothing.\n", "book/99_test.md", printed, allowed) == allowed


def test_what_a_cell_printed_is_read_from_the_executed_doctree():
    from docutils import nodes

    output = nodes.container(classes=["cell_output"])
    output += nodes.literal_block("", "rank 8\nk = 725")
    figure = nodes.figure()
    figure += nodes.caption("", "a caption with rank 9")
    output += figure
    doc = nodes.document(None, None)
    doc += output
    assert numbers.printed_output(doc) == ["rank 8", "k = 725"]
