"""The book's figure style, applied by the setup cell of every chapter (use_book_style).

A legend never covers data: before a figure is drawn for the page, a legend that would cover
data moves to a free place in its axes, or else beside or under them, never taking more than a
quarter of the plot's width (:func:`place_legends`).
Besides the style, every figure a chapter shows carries a report of how it reads
(:func:`figure_report`, in the metadata of the figure's SVG output when the book is
built): whether each legend covers data or takes the plot's width, the smallest type at the
size the page shows the figure, and whether tick labels run into each other.
``tests/book/test_figures.py`` reads those reports from the executed chapters.

A figure is read on a phone too, in a column of 327 px where an 8-inch figure's type would
shrink to 6 px. Every figure a chapter shows is therefore drawn a second time for that column
(:func:`narrow_variant`): its panels one under another, no type under the phone's caption size.
That drawing travels in the same output's metadata, and the page shows it at a phone's width
(``book/_ext/attnmath_phone.py``).

Diagrams that show what the library does are drawn from a run of it: the tile schedule of
flash attention's forward pass (:func:`flash_tile_schedule`,
:func:`draw_tile_schedule`) is recorded from ``attnmath.flash.flash_attention_forward``
itself.
"""
import re
import warnings
from typing import NamedTuple

import matplotlib as mpl
import numpy as np
from cycler import cycler
from matplotlib.layout_engine import ConstrainedLayoutEngine, TightLayoutEngine
from matplotlib.patches import Rectangle
from matplotlib.transforms import Bbox, ScaledTranslation
from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

# The Okabe-Ito palette, distinguishable with the common colour-vision deficiencies;
# every colour has its own line style, so that curves also differ in greyscale and
# print.
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"]
LINESTYLES = ["-", "--", "-.", ":", (0, (5, 1, 1, 1, 1, 1)), (0, (8, 2)), (0, (1, 3))]
#: The width a figure is shown at in the text column at 1280 px, in inches at 96 px per
#: inch (672 px, measured in Chromium): a wider figure is
#: shown scaled down to it, and its type with it.
COLUMN_INCHES = 7.0
#: The smallest type, in points at the size the page shows the figure.
MIN_TYPE_PT = 10.0
#: The width of the text column on a phone 375 px wide (327 px, measured in Chromium), in
#: inches at 96 px per inch: a figure's narrow variant is drawn for it.
PHONE_COLUMN_INCHES = 327 / 96
#: The smallest type of a narrow variant, in points as shown: 16 px, the size of the captions
#: on a phone.
PHONE_TYPE_PT = 12.0
#: The least height of a panel of a narrow variant, in inches (a panel that is lower in the
#: wide figure keeps its height there).
PHONE_PANEL_INCHES = 2.4
#: Where the panels of a row of two or three stood in the wide figure, as its caption names
#: them: the narrow variant, which stacks them, says so in each panel's title.
PANEL_PLACES = {2: ("left", "right"), 3: ("left", "middle", "right")}


def use_book_style():
    """Set matplotlib up for the book: vector (SVG) figures, type that is at least 10 pt where the
    figure is shown (a figure of 8 inches is scaled to the 7-inch text column), an opaque white
    background that stays readable in the dark theme, and TeX-like mathematics in labels. Every
    figure shown gets its :func:`figure_report`."""
    mpl.rcParams.update({
        "figure.figsize": (8, 3), "figure.dpi": 96, "figure.facecolor": "white",
        "savefig.facecolor": "white",
        "font.size": 12, "axes.titlesize": 12, "axes.labelsize": 12,
        "xtick.labelsize": 12,
        "ytick.labelsize": 12, "legend.fontsize": 12, "legend.framealpha": 0.9,
        "axes.prop_cycle": cycler(color=PALETTE) + cycler(linestyle=LINESTYLES),
        "axes.grid": True, "grid.alpha": 0.3, "axes.spines.top": False,
        "axes.spines.right": False, "lines.linewidth": 1.8, "lines.markersize": 5,
        "image.cmap": "viridis", "mathtext.fontset": "cm", "svg.fonttype": "path",
    })
    try:
        from matplotlib_inline.backend_inline import set_matplotlib_formats

        set_matplotlib_formats("svg")
    except ImportError:  # not in Jupyter: the defaults are fine
        return
    _report_every_figure()


