"""Small fixes to the HTML pages of the book, so that they load without errors in a browser.

Jupyter Book 1.x with Sphinx 7.4 writes the inline configuration scripts of ``sphinx_thebe``
(``const THEBE_JS_URL = ...``) and of ``sphinx_togglebutton`` twice into every page; the second
copy redeclares a ``const`` and the browser reports a ``SyntaxError``. This extension drops
repeated scripts from each page's list, keeping the first of each.

The download menu offers each chapter as an ``.ipynb`` notebook, copied by sphinx-book-theme
from ``_build/jupyter_execute/``. With ``execute_notebooks: cache``, myst-nb 1.4 writes that
notebook without the outputs it took from the execution cache; this extension merges them in
first, so that the downloaded notebook shows the same results as the page, and then rewrites its
Markdown for JupyterLab (``attnmath_notebook.py``), so that it runs and reads on its own.

The repository URL (``repository: url:`` in ``_config.yml``) is the one setting for links to the
repository: while it is empty, the repository, issues, edit and launch buttons are turned off.

Lighter, steadier pages: Font Awesome's 1.5 MB script is removed from every page
(``_static/icons.css`` draws the theme's few icons), and so are the search index and tools except
on the search page; every SVG figure gets its width and height so that the text does not jump
when it loads (and it loads when the reader comes near it); Thebe's and sphinx-design's tab
scripts are left out where nothing uses them; code blocks, the theme's stylesheets and its icon
font keep only what the pages use (``attnmath_weight.py``); and the download menu loses its
".pdf" entry (the browser's print of one page; the whole book is ``make pdf``). The formulas are typeset when the book is built
(``attnmath_mathjax.py``), so that no page hides or reflows its text while MathJax works.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path


def _script_key(script):
    attributes = getattr(script, "attributes", {}) or {}
    return str(getattr(script, "filename", script) or ""), tuple(sorted((k, str(v)) for k, v in attributes.items()))


def drop_repeated_scripts(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, unique = set(), []
    for script in scripts:
        key = _script_key(script)
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


def _asset_name(asset) -> str:
    name = str(getattr(asset, "filename", asset) or "")
    body = str((getattr(asset, "attributes", {}) or {}).get("body", ""))
    return name + body


def drop_unused_assets(app, pagename, templatename, context, doctree):
    """Without launch buttons (no repository) nothing starts Thebe's live code, so its script,
    configuration and style are left out; sphinx-design's tab script only goes to pages with
    tabs."""
    unused = []
    if not app.config.html_theme_options.get("launch_buttons"):
        unused += ["sphinx-thebe", "THEBE_JS_URL"]
    if "sd-tab-set" not in (context.get("body") or ""):
        unused.append("design-tabs.js")
    for key in ("script_files", "css_files"):
        assets = context.get(key)
        if assets:
            context[key] = [a for a in assets if not any(u in _asset_name(a) for u in unused)]


def add_cached_outputs(app, pagename, templatename, context, doctree):
    config = getattr(app.env, "mystnb_config", None)
    if config is None or config.execution_mode != "cache" or not config.execution_cache_path:
        return
    path = Path(config.output_folder) / f"{pagename}.ipynb"
    if not path.exists():
        return
    import nbformat
    from jupyter_cache import get_cache

    nb = nbformat.read(path, as_version=4)
    if any(cell.get("outputs") for cell in nb.cells if cell.cell_type == "code"):
        return
    try:
        _, merged = get_cache(config.execution_cache_path).merge_match_into_notebook(nb)
    except KeyError:  # not in the cache: the page was built without executing it
        return
    nbformat.write(merged, path)


def make_standalone(app, pagename, templatename, context, doctree):
    """Rewrite the chapter notebook offered for download as plain JupyterLab Markdown, its code
    laid out as the page shows it."""
    config = getattr(app.env, "mystnb_config", None)
    if config is None:
        return
    path = Path(config.output_folder) / f"{pagename}.ipynb"
    source = Path(app.env.doc2path(pagename))
    if not path.exists():
        return
    import nbformat
    from attnmath_notebook import Resolver, standalone_notebook

    nb = nbformat.read(path, as_version=4)
    macros = ((app.config.mathjax3_config or {}).get("tex") or {}).get("macros") or {}
    standalone_notebook(nb, source.parent, macros, Resolver(app.env))
    from attnmath_listing import cell_width, fit_code

    for cell in nb.cells:  # the code as the page shows it, in lines that fit the column
        if cell.cell_type == "code":
            cell.source = fit_code(cell.source, cell_width(cell.metadata.get("tags", [])))
    nbformat.write(nb, path)
    # Offer it in the download menu. sphinx-book-theme copies the notebook only when launch
    # buttons are configured; without a repository there are none, so copy it here.
    target = Path(app.outdir) / "_sources" / f"{pagename}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(path, target)
    context["ipynb_source"] = f"{pagename}.ipynb"


_IMG = re.compile(r'<img (?P<attrs>[^>]*?)src="(?P<src>[^"]+\.svg)"(?P<rest>[^>]*)>')
_ANY_IMG = re.compile(r'<img (?![^>]*\bloading=)')
_SVG_SIZE = re.compile(r'<svg[^>]*?\swidth="(?P<w>[\d.]+)(?P<wu>pt|px)?"[^>]*?\sheight="(?P<h>[\d.]+)(?P<hu>pt|px)?"')


def svg_size(path: Path) -> tuple[int, int] | None:
    """The width and height in CSS pixels that an SVG file declares, if it does."""
    match = _SVG_SIZE.search(path.read_text(errors="replace")[:2000])
    if not match:
        return None
    scale = {"pt": 4 / 3, "px": 1, None: 1}
    return (round(float(match["w"]) * scale[match["wu"]]), round(float(match["h"]) * scale[match["hu"]]))


def image_sizes(app, pagename, templatename, context, doctree):
    """Give every SVG figure of the page its width and height attributes, so the browser reserves
    its space before it loads (no layout shift); the CSS scales it to the column. Images load
    when the reader comes near them (``loading="lazy"``), not all with the page."""
    body = context.get("body")
    images = getattr(app.builder, "images", None)
    if not body or not images:
        return
    sources = {Path(dest).name: Path(app.srcdir) / src for src, dest in images.items()}

    def add_size(match):
        if " width=" in match.group(0):
            return match.group(0)
        source = sources.get(Path(match["src"]).name)
        size = svg_size(source) if source is not None and source.exists() else None
        if size is None:
            return match.group(0)
        return (f'<img {match["attrs"]}src="{match["src"]}" width="{size[0]}" '
                f'height="{size[1]}"{match["rest"]}>')

    body = _IMG.sub(add_size, body)
    if app.builder.name == "html":  # make_pdf.py makes them eager again before printing
        body = _ANY_IMG.sub(r'<img loading="lazy" decoding="async" ', body)
    context["body"] = body


_FONTAWESOME = re.compile(r'\s*<(script|link)\b[^>]*fontawesome[^>]*>(\s*</script>)?')
_SEARCH_TOOLS = re.compile(r'\s*<script\b[^>]*(searchtools|language_data|searchindex)\.js[^>]*>\s*</script>')


def lighten_pages(app, exception):
    """Remove from every written page Font Awesome's 1.5 MB script (``_static/icons.css`` draws
    the theme's few icons instead) and, except on the search page, the search index and tools
    (190 kB) that pydata-sphinx-theme loads everywhere for a search-as-you-type this book does not
    use: the search box sends the reader to the search page, which loads them itself."""
    if exception is not None or app.builder.format != "html":
        return
    outdir = Path(app.outdir)
    for page in outdir.rglob("*.html"):
        text = page.read_text()
        lighter = _FONTAWESOME.sub("", text)
        if page != outdir / "search.html":
            lighter = _SEARCH_TOOLS.sub("", lighter)
        if lighter != text:
            page.write_text(lighter)
    from attnmath_weight import lighten_static

    lighten_static(outdir)


def drop_print_button(app, pagename, templatename, context, doctree):
    """The download menu's ".pdf" entry printed one page with clipped code; the whole book is a
    PDF of its own (``make pdf``)."""
    for group in context.get("header_buttons") or []:
        buttons = group.get("buttons") if isinstance(group, dict) else None
        if buttons:
            group["buttons"] = [b for b in buttons if "pdf" not in str(b.get("icon", ""))]


def repository_buttons(app, config):
    """With a repository URL the repository button; without one, no button that needs it."""
    options = config.html_theme_options
    if options.get("repository_url"):
        options["use_repository_button"] = True
        return
    for key in ("use_repository_button", "use_issues_button", "use_edit_page_button",
                "use_source_button"):
        options[key] = False
    options["launch_buttons"] = {}


def setup(app):
    app.connect("html-page-context", drop_repeated_scripts, priority=900)
    app.connect("html-page-context", drop_unused_assets, priority=900)
    # before sphinx-book-theme copies the notebook for download (priority 501)
    app.connect("html-page-context", add_cached_outputs, priority=400)
    app.connect("html-page-context", make_standalone, priority=450)
    app.connect("html-page-context", image_sizes)
    app.connect("html-page-context", drop_print_button, priority=600)
    # after pydata-sphinx-theme writes pygments.css (build-finished, priority 500)
    app.connect("build-finished", lighten_pages, priority=900)
    app.connect("config-inited", repository_buttons, priority=900)
    # the formulas typeset at build time (Node.js and npm mathjax-full, when they are here)
    app.setup_extension("attnmath_mathjax")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
