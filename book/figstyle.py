"""The book's figure style, applied by the setup cell of every chapter (use_book_style)."""
import matplotlib as mpl
from cycler import cycler

# The Okabe-Ito palette, distinguishable with the common colour-vision deficiencies; every
# colour has its own line style, so that curves also differ in greyscale and print.
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"]
LINESTYLES = ["-", "--", "-.", ":", (0, (5, 1, 1, 1, 1, 1)), (0, (8, 2)), (0, (1, 3))]


def use_book_style():
    """Set matplotlib up for the book: vector (SVG) figures, type that is at least 10 pt where the
    figure is shown (a figure of 8 inches fills the text column), an opaque white background
    that stays readable in the dark theme, and TeX-like mathematics in labels."""
    mpl.rcParams.update({
        "figure.figsize": (8, 3), "figure.dpi": 96, "figure.facecolor": "white",
        "savefig.facecolor": "white",
        "font.size": 12, "axes.titlesize": 12, "axes.labelsize": 12, "xtick.labelsize": 11,
        "ytick.labelsize": 11, "legend.fontsize": 11, "legend.framealpha": 0.9,
        "axes.prop_cycle": cycler(color=PALETTE) + cycler(linestyle=LINESTYLES),
        "axes.grid": True, "grid.alpha": 0.3, "axes.spines.top": False,
        "axes.spines.right": False, "lines.linewidth": 1.8, "lines.markersize": 5,
        "image.cmap": "viridis", "mathtext.fontset": "cm", "svg.fonttype": "path",
    })
    try:
        from matplotlib_inline.backend_inline import set_matplotlib_formats

        set_matplotlib_formats("svg")
    except ImportError:  # not in Jupyter: the defaults are fine
        pass