def _report_every_figure():
    """Place the legends of every figure IPython displays (:func:`place_legends`) and attach its
    :func:`figure_report` to the metadata of its SVG output, which the pages do not show and the
    tests read."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None:
        return
    from matplotlib.figure import Figure

    svg = shell.display_formatter.formatters["image/svg+xml"]
    draw_svg = svg.lookup_by_type(Figure)

    def svg_with_report(fig):
        narrow, metadata = None, {}
        try:  # from the figure as the chapter drew it, before its legends are placed
            narrow = narrow_variant(fig)
        except Exception as error:  # noqa: BLE001  the wide figure is still shown
            metadata["attnmath_narrow_error"] = f"{type(error).__name__}: {error}"
        try:
            place_legends(fig)
            metadata["attnmath_figure"] = figure_report(fig)
            if narrow is not None:
                metadata["attnmath_figure"]["phone"] = figure_report(
                    narrow, PHONE_COLUMN_INCHES)
                metadata["attnmath_narrow"] = draw_svg(narrow)
        except Exception:  # noqa: BLE001  the figure is still shown; without its
            pass           # report, tests/book/test_figures.py names it
        return draw_svg(fig), metadata

    svg.for_type(Figure, svg_with_report)


#: Where a legend may go inside its axes, in the order they are tried.
LEGEND_PLACES = ("upper right", "upper left", "lower right", "lower left",
                 "center right", "center left", "upper center", "lower center")


#: The most of its axes' width a legend beside them may take (its width over the axes'
#: width): a wider one goes under the axes instead, where it takes height and leaves the
#: plot its width.
MAX_BESIDE_SHARE = 0.25


def place_legends(fig):
    """Move every legend that covers data of its axes to the first place inside the axes where
    it covers none (:data:`LEGEND_PLACES`), or else out of the plot: beside the axes, right of
    the plot, when it takes at most :data:`MAX_BESIDE_SHARE` of the axes' width, or else under
    the axes' labels, in as many columns as fit the axes' width; the axes make room, the figure
    keeps its width and grows by the height of a legend under the axes. Return ``fig``. A legend
    that covers nothing stays where the chapter put it."""
    # moving a legend out of its axes resizes them: the others look again
    for _ in range(3):
        if not _place_legends_once(fig):
            break
    return fig


def _place_legends_once(fig) -> bool:
    """One pass of :func:`place_legends`; whether a legend moved out of its axes."""
    with warnings.catch_warnings():  # a trial layout of a narrow (phone) drawing may not fit yet
        warnings.filterwarnings("ignore", message="constrained_layout not applied")
        fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    moved_out, under = False, [0.0]
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None or not _misplaced(ax, legend, renderer):
            continue
        legend.set_bbox_to_anchor(None)
        for place in LEGEND_PLACES:
            legend.set_loc(place)
            # where the legend lands follows from its place and the axes, without
            # drawing: only a place that looks free is drawn to confirm it (the layout
            # may shift it a little)
            if _misplaced(ax, legend, renderer):
                continue
            fig.canvas.draw()
            if not _misplaced(ax, legend, renderer):
                break
        else:
            under.append(_place_outside(ax, legend, renderer))
            moved_out = True
    # the figure grows by the tallest legend put under its axes, so that the plots keep
    # their height
    fig.set_figheight(fig.get_figheight() + max(under))
    if moved_out and not isinstance(fig.get_layout_engine(), ConstrainedLayoutEngine):
        fig.tight_layout()  # the axes make room for the legend; the figure keeps its
        #                     width
    return moved_out


def _misplaced(ax, legend, renderer) -> bool:
    """Whether ``legend`` covers data of ``ax``, or, placed in the axes, is taller or wider than
    they are."""
    box = legend.get_window_extent(renderer)
    inside = ax.bbox.padded(1.0)
    return bool(_data_inside(ax, box)) or (legend._bbox_to_anchor is None and not (  # noqa: SLF001
        inside.contains(box.x0, box.y0) and inside.contains(box.x1, box.y1)))


def _place_outside(ax, legend, renderer) -> float:
    """Put ``legend`` beside ``ax`` if it takes at most :data:`MAX_BESIDE_SHARE` of the width
    left to the axes, else under the axes' tick labels and label, in the most columns (up to one
    per entry) whose width fits the axes'. Return the height it takes under the axes, in inches."""
    width = legend.get_window_extent(renderer).width
    # 0.9: the gap, the layout's pad
    if width <= MAX_BESIDE_SHARE * (0.9 * ax.bbox.width - width):
        legend.set_loc("upper left")
        legend.set_bbox_to_anchor((1.02, 1.0), transform=ax.transAxes)
        return 0.0
    for ncols in range(len(legend.texts), 0, -1):
        _set_columns(legend, ncols)
        if ncols == 1 or legend.get_window_extent(renderer).width <= ax.bbox.width:
            break
    # under the x axis's tick labels and label, whatever size the layout gives the axes
    drop = (ax.bbox.y0 - ax.xaxis.get_tightbbox(renderer).y0) / ax.figure.dpi
    legend.set_loc("upper center")  # after the new layout: it places the new box
    legend.set_bbox_to_anchor((0.5, 0.0), transform=ax.transAxes + ScaledTranslation(
        0, -drop, ax.figure.dpi_scale_trans))
    # points to inches
    pad = legend.borderaxespad * legend.prop.get_size_in_points() / 72
    return legend.get_window_extent(renderer).height / ax.figure.dpi + pad


