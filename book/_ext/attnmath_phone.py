"""Figures and tables for the width they are read at: a phone's column of 327 px.

Every figure a chapter shows is drawn twice when the chapter runs (``book/figstyle.py``,
``narrow_variant``): for the text column at 1280 px, and for a phone's column, its panels one
under another and no type under the phone's caption size. The phone's drawing travels in the
metadata of the same output (``attnmath_narrow``). myst-nb (pinned in requirements.txt) writes an
image output to a file in ``NbElementRenderer.render_image`` and reads nothing else of that
metadata; this extension wraps that method so that it writes the phone's drawing beside the
figure's file (``<name>-narrow.svg``), and then gives every figure of a page that has one a
``<picture>`` whose source the browser takes on a screen of at most :data:`PHONE_MAX_PX`:
a reader on a phone loads that drawing only, a reader at 1280 px and the PDF the wide one.
The drawing is taken out of the notebook that the download menu offers: a reader who runs it
draws it again.

Tables: a cell of a few words stays on one line on a phone and the table scrolls sideways in its
box (``attnmath.css``), instead of squeezing every cell into a column of three lines; a cell of
running text (more than :data:`PROSE_CELL_CHARS` characters, as in the claims appendix) is marked
``attnmath-prose`` and wraps.
"""

from __future__ import annotations

import html
import re
import shutil
from pathlib import Path

#: The widest screen, in CSS pixels, on which a figure's phone drawing is shown.
PHONE_MAX_PX = 640
#: A table cell with more characters than this is running text, which wraps on a phone.
PROSE_CELL_CHARS = 40
NARROW_KEY = "attnmath_narrow"
NARROW_SUFFIX = "-narrow"

_IMG = re.compile(r'<img (?P<attrs>[^>]*?)src="(?P<src>[^"]+\.svg)"[^>]*>')
_CELL = re.compile(r'<(?P<tag>t[dh])(?P<attrs>(?:\s[^>]*)?)>(?P<inner>.*?)</(?P=tag)>', re.S)
_TAG = re.compile(r"<[^>]+>")
_HIDDEN_MATHML = re.compile(r"<mjx-assistive-mml.*?</mjx-assistive-mml>", re.S)


def narrow_name(name: str) -> str:
    """The file name of the phone's drawing of the figure in file ``name``."""
    path = Path(name)
    return path.stem + NARROW_SUFFIX + path.suffix


def _wrap_render_image():
    """Make myst-nb write an SVG output's phone drawing beside the output's own file."""
    from myst_nb.core.render import NbElementRenderer

    render_image = NbElementRenderer.render_image
    if getattr(render_image, "attnmath_phone", False):
        return

    def render_image_and_narrow(self, data):
        written = render_image(self, data)
        narrow = (data.output_metadata.get(data.mime_type) or {}).get(NARROW_KEY)
        if data.mime_type == "image/svg+xml" and narrow and written:
            # myst-nb wrote the figure as <output folder>/<hash>.svg
            name = narrow_name(Path(written[0]["uri"]).name)
            self.write_file([name], narrow.encode("utf-8"), overwrite=True)
        return written

    render_image_and_narrow.attnmath_phone = True
    NbElementRenderer.render_image = render_image_and_narrow


def picture(img: str, narrow_src: str, size: tuple[int, int] | None) -> str:
    """``img`` in a ``<picture>`` whose source ``narrow_src`` (of ``size``, width and height in
    CSS pixels) a screen of at most PHONE_MAX_PX takes instead."""
    dims = f' width="{size[0]}" height="{size[1]}"' if size else ""
    return (f'<picture class="attnmath-figure"><source media="screen and (max-width: '
            f'{PHONE_MAX_PX}px)" srcset="{html.escape(narrow_src)}"{dims}>{img}</picture>')


def figures_for_phones(app, pagename, templatename, context, doctree):
    """Every figure of the page that has a phone drawing: that drawing copied next to it in the
    build's images, and the figure in a :func:`picture` that offers it."""
    body = context.get("body")
    images = getattr(app.builder, "images", None)
    if not body or not images:
        return
    from attnmath_html import svg_size

    sources = {Path(dest).name: Path(app.srcdir) / src for src, dest in images.items()}
    target = Path(app.outdir) / app.builder.imagedir

    def offer(match):
        source = sources.get(Path(match["src"]).name)
        narrow = source.with_name(narrow_name(source.name)) if source is not None else None
        if narrow is None or not narrow.exists():
            return match.group(0)
        target.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(narrow, target / narrow_name(Path(match["src"]).name))
        src = match["src"].rsplit("/", 1)
        narrow_src = "/".join([*src[:-1], narrow_name(src[-1])])
        return picture(match.group(0), narrow_src, svg_size(narrow))

    context["body"] = mark_prose_cells(_IMG.sub(offer, body))


def mark_prose_cells(body: str) -> str:
    """``body`` with every table cell of more than PROSE_CELL_CHARS characters of text marked
    ``attnmath-prose``."""

    def mark(match):
        text = html.unescape(_TAG.sub("", _HIDDEN_MATHML.sub("", match["inner"])))
        if len(" ".join(text.split())) <= PROSE_CELL_CHARS:
            return match.group(0)
        attrs = match["attrs"]
        if 'class="' in attrs:
            attrs = attrs.replace('class="', 'class="attnmath-prose ', 1)
        else:
            attrs += ' class="attnmath-prose"'
        return f"<{match['tag']}{attrs}>{match['inner']}</{match['tag']}>"

    return _CELL.sub(mark, body)


def drop_phone_drawings(app, pagename, templatename, context, doctree):
    """Take the phone's drawings out of the executed notebook that the download menu offers
    (``attnmath_html``'s ``make_standalone`` writes it next): they are the page's, and a reader
    who runs the notebook draws them again."""
    config = getattr(app.env, "mystnb_config", None)
    path = Path(config.output_folder) / f"{pagename}.ipynb" if config is not None else None
    if path is None or not path.exists():
        return
    import nbformat

    nb = nbformat.read(path, as_version=4)
    dropped = [meta.pop(NARROW_KEY) for cell in nb.cells if cell.cell_type == "code"
               for output in cell.get("outputs", [])
               for meta in [(output.get("metadata") or {}).get("image/svg+xml") or {}]
               if NARROW_KEY in meta]
    if dropped:
        nbformat.write(nb, path)


def setup(app):
    _wrap_render_image()
    # after attnmath_html merged the cached outputs in (priority 400), before it rewrites the
    # notebook for the download menu (450)
    app.connect("html-page-context", drop_phone_drawings, priority=425)
    # after attnmath_html's image_sizes (priority 500) gave the <img> its size
    app.connect("html-page-context", figures_for_phones, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
