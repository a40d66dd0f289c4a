"""The tile schedule diagram of chapter 8 shows what the library's flash forward pass does.

``figstyle.flash_tile_schedule`` records a run of ``attnmath.flash.flash_attention_forward``;
the tests check the record against the library's own account of it,
``attnmath.flash.causal_tile_schedule``, and against the causal mask of ``attnmath.masking`` (a
tile is computed exactly when some query of it may see some key of it, and needs the mask exactly
when some may not), that ``draw_tile_schedule`` draws the record tile for tile, and, on the built
book, that the figure on the page is the library's schedule.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from attnmath.flash import causal_tile_schedule  # noqa: E402
from attnmath.masking import causal_mask  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "book"))
import figstyle  # noqa: E402  (book/figstyle.py)

ALIGNMENTS = st.sampled_from(["top_left", "bottom_right"]) | st.integers(-45, 45)
TILE_ID = re.compile(r'id="tile-(\d+)-(\d+)-(full|masked|skipped)"')


def _library_kinds(L, S, block_q, block_k, alignment="top_left") -> dict:
    """attnmath.flash.causal_tile_schedule as (query tile, key tile) -> kind."""
    kinds = causal_tile_schedule(L, S, block_q=block_q, block_k=block_k, causal_alignment=alignment)
    return {(i, j): str(kind) for (i, j), kind in np.ndenumerate(kinds)}


def _kind_from_mask(allowed: np.ndarray) -> str:
    return "skipped" if not allowed.any() else "full" if allowed.all() else "masked"


@settings(max_examples=60, deadline=None)
@given(L=st.integers(1, 40), S=st.integers(1, 40), block_q=st.integers(1, 16),
       block_k=st.integers(1, 16), alignment=ALIGNMENTS)
def test_the_record_is_the_causal_masks_tiles(L, S, block_q, block_k, alignment):
    schedule = figstyle.flash_tile_schedule(L, S, block_q, block_k, causal_alignment=alignment)
    allowed = causal_mask(L, S, alignment=alignment)
    assert schedule.shape == (-(-L // block_q), -(-S // block_k))
    for (i, j), kind in schedule.kinds.items():
        tile = allowed[i * block_q:(i + 1) * block_q, j * block_k:(j + 1) * block_k]
        assert kind == _kind_from_mask(tile), (i, j)
    assert schedule.kinds == _library_kinds(L, S, block_q, block_k, alignment)
    # query tiles outside, key tiles inside, each computed once
    assert schedule.order == sorted(t for t, kind in schedule.kinds.items() if kind != "skipped")


def test_a_square_causal_grid_computes_its_lower_triangle():
    schedule = figstyle.flash_tile_schedule(64, 64, 8, 8)
    assert len(schedule.order) == 8 * 9 // 2
    assert [t for t, k in schedule.kinds.items() if k == "masked"] == [(i, i) for i in range(8)]


@pytest.mark.parametrize("args, error", [
    ((0, 4, 2, 2), ValueError), ((4, 4, 0, 2), ValueError), ((4, -1, 2, 2), ValueError),
    ((4.0, 4, 2, 2), TypeError), ((4, 4, 2, True), TypeError),
])
def test_bad_sizes_are_refused_by_name(args, error):
    name = ("L", "S", "block_q", "block_k")[next(i for i, a in enumerate(args)
                                                 if isinstance(a, (bool, float)) or a < 1)]
    with pytest.raises(error, match=name):
        figstyle.flash_tile_schedule(*args)


def _drawn(ax) -> dict:
    """(query tile, key tile) -> kind, read back from the squares' ids."""
    drawn = {}
    for patch in ax.patches:
        i, j, kind = TILE_ID.match(f'id="{patch.get_gid()}"').groups()
        drawn[int(i), int(j)] = kind
    return drawn


@pytest.mark.parametrize("L, S, block_q, block_k, alignment", [
    (64, 64, 8, 8, "top_left"), (13, 10, 4, 3, "bottom_right"), (5, 17, 2, 3, "top_left")])
def test_the_diagram_draws_every_tile_of_the_record(L, S, block_q, block_k, alignment):
    schedule = figstyle.flash_tile_schedule(L, S, block_q, block_k, causal_alignment=alignment)
    fig, ax = plt.subplots()
    figstyle.draw_tile_schedule(ax, schedule)
    assert _drawn(ax) == schedule.kinds
    numbers = {(int(t.get_position()[1]), int(t.get_position()[0])): t.get_text() for t in ax.texts}
    assert numbers == {tile: str(n) for n, tile in enumerate(schedule.order, start=1)}
    for patch in ax.patches:
        kind = TILE_ID.match(f'id="{patch.get_gid()}"').group(3)
        assert matplotlib.colors.same_color(patch.get_facecolor(), figstyle.TILE_KINDS[kind][0])
    assert not any(line.get_visible() for line in ax.get_xgridlines() + ax.get_ygridlines())
    plt.close(fig)


@pytest.mark.slow
def test_the_chapters_figure_is_the_librarys_schedule(tmp_path_factory):
    from build import book_html  # tests/book/build.py: the book built once per run

    nb = json.loads((book_html(tmp_path_factory).parent / "jupyter_execute" / "book"
                     / "08_flash.ipynb").read_text())
    figures = [o["data"]["image/svg+xml"] for c in nb["cells"] for o in c.get("outputs", [])
               if "image/svg+xml" in o.get("data", {}) and "tile-0-0-" in "".join(o["data"]["image/svg+xml"])]
    assert len(figures) == 1, "chapter 8 shows one tile schedule"
    drawn = {(int(i), int(j)): kind for i, j, kind in TILE_ID.findall("".join(figures[0]))}
    assert drawn == _library_kinds(64, 64, 8, 8) == figstyle.flash_tile_schedule(64, 64, 8, 8).kinds