def _set_columns(legend, ncols: int):
    """Lay the entries of ``legend`` out again in ``ncols`` columns."""
    labels, title = [text.get_text() for text in legend.texts], legend.get_title()
    title, title_font = title.get_text(), title.get_fontproperties()
    legend.set_ncols(ncols)
    legend._init_legend_box(legend.legend_handles, labels)  # noqa: SLF001
    legend.set_title(title, prop=title_font)  # the new layout has an empty title box


def power_of_two_axis(ax, which="x"):
    """A logarithmic axis in base 2 whose ticks read as the numbers they are (64, 128, ...)."""
    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log", base=2)
    axis.set_major_locator(LogLocator(base=2))
    axis.set_minor_locator(NullLocator())
    axis.set_major_formatter(FuncFormatter(_power_of_two_label))


def _power_of_two_label(value, _position) -> str:
    # a function of the module, not a lambda: a figure with it can be copied (pickled)
    return f"{value:g}" if value < 1e6 else f"$2^{{{np.log2(value):.0f}}}$"


def narrow_variant(fig):
    """A copy of ``fig`` drawn for a phone's text column (:data:`PHONE_COLUMN_INCHES`), or
    ``None`` when ``fig`` is no wider than that column. The copy's panels (the cells of its
    ``plt.subplots`` grid) stand one under another, or two side by side where the wide figure
    has four or more in a row; each keeps its height, or takes :data:`PHONE_PANEL_INCHES`;
    stacked panels of a row of two or three are titled with the place the caption names them
    by (:data:`PANEL_PLACES`); tick labels that a shared axis hid show again beside every
    panel; no type is smaller than
    :data:`PHONE_TYPE_PT`; the legends are placed again (:func:`place_legends`). ``fig`` is
    not changed. Raises ValueError for axes placed by hand, which this cannot lay out again."""
    if fig.get_figwidth() <= PHONE_COLUMN_INCHES:
        return None
    copy = _copy(fig)
    panels, (nrows, ncols) = _panels(copy)
    cols = 2 if ncols * PHONE_COLUMN_INCHES / fig.get_figwidth() >= 1.5 else 1
    rows = -(-len(panels) // cols)
    old_w, old_h = fig.get_figwidth() / ncols, fig.get_figheight() / nrows
    height = min(old_h, max(PHONE_PANEL_INCHES, old_h * PHONE_COLUMN_INCHES / cols / old_w))
    title = copy._suptitle  # noqa: SLF001  (matplotlib keeps it there, and nowhere public)
    extra = 0.0 if title is None else (title.get_text().count("\n") + 1) * 0.3
    copy.set_size_inches(PHONE_COLUMN_INCHES, rows * height + extra)
    _reflow(copy, panels, cols)
    if nrows == 1 and cols == 1 and ncols in PANEL_PLACES:  # the caption's "left", "right"
        for (_, axes), place in zip(panels, PANEL_PLACES[ncols]):
            title = axes[0].get_title()
            axes[0].set_title(f"{place}: {title}" if title else place)
    # constrained layout gives each row of panels the room its own labels and legend take; a
    # colour bar that tight layout placed (in a grid of its own) stays with tight layout
    if not any(hasattr(ax, "_colorbar") and ax.get_subplotspec() for ax in copy.axes):
        copy.set_layout_engine("constrained")
    for text in copy.findobj(mpl.text.Text):
        text.set_fontsize(max(text.get_fontsize(), PHONE_TYPE_PT))
    for ax in copy.axes:
        for which, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            size = axis._get_tick_label_size(which)  # noqa: SLF001  (new ticks take it)
            ax.tick_params(axis=which, labelsize=max(size, PHONE_TYPE_PT))
    legends = _legends_unplaced(copy)  # placed again once the panels are laid out
    _layout(copy)
    if _wrap_long_text(copy):
        _layout(copy)
    _fit_height(copy)
    for ax in copy.axes:
        _thin_ticks(ax)
    for legend in legends:
        legend.set_in_layout(True)
    place_legends(copy)
    if _fit_width(copy):
        place_legends(copy)  # the plots may have moved under a legend
    return copy


def _legends_unplaced(fig) -> list:
    """The legends of ``fig``, each in one column and out of the layout, and one that the
    chapter anchored outside its axes (for the wide figure) back in them."""
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    for legend in legends:
        legend.set_in_layout(False)
        if legend._ncols > 1:  # noqa: SLF001
            _set_columns(legend, 1)
        if legend._bbox_to_anchor is not None:  # noqa: SLF001
            legend.set_bbox_to_anchor(None)
            legend.set_loc("best")
    return legends


def _fit_width(fig) -> bool:
    """Narrow ``fig`` until what it draws (a legend beside a plot may reach past the figure)
    fits the phone's column, as long as that leaves it most of its width; whether it did."""
    narrowed = False
    for _ in range(3):
        shown = fig.get_tightbbox().width + 2 * mpl.rcParams["savefig.pad_inches"]
        width = fig.get_figwidth() - (shown - PHONE_COLUMN_INCHES)
        if shown <= PHONE_COLUMN_INCHES + 0.01 or width < 0.6 * PHONE_COLUMN_INCHES:
            break
        fig.set_figwidth(width)
        _layout(fig)
        narrowed = True
    return narrowed


def _copy(fig):
    """A copy of ``fig`` that pyplot does not show, on a canvas of its own."""
    import pickle

    from matplotlib import pyplot as plt
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    copy = pickle.loads(pickle.dumps(fig))
    plt.close(copy)  # unpickled, a figure of pyplot's joins pyplot's figures again
    FigureCanvasAgg(copy)
    return copy


def _layout(fig):
    """Lay ``fig`` out again: by its layout engine if it has one that lays out (constrained or
    tight), else by tight_layout."""
    if not isinstance(fig.get_layout_engine(), (ConstrainedLayoutEngine, TightLayoutEngine)):
        fig.tight_layout()
    fig.canvas.draw()


def _wrap_long_text(fig) -> bool:
    """Break over lines the texts of ``fig`` that are longer than the room a phone's column
    leaves them: an axis's label longer than its side of the axes, a title wider than its
    axes, a legend wider than its axes (its entries broken to fit them); whether one was."""
    before = [text.get_text() for text in fig.findobj(mpl.text.Text)]
    renderer = fig.canvas.get_renderer()
    if fig._suptitle is not None:  # noqa: SLF001
        _wrap(fig._suptitle, 0.95 * fig.bbox.width, renderer)  # noqa: SLF001
    for ax in fig.axes:
        _wrap(ax.xaxis.label, ax.bbox.width, renderer)
        _wrap(ax.yaxis.label, ax.bbox.height, renderer)
        _wrap(ax.title, ax.bbox.width, renderer)
        legend = ax.get_legend()
        if legend is None or not legend.texts:
            continue
        frame = legend.get_window_extent(renderer).width - max(
            text.get_window_extent(renderer).width for text in legend.texts)
        for text in legend.texts:
            _wrap(text, 0.95 * ax.bbox.width - frame, renderer)
    return [text.get_text() for text in fig.findobj(mpl.text.Text)] != before


def _wrap(text, room: float, renderer):
    """Break each line of ``text`` that is longer than ``room`` pixels into as few lines as keep
    each within it, at spaces outside its formulas (``$...$``)."""
    if not text.get_visible():
        return
    lines = [broken for line in text.get_text().split("\n")
             for broken in _broken(line, _length(line, text, renderer) / room)]
    text.set_text("\n".join(lines))


def _length(line: str, text, renderer) -> float:
    """The length in pixels of ``line`` set as ``text`` is, unrotated."""
    probe = mpl.text.Text(0, 0, line, fontproperties=text.get_fontproperties())
    probe.set_figure(text.get_figure(root=True))
    return probe.get_window_extent(renderer).width


def _broken(line: str, parts: float) -> list[str]:
    """``line`` in ``ceil(parts)`` lines of about equal length, broken at spaces outside its
    formulas."""
    words = re.findall(r"(?:\$[^$]*\$|[^\s$])+", line)
    lines = min(len(words), int(np.ceil(parts)))
    if lines < 2:
        return [line]
    target, broken, current = sum(map(len, words)) / lines, [], []
    for word in words:
        if current and sum(map(len, current)) + len(word) / 2 > target and len(broken) < lines - 1:
            broken.append(" ".join(current))
            current = []
        current.append(word)
    return [*broken, " ".join(current)]


def _fit_height(fig):
    """Take from ``fig``'s height what plots of a fixed aspect (a heat map) leave empty in
    every row of panels, and lay it out again."""
    rows = {}
    for ax in fig.axes:
        if ax.get_subplotspec() is None or hasattr(ax, "_colorbar"):
            continue
        row = ax.get_subplotspec().get_topmost_subplotspec().rowspan.start
        given, drawn = ax.get_position(original=True), ax.get_position(original=False)
        rows[row] = min(rows.get(row, 1.0), given.height - drawn.height)
    spare = sum(rows.values()) * fig.get_figheight()
    if spare > 0.05:
        fig.set_figheight(fig.get_figheight() - spare)
        _layout(fig)


def _thin_ticks(ax):
    """Label every second (third, ...) fixed tick of an axis of ``ax`` whose labels run into
    each other, the fewest left out that keep them apart."""
    from matplotlib.ticker import FixedLocator

    renderer = ax.figure.canvas.get_renderer()
    for axis, lo, hi in ((ax.xaxis, "x0", "x1"), (ax.yaxis, "y0", "y1")):
        ticks = list(axis.get_major_locator().locs) if isinstance(
            axis.get_major_locator(), FixedLocator) else []
        labels = [label.get_text() for label in axis.get_ticklabels()]
        for step in range(2, len(ticks)):
            if not _axis_ticks_overlap(axis, lo, hi, renderer):
                break
            axis.set_ticks(ticks[::step], labels[::step])


def _panels(fig):
    """The axes of ``fig`` by the cell of its grid that they take (a colour bar that the
    layout made beside its axes goes with them), in reading order, and the grid's shape."""
    cells, grid = {}, None
    for ax in fig.axes:
        spec = ax.get_subplotspec()
        if spec is None:
            if hasattr(ax, "_colorbar"):
                continue  # constrained layout places it beside its axes
            raise ValueError(f"axes {_name(ax)!r} are placed by hand, not on a grid")
        top = spec.get_topmost_subplotspec()
        if grid not in (None, top.get_gridspec()):
            raise ValueError("the figure's axes are on more than one grid")
        grid = top.get_gridspec()
        cells.setdefault((top.rowspan.start, top.colspan.start), (top, []))[1].append(ax)
    if grid is None:
        raise ValueError("the figure has no axes on a grid")
    return [cells[key] for key in sorted(cells)], grid.get_geometry()


def _reflow(fig, panels, cols):
    """Put each panel of ``panels`` (:func:`_panels`) in the next cell of a grid of ``cols``
    columns; a panel that a colour bar shares with it moves as one (its nested grid is
    re-anchored)."""
    from matplotlib.gridspec import GridSpecFromSubplotSpec

    grid = fig.add_gridspec(-(-len(panels) // cols), cols)
    for n, (top, axes) in enumerate(panels):
        cell = grid[n // cols, n % cols]
        for ax in axes:
            spec = ax.get_subplotspec()
            if spec.get_gridspec() is top.get_gridspec():
                ax.set_subplotspec(cell)
                continue
            nested = spec.get_gridspec()
            while nested.get_topmost_subplotspec() != nested._subplot_spec:  # noqa: SLF001
                nested = nested._subplot_spec.get_gridspec()  # noqa: SLF001
            if isinstance(nested, GridSpecFromSubplotSpec):
                nested._subplot_spec = cell  # noqa: SLF001  (no public setter)
            ax._set_position(spec.get_position(fig))  # noqa: SLF001
        if n % cols == 0:  # the first of its row: the labels of a shared y axis show
            for ax in axes:
                if len(ax.get_shared_y_axes().get_siblings(ax)) > 1:
                    ax.yaxis.set_tick_params(which="both", labelleft=True)


def _densified(points: np.ndarray, step: float = 2.0) -> np.ndarray:
    """The points of a polyline in display space, with points every ``step`` pixels between."""
    points = points[np.isfinite(points).all(axis=1)]
    if len(points) < 2:
        return points
    out = [points[:1]]
    for a, b in zip(points[:-1], points[1:]):
        n = max(1, int(np.hypot(*(b - a)) / step))
        out.append(a + np.outer(np.arange(1, n + 1) / n, b - a))
    return np.concatenate(out)


def _data_inside(ax, box) -> list:
    """Labels of the data of ``ax`` (lines, markers, images, bars) that show inside ``box``."""
    # what is drawn lies in the axes (the rest is clipped), so only that part of the box
    # counts
    shrunk = Bbox.intersection(box.padded(-1.0), ax.bbox)
    if shrunk is None:
        return []

    def inside(xy):
        return bool(len(xy)) and bool(
            ((xy[:, 0] > shrunk.x0) & (xy[:, 0] < shrunk.x1)
             & (xy[:, 1] > shrunk.y0) & (xy[:, 1] < shrunk.y1)).any())

    covered = []
    for line in ax.get_lines():
        xy = line.get_transform().transform(np.asarray(line.get_xydata(), dtype=float))
        drawn = line.get_linestyle() not in ("None", "", " ", "none")
        if line.get_visible() and inside(_densified(xy) if drawn else xy):
            covered.append(f"line {line.get_label()}")
    for coll in ax.collections:
        offsets = np.asarray(coll.get_offsets(), dtype=float)
        if coll.get_visible() and len(offsets) and inside(coll.get_offset_transform().transform(offsets)):
            covered.append(f"markers {coll.get_label()}")
    for artist in list(ax.images) + list(ax.patches):
        if artist.get_visible() and artist.get_window_extent().overlaps(shrunk):
            covered.append(f"{type(artist).__name__} {artist.get_label()}")
    return covered


def figure_report(fig, column_inches: float = COLUMN_INCHES) -> dict:
    """How a figure reads: for each legend, whether it lies inside its axes, which data it covers
    and, for one beside its axes, the share of their width it takes; the smallest type, in points
    as a column ``column_inches`` wide shows the figure; the axes whose tick labels run into
    each other."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legends = []
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None or not legend.get_visible():
            continue
        box = legend.get_window_extent(renderer)
        beside = box.y0 < ax.bbox.y1 and box.y1 > ax.bbox.y0 and (box.x0 >= ax.bbox.x1 - 1
                                                                   or box.x1 <= ax.bbox.x0 + 1)
        inside = ax.bbox.contains(box.x0, box.y0) and ax.bbox.contains(box.x1, box.y1)
        legends.append({"axes": _name(ax), "inside_axes": bool(inside),
                        "covers": _data_inside(ax, box),
                        "beside_share": (round(box.width / ax.bbox.width, 3) if beside
                                         else 0.0)})
    sizes = [t.get_fontsize() for t in fig.findobj(mpl.text.Text)
             if t.get_visible() and t.get_text().strip()]
    # shown as the notebook saves it: cropped to what is drawn (bbox_inches="tight",
    # with its pad)
    shown_inches = fig.get_tightbbox(renderer).width + 2 * mpl.rcParams["savefig.pad_inches"]
    scale = min(1.0, column_inches / shown_inches)
    return {"legends": legends,
            "smallest_type_pt": round(float(min(sizes) * scale), 2) if sizes else None,
            "overlapping_ticks": [_name(ax) for ax in fig.axes
                                  if _ticks_overlap(ax, renderer)]}


def _name(ax) -> str:
    return ax.get_title() or ax.get_ylabel() or ax.get_xlabel()


def _ticks_overlap(ax, renderer) -> bool:
    """Whether two tick labels of an axis of ``ax`` that the axes show run into each other."""
    return (_axis_ticks_overlap(ax.xaxis, "x0", "x1", renderer)
            or _axis_ticks_overlap(ax.yaxis, "y0", "y1", renderer))


def _axis_ticks_overlap(axis, lo, hi, renderer) -> bool:
    low, high = sorted(axis.get_view_interval())
    slack = 1e-9 * (high - low)
    boxes = sorted((label.get_window_extent(renderer) for tick in axis.get_major_ticks()
                    if low - slack <= tick.get_loc() <= high + slack
                    for label in (tick.label1, tick.label2)
                    if label.get_visible() and label.get_text().strip()),
                   key=lambda box: getattr(box, lo))
    return any(getattr(b, lo) < getattr(a, hi) - 0.5 for a, b in zip(boxes, boxes[1:]))


#: The kinds of (query tile, key tile) in flash attention's forward pass, and how the
#: tile schedule diagram draws each: fill, hatch, and the colour of its order number.
TILE_KINDS = {"full": (PALETTE[0], None, "white"), "masked": ("#A6CEE3", "//", "black"),
              "skipped": ("white", None, None)}


class TileSchedule(NamedTuple):
    """The tiles one run of :func:`attnmath.flash.flash_attention_forward` computed.

    ``order`` lists the computed tiles ``(query tile, key tile)`` in the order the run
    computed them; ``kinds`` maps every tile of the ``shape`` grid to ``"full"`` (no score of the tile
    masked), ``"masked"`` (the mask removed some of its scores) or ``"skipped"`` (never computed).
    """

    order: list
    kinds: dict
    shape: tuple


def _check_size(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return int(value)


def flash_tile_schedule(L: int, S: int, block_q: int, block_k: int, *,
                        causal_alignment: str | int = "top_left") -> TileSchedule:
    """Record the tile schedule of a causal run of ``flash_attention_forward`` on ``L`` queries
    and ``S`` keys in tiles of ``block_q`` by ``block_k``, with the forward pass's
    ``causal_alignment`` (``"top_left"``, ``"bottom_right"`` or an integer offset).
    Every score tile the forward pass computes is made by :meth:`attnmath.core.Problem.scores`, which is
    wrapped for the run: the record is what the library did, not a model of it."""
    from attnmath import core
    from attnmath.flash import flash_attention_forward

    sizes = {name: _check_size(value, name)
             for name, value in (("L", L), ("S", S), ("block_q", block_q),
                                 ("block_k", block_k))}
    L, S, block_q, block_k = sizes.values()
    order, kinds = [], {}
    make_tile = core.Problem.scores

    def recorded(problem, q_rows, rows, cols):
        tile = make_tile(problem, q_rows, rows, cols)
        order.append((rows.start // block_q, cols.start // block_k))
        kinds[order[-1]] = "masked" if np.isneginf(tile).any() else "full"
        return tile

    core.Problem.scores = recorded
    try:
        flash_attention_forward(np.ones((L, 1)), np.ones((S, 1)), np.ones((S, 1)),
                                block_q=block_q, block_k=block_k, causal=True,
                                causal_alignment=causal_alignment)
    finally:
        core.Problem.scores = make_tile
    shape = (-(-L // block_q), -(-S // block_k))
    every = {(i, j): kinds.get((i, j), "skipped")
             for i in range(shape[0]) for j in range(shape[1])}
    return TileSchedule(order, every, shape)


def draw_tile_schedule(ax, schedule: TileSchedule):
    """Draw ``schedule`` on ``ax``: one square per tile, query tiles down and key tiles across,
    coloured by kind (:data:`TILE_KINDS`) and numbered in the order computed. Each square's SVG
    id is ``tile-<i>-<j>-<kind>``, so that the drawn schedule can be read back from the page."""
    number = {tile: n for n, tile in enumerate(schedule.order, start=1)}
    for (i, j), kind in sorted(schedule.kinds.items()):
        fill, hatch, ink = TILE_KINDS[kind]
        ax.add_patch(Rectangle((j, i), 1, 1, facecolor=fill, hatch=hatch,
                               edgecolor="white" if kind != "skipped" else "lightgray",
                               gid=f"tile-{i}-{j}-{kind}"))
        if (i, j) in number:
            ax.text(j + 0.5, i + 0.5, str(number[i, j]), ha="center", va="center",
                    color=ink)
    rows, cols = schedule.shape
    ax.set(xlim=(0, cols), ylim=(rows, 0), xlabel="key tile j", ylabel="query tile i",
           aspect="equal")
    ax.set_xticks(np.arange(cols) + 0.5, labels=[str(j) for j in range(cols)])
    ax.set_yticks(np.arange(rows) + 0.5, labels=[str(i) for i in range(rows)])
    ax.tick_params(length=0)
    ax.grid(False)
    return ax
