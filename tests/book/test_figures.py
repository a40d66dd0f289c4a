"""Figures that read: legends off the data and off the plot's width, type of at least 10 pt at
the size the page shows, tick labels apart; and a phone's drawing of each (``narrow_variant``)
that reads in a phone's column: panels one under another, type of at least 12 pt (the phone's
16 px captions), legends off the data, tick labels apart.

When the book is built, book/figstyle.py attaches to every figure a chapter shows a report of
how it reads (``figure_report``, in the metadata of its SVG output, which the pages do not show).
The slow tests read those reports from the executed chapters of the built book; the others
check ``figure_report`` itself on figures made here.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from build import book_html, toc_files  # noqa: E402  (tests/book/build.py)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "book"))
import figstyle  # noqa: E402  (book/figstyle.py)

CHAPTERS = [d for d in toc_files() if re.match(r"book/\d\d_", d)]


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_a_legend_on_a_line_is_found_and_one_beside_the_plot_is_not():
    figstyle.use_book_style()
    fig, (left, right) = plt.subplots(1, 2)
    x = np.linspace(0, 1, 50)
    for ax in (left, right):
        ax.plot(x, x, label="rising")
        ax.plot(x, 1 - x, label="falling")
    left.legend(loc="upper left")
    right.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0))
    on, beside = figstyle.figure_report(fig)["legends"]
    assert on["inside_axes"] and on["covers"] == ["line falling"]
    assert not beside["inside_axes"] and beside["covers"] == []


@pytest.mark.parametrize("layout", [None, "tight", "constrained"])
def test_place_legends_moves_a_covering_legend_off_the_data_and_keeps_the_width(layout):
    figstyle.use_book_style()
    fig, axes = plt.subplots(1, 2, figsize=(8, 3), layout=layout)
    x = np.linspace(0, 1, 200)
    for ax in axes:
        for shift in np.linspace(0, 1, 9):  # lines everywhere: no free place inside the axes
            ax.plot(x, (x + shift) % 1, ".", ms=2, label=f"{shift:.2f}" if shift < 0.3 else None)
        ax.legend(loc="center")
    width = fig.get_figwidth()
    report = figstyle.figure_report(figstyle.place_legends(fig))
    assert all(not legend["covers"] and not legend["inside_axes"] for legend in report["legends"])
    assert fig.get_figwidth() == width


def _crowded(ax, labels):
    """Lines everywhere in ``ax``: no place inside is free for its legend."""
    x = np.linspace(0, 1, 200)
    for n, shift in enumerate(np.linspace(0, 1, 9)):
        ax.plot(x, (x + shift) % 1, ".", ms=2, label=labels[n] if n < len(labels) else None)
    ax.legend(loc="center", title="curves")


@pytest.mark.parametrize("layout", [None, "tight", "constrained"])
@pytest.mark.parametrize("ncols", [1, 2, 3])
def test_a_wide_legend_goes_under_the_axes_and_leaves_them_their_size(layout, ncols):
    figstyle.use_book_style()
    fig, axes = plt.subplots(1, ncols, figsize=(8, 3.5), layout=layout, squeeze=False)
    for ax in axes[0]:
        _crowded(ax, ["first curve", "second curve", "third curve"])
    fig.canvas.draw()
    sizes = [(ax.bbox.width, ax.bbox.height) for ax in axes[0]]
    report = figstyle.figure_report(figstyle.place_legends(fig))
    renderer = fig.canvas.get_renderer()
    assert fig.get_figwidth() == 8 and fig.get_figheight() > 3.5  # grown for the legends
    for ax, (width, height), legend in zip(axes[0], sizes, report["legends"]):
        box, label = ax.get_legend().get_window_extent(renderer), ax.xaxis.get_tightbbox(renderer)
        assert not legend["covers"] and legend["beside_share"] == 0.0
        assert box.y1 <= label.y0 and box.width <= ax.bbox.width  # under the labels, as wide at most
        assert ax.bbox.width >= 0.9 * width and ax.bbox.height >= 0.9 * height  # the plot's size
        assert fig.bbox.contains(box.x0, box.y0) and fig.bbox.contains(box.x1, box.y1)
        shown = ax.get_legend()  # laid out again, with its title and every entry
        assert shown.get_title().get_text() == "curves"
        assert [t.get_text() for t in shown.texts] == ["first curve", "second curve", "third curve"]


def test_a_narrow_legend_beside_the_axes_takes_at_most_a_quarter_of_their_width():
    figstyle.use_book_style()
    fig, ax = plt.subplots(figsize=(8, 3))
    _crowded(ax, ["a", "b"])
    legend = figstyle.figure_report(figstyle.place_legends(fig))["legends"][0]
    assert not legend["inside_axes"] and not legend["covers"]
    assert 0 < legend["beside_share"] <= figstyle.MAX_BESIDE_SHARE


@pytest.mark.parametrize("inches,overlap", [(0.5, True), (4.0, False)])
def test_tick_labels_that_run_into_each_other_are_reported(inches, overlap):
    fig = plt.figure(figsize=(6, 3))
    ax = fig.add_axes((0.1, 0.2, inches / 6, 0.7), title="narrow")
    ax.plot([1, 8], [3, 7])
    ax.set_xticks([2.5, 5.0, 7.5])
    assert figstyle.figure_report(fig)["overlapping_ticks"] == (["narrow"] if overlap else [])


def test_data_clipped_by_the_axes_limits_is_not_covered():
    fig, ax = plt.subplots()
    ax.plot([0, 10], [0.5, 0.5], label="long")  # drawn only up to x = 1
    ax.set(xlim=(0, 1), ylim=(0, 1))
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5))
    assert figstyle.figure_report(fig)["legends"][0]["covers"] == []


def test_a_segment_under_a_legend_counts_even_without_a_point_there():
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0.95, 0.95], label="flat")  # its two points lie left and right of the legend
    ax.set(xlim=(0, 1), ylim=(0, 1))
    ax.legend(loc="upper center")
    assert figstyle.figure_report(fig)["legends"][0]["covers"] == ["line flat"]


def test_a_legend_over_a_heatmap_covers_it():
    fig, ax = plt.subplots(figsize=(8, 3))
    ax.imshow(np.eye(4))
    ax.plot([0, 3], [0, 3], label="diagonal")
    ax.legend()
    report = figstyle.figure_report(fig)
    assert any(c.startswith("AxesImage") for c in report["legends"][0]["covers"])


@pytest.mark.parametrize("width,shrinks", [(4, False), (8, True), (12, True)])
def test_type_is_measured_at_the_size_the_column_shows(width, shrinks):
    fig, ax = plt.subplots(figsize=(width, 3))
    ax.plot([0, 1], [0, 1], label="line")
    ax.legend(fontsize=9, loc="lower right")
    ax.tick_params(labelsize=20)
    ax.set_xlabel("x", fontsize=20)
    ax.set_ylabel("y", fontsize=20)
    smallest = figstyle.figure_report(fig)["smallest_type_pt"]
    if shrinks:  # what is drawn (at most the figure and its pad) is shown in COLUMN_INCHES
        assert 9 * figstyle.COLUMN_INCHES / (width + 0.5) < smallest < 9
    else:
        assert smallest == 9


def test_the_phone_drawing_stacks_the_panels_in_the_phone_column():
    figstyle.use_book_style()
    fig, axes = plt.subplots(1, 3, figsize=(8, 3), sharey=True)
    x = np.linspace(0, 1, 50)
    for n, ax in enumerate(axes):
        ax.plot(x, x ** (n + 1), label=f"power {n + 1} of a longer label")
        ax.set(title=f"panel {n}", xlabel="the input x on the unit interval")
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))  # beside: no room on a phone
    axes[0].set_ylabel("output")
    ax.tick_params(labelsize=8)
    fig.colorbar(axes[0].imshow(np.eye(3), extent=(0, 1, 0, 1), aspect="auto"), ax=axes[0])
    narrow = figstyle.narrow_variant(fig)
    narrow.canvas.draw()
    panels = [a for a in narrow.axes if not hasattr(a, "_colorbar")]
    boxes = [a.get_position() for a in panels]
    assert [a.get_title() for a in panels] == ["left: panel 0", "middle: panel 1", "right: panel 2"]
    assert all(b.y0 > c.y1 for b, c in zip(boxes, boxes[1:])), "the panels are not one under another"
    assert all(a.yaxis.get_tick_params()["labelleft"] for a in panels), "a shared axis hides its labels"
    report = figstyle.figure_report(narrow, figstyle.PHONE_COLUMN_INCHES)
    assert report["smallest_type_pt"] >= figstyle.PHONE_TYPE_PT
    assert not report["overlapping_ticks"]
    assert all(not legend["covers"] and legend["beside_share"] <= figstyle.MAX_BESIDE_SHARE
               for legend in report["legends"])
    shown = narrow.get_tightbbox().width + 2 * plt.rcParams["savefig.pad_inches"]
    assert shown <= figstyle.PHONE_COLUMN_INCHES + 0.01
    # the figure the chapter drew is as it was
    assert fig.get_figwidth() == 8 and [a.get_title() for a in fig.axes[:3]] == ["panel 0", "panel 1", "panel 2"]
    assert all(a.get_legend()._bbox_to_anchor is not None for a in axes)
    assert not axes[1].yaxis.get_tick_params()["labelleft"]


def test_a_figure_as_narrow_as_a_phone_has_no_phone_drawing():
    fig, ax = plt.subplots(figsize=(3, 2))
    assert figstyle.narrow_variant(fig) is None


def test_long_labels_are_broken_outside_their_formulas():
    fig, ax = plt.subplots(figsize=(2, 2), dpi=96)
    ax.set_xlabel("a label far longer than the axes with $x + y$ in it and more words")
    fig.canvas.draw()
    figstyle._wrap(ax.xaxis.label, ax.bbox.width, fig.canvas.get_renderer())
    lines = ax.xaxis.label.get_text().split("\n")
    assert len(lines) >= 2 and all("$x + y$" in line or "$" not in line for line in lines)
    assert " ".join(lines) == "a label far longer than the axes with $x + y$ in it and more words"


def test_a_table_cell_of_running_text_is_marked_to_wrap_on_a_phone():
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "book" / "_ext"))
    from attnmath_phone import PROSE_CELL_CHARS, mark_prose_cells

    math = '<mjx-container><mjx-assistive-mml>' + "x" * 80 + '</mjx-assistive-mml></mjx-container>'
    long, short = "word " * (PROSE_CELL_CHARS // 4), "a few words"
    body = (f'<tr><td class="text-right"><p>{long}</p></td><td>{short}{math}</td>'
            f'<th class="head">{long}</th></tr>')
    marked = mark_prose_cells(body)
    assert marked.count("attnmath-prose") == 2
    assert '<td class="attnmath-prose text-right">' in marked and '<td>a few words' in marked
    assert '<th class="attnmath-prose head">' in marked


def test_power_of_two_axis_reads_as_the_numbers():
    fig, ax = plt.subplots()
    ax.plot([64, 128, 256, 512, 1024], [1, 2, 3, 4, 5])
    figstyle.power_of_two_axis(ax, "x")
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_xticklabels() if 64 <= t.get_position()[0] <= 1024]
    assert labels == ["64", "128", "256", "512", "1024"]


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, list[dict]]:
    """Every figure report of every executed chapter of the built book, by chapter."""
    executed = book_html(tmp_path_factory).parent / "jupyter_execute"
    found = {}
    for doc in CHAPTERS:
        nb = json.loads((executed / f"{doc}.ipynb").read_text())
        outputs = [o for cell in nb["cells"] if cell["cell_type"] == "code" for o in cell.get("outputs", [])]
        found[doc] = [o.get("metadata", {}).get("image/svg+xml", {}).get("attnmath_figure")
                      for o in outputs if "image/svg+xml" in o.get("data", {})]
    return found


@pytest.mark.slow
@pytest.mark.parametrize("doc", CHAPTERS)
def test_every_figure_keeps_its_legends_off_the_data(reports, doc):
    under_ci = os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}
    if reports[doc] and all(r is None for r in reports[doc]) and not under_ci:
        pytest.skip(f"{doc} was executed before figures carried reports: its outputs come from "
                    "an old execution cache (delete _build/.jupyter_cache to execute it again)")
    assert all(r is not None for r in reports[doc]), f"{doc}: a figure without its report"
    covering = [(n + 1, legend["axes"], legend["covers"]) for n, r in enumerate(reports[doc])
                for legend in r["legends"] if legend["covers"]]
    assert not covering, f"{doc}: legends on top of data (figure, axes, data): {covering}"


@pytest.mark.slow
@pytest.mark.parametrize("doc", CHAPTERS)
def test_every_figure_leaves_its_plots_their_width_and_ticks_apart(reports, doc):
    shown = [(n + 1, r) for n, r in enumerate(reports[doc]) if r is not None]
    wide = [(n, legend["axes"], legend["beside_share"]) for n, r in shown for legend in r["legends"]
            if legend.get("beside_share", 0.0) > figstyle.MAX_BESIDE_SHARE + 0.02]
    assert not wide, f"{doc}: legends beside the plot taking its width (figure, axes, share): {wide}"
    crowded = [(n, r["overlapping_ticks"]) for n, r in shown if r.get("overlapping_ticks")]
    assert not crowded, f"{doc}: tick labels running into each other (figure, axes): {crowded}"


@pytest.mark.slow
@pytest.mark.parametrize("doc", CHAPTERS)
def test_every_figure_has_a_phone_drawing_that_reads(reports, doc):
    shown = [(n + 1, r.get("phone")) for n, r in enumerate(reports[doc]) if r is not None]
    missing = [n for n, phone in shown if phone is None]
    assert not missing, f"{doc}: figures without a phone drawing: {missing}"
    small = [(n, p["smallest_type_pt"]) for n, p in shown if p["smallest_type_pt"] < figstyle.PHONE_TYPE_PT - 0.05]
    assert not small, f"{doc}: phone drawings with type under {figstyle.PHONE_TYPE_PT} pt: {small}"
    crowded = [(n, p["overlapping_ticks"]) for n, p in shown if p["overlapping_ticks"]]
    assert not crowded, f"{doc}: phone drawings with tick labels running together: {crowded}"
    covering = [(n, legend["axes"]) for n, p in shown for legend in p["legends"] if legend["covers"]]
    assert not covering, f"{doc}: phone drawings with legends on the data: {covering}"


@pytest.mark.slow
@pytest.mark.parametrize("doc", CHAPTERS)
def test_every_figures_type_is_at_least_10pt_as_shown(reports, doc):
    shown = [(n + 1, r["smallest_type_pt"]) for n, r in enumerate(reports[doc]) if r is not None]
    small = [(n, pt) for n, pt in shown if pt is not None and pt < figstyle.MIN_TYPE_PT]
    assert not small, f"{doc}: figures with type under {figstyle.MIN_TYPE_PT} pt as shown: {small}"
