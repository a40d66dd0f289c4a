"""Small fixes to the HTML pages of the book, so that they load without errors in a browser.

Jupyter Book 1.x with Sphinx 7.4 writes the inline configuration scripts of ``sphinx_thebe``
(``const THEBE_JS_URL = ...``) and of ``sphinx_togglebutton`` twice into every page; the second
copy redeclares a ``const`` and the browser reports a ``SyntaxError``. This extension drops
repeated scripts from each page's list, keeping the first of each.

The download menu offers each chapter as an ``.ipynb`` notebook, copied by sphinx-book-theme
from ``_build/jupyter_execute/``. With ``execute_notebooks: cache``, myst-nb 1.4 writes that
notebook without the outputs it took from the execution cache; this extension merges them in
first, so that the downloaded notebook shows the same results as the page, and then rewrites its
Markdown for JupyterLab (``attnmath_notebook.py``), so that it runs and reads on its own. The values
glued into the text come from the page's ``.glue.json`` beside that notebook, which myst-nb writes
in both cases: a chapter it has just executed is written without its hidden glue outputs.

The repository URL (``repository: url:`` in ``_config.yml``) is the one setting for links to the
repository. With a URL, every page has the repository button, and every chapter launch buttons
(:func:`launch_links`: Binder, JupyterHub and Colab open the chapter's downloadable notebook
where the built book is published), the downloaded notebooks
install the library and fetch their data from the repository, and the landing page's pages show
their ``{only} public_repository`` text. While it is empty, none of these is shown, so that no
page links to nowhere, and the ``{only} not public_repository`` text says how to run locally.

The download menu of a chapter offers the notebook (``.ipynb``), the notebook with the data files
it reads (``.zip``, for the chapters that read some) and the same notebook as MyST Markdown
(``.md``, which jupytext opens as a notebook); other pages offer no source download.

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

import posixpath
import re
import shutil
from pathlib import Path

from docutils import nodes


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
    laid out as the page shows it; write it, its MyST form and its ``.zip`` to ``_sources``."""
    config = getattr(app.env, "mystnb_config", None)
    if config is None:
        return
    path = Path(config.output_folder) / f"{pagename}.ipynb"
    source = Path(app.env.doc2path(pagename))
    if not path.exists():
        return
    import nbformat
    from attnmath_listing import cell_width, fit_code
    from attnmath_notebook import MARK, Resolver, chapter_zip, myst_text, page_glue, standalone_notebook

    nb = nbformat.read(path, as_version=4)  # as myst-nb wrote it: left as it is for the next build
    macros = ((app.config.mathjax3_config or {}).get("tex") or {}).get("macros") or {}
    repository = (app.config.html_context or {}).get("attnmath_repository") or {}
    name = Path(pagename).name
    # the glued values as myst-nb saved them: a chapter executed afresh (not from the cache) is
    # written to the output folder without them
    resolver = Resolver(app.env, docname=pagename, glue=page_glue(config.output_folder, pagename))
    standalone_notebook(nb, source.parent, macros, resolver, repository, name)
    for cell in nb.cells:  # the code as the page shows it, in lines that fit the column
        if cell.cell_type == "code":
            cell.source = fit_code(cell.source, cell_width(cell.metadata.get("tags", [])))
    # Offer it in the download menu (sphinx-book-theme copies the notebook only for its own
    # launch buttons, which this book does not use).
    target = Path(app.outdir) / "_sources" / f"{pagename}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target)
    target.with_suffix(".md").write_text(myst_text(nb))
    mark = nb.metadata.get(MARK)
    zipped, data = target.with_suffix(".zip"), mark.get("data", []) if isinstance(mark, dict) else []
    if data:
        root = source.parent.parent
        files = {f: (root / f).read_bytes() for f in data}
        zipped.write_bytes(chapter_zip(target.read_text(), target.name, files, source.parent.name, name))
        context["attnmath_zip"] = f"{pagename}.zip"
    elif zipped.exists():
        zipped.unlink()
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


def download_menu(app, pagename, templatename, context, doctree):
    """The download menu: a chapter's notebook, its ``.zip`` (notebook and data) and its MyST
    notebook; no ".pdf" entry (the browser's print of one page with clipped code; the whole book
    is a PDF of its own, ``make pdf``) and no source of a page that is not a notebook. Sphinx
    copies no page source over the MyST notebook written here (``sourcename`` emptied)."""
    notebook = context.get("ipynb_source")
    for group in list(context.get("header_buttons") or []):
        if not isinstance(group, dict) or group.get("label") != "download-buttons":
            continue
        kept = []
        for button in group.get("buttons") or []:
            kind = button.get("label")
            if kind == "download-source-button" and notebook:
                kept.append({**button, "text": "MyST notebook (.md)",
                             "tooltip": "The same notebook as MyST Markdown, which jupytext opens"})
            elif kind == "download-notebook-button":
                kept.append({**button, "text": "Notebook (.ipynb)", "tooltip": "The chapter as a notebook"})
                if context.get("attnmath_zip"):
                    kept.append({**button, "url": button["url"][:-len(".ipynb")] + ".zip",
                                 "text": "Notebook and its data (.zip)", "icon": "fas fa-file",
                                 "label": "download-zip-button",
                                 "tooltip": "The notebook with the data files it reads, ready to unpack"})
        group["buttons"] = kept
        if not kept:
            context["header_buttons"].remove(group)
    context["sourcename"] = ""


#: The logos sphinx-book-theme ships for its launch buttons (in its _static/images).
_LOGOS = {"Binder": "logo_binder.svg", "JupyterHub": "logo_jupyterhub.svg", "Colab": "logo_colab.png"}


def public_repository(url: str, branch: str = "main", path: str = "", launch: dict | None = None,
                      pages_branch: str = "gh-pages") -> dict:
    """What the book links to in its public repository ``url`` (``https://github.com/org/repo``):
    the pip requirement that installs the library from it, the address of its raw files, and
    the launch settings (``binderhub_url``, ``jupyterhub_url``, ``colab_url``); ``{}`` without a
    URL. ``path``: the book's folder in the repository; ``pages_branch``: the branch the built
    book is published to (``ghp-import -n -p -f _build/html``), where Colab finds the notebooks."""
    url = (url or "").strip().rstrip("/").removesuffix(".git")
    if not url:
        return {}
    if not re.match(r"^https?://[^/]+/", url):
        raise ValueError(f"repository: url: {url!r} is not the http(s) address of a repository")
    match = re.match(r"^https://(github\.com|gitlab\.com)/([^/]+)/([^/]+)$", url)
    provider, org, repo = (match.group(1).split(".")[0], match.group(2), match.group(3)) if match else ("git", "", "")
    path = path.strip("/") + "/" if path.strip("/") else ""
    raw = {"github": f"https://raw.githubusercontent.com/{org}/{repo}/{branch}/{path}",
           "gitlab": f"{url}/-/raw/{branch}/{path}"}.get(provider)
    subdirectory = f"#subdirectory={path.rstrip('/')}" if path else ""
    return {"url": url, "provider": provider, "org": org, "repo": repo, "branch": branch, "path": path,
            "pages_branch": pages_branch, "raw": raw, "install": f"attnmath @ git+{url}@{branch}{subdirectory}",
            "launch": {k: str(v).rstrip("/") for k, v in (launch or {}).items() if str(v or "").strip()}}


def launch_links(repository: dict, docname: str) -> dict[str, str]:
    """The launch URLs of the chapter ``docname`` (``book/01_softmax``), by service. Each opens
    the chapter's downloadable notebook (the page, with its numbers written in) where the built
    book is published, the repository's ``pages_branch`` (``_sources/<docname>.ipynb``): Binder
    builds its environment from the ``requirements.txt`` published beside it
    (:func:`binder_requirements`), a JupyterHub pulls the branch with nbgitpuller, and Colab
    opens the notebook from GitHub. The notebook installs ``attnmath`` where it is missing and
    fetches its data files from the repository."""
    from urllib.parse import quote, urlencode

    launch, links = repository.get("launch") or {}, {}
    notebook, branch = f"_sources/{docname}.ipynb", repository.get("pages_branch") or "gh-pages"
    if launch.get("binderhub_url"):
        where = {"github": f"gh/{repository['org']}/{repository['repo']}",
                 "gitlab": f"gl/{repository['org']}%2F{repository['repo']}"}.get(
                     repository["provider"], f"git/{quote(repository['url'], safe='')}")
        links["Binder"] = f"{launch['binderhub_url']}/v2/{where}/{branch}?urlpath={quote('lab/tree/' + notebook, safe='')}"
    if launch.get("jupyterhub_url"):
        folder = repository["url"].rsplit("/", 1)[-1]
        query = urlencode({"repo": repository["url"], "branch": branch, "urlpath": f"lab/tree/{folder}/{notebook}"})
        links["JupyterHub"] = f"{launch['jupyterhub_url']}/hub/user-redirect/git-pull?{query}"
    if launch.get("colab_url") and repository["provider"] == "github":
        links["Colab"] = f"{launch['colab_url']}/github/{repository['org']}/{repository['repo']}/blob/{branch}/{notebook}"
    return links


def binder_requirements(repository: dict) -> str:
    """The ``requirements.txt`` published at the root of the built book, from which Binder builds
    the environment of its notebooks: the library from the repository, with PyTorch (its CPU
    build) and matplotlib, which the chapters use."""
    return ("# The environment in which Binder runs this book's chapter notebooks (published with the\n"
            "# built book; written by book/_ext/attnmath_html.py).\n"
            "--extra-index-url https://download.pytorch.org/whl/cpu\n"
            f"attnmath[torch] @ git+{repository['url']}@{repository['branch']}"
            f"{'#subdirectory=' + repository['path'].rstrip('/') if repository.get('path') else ''}\n"
            "matplotlib\n")


def write_binder_requirements(app, exception):
    repository = (app.config.html_context or {}).get("attnmath_repository") or {}
    target = Path(app.outdir) / "requirements.txt"
    if exception is None and app.builder.format == "html" and repository:
        target.write_text(binder_requirements(repository))


def launch_buttons(app, pagename, templatename, context, doctree):
    """A chapter's launch menu, when the book names a public repository."""
    repository = (app.config.html_context or {}).get("attnmath_repository") or {}
    if not repository or not context.get("ipynb_source"):
        return
    links = launch_links(repository, pagename)
    if links:
        context["header_buttons"].append({
            "type": "group", "tooltip": "Run this chapter", "icon": "fas fa-rocket", "label": "launch-buttons",
            "buttons": [{"type": "link", "text": service, "url": url, "tooltip": f"Run this chapter on {service}",
                         "icon": f"_static/images/{_LOGOS[service]}"} for service, url in links.items()]})


class launch_reference(nodes.Inline, nodes.TextElement):
    """``{launch}`Binder <01_softmax>```: a link that runs a chapter, made when the page is
    written (:func:`resolve_launch_references`), or its text alone without a public repository."""


def launch_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    match = re.match(r"^(?P<service>.+?)\s*<(?P<target>[^<>]+)>$", text.strip())
    if not match:
        message = inliner.reporter.error(f"{{launch}}`{text}`: write it as `Binder <01_softmax>`", line=lineno)
        return [inliner.problematic(rawtext, rawtext, message)], [message]
    docname = inliner.document.settings.env.docname
    target = posixpath.normpath(posixpath.join(posixpath.dirname(docname), match["target"]))
    node = launch_reference(rawtext, match["service"], service=match["service"], docname=target)
    return [node], []


def resolve_launch_references(app, doctree, fromdocname):
    repository = (app.config.html_context or {}).get("attnmath_repository") or {}
    for node in list(doctree.findall(launch_reference)):
        url = launch_links(repository, node["docname"]).get(node["service"]) if repository else None
        if url:
            node.replace_self(nodes.reference(node.astext(), node.astext(), refuri=url))
        else:
            node.replace_self(nodes.Text(node.astext()))


def _pages_branch(app) -> str:
    """``repository: pages_branch:`` of ``_config.yml`` (Jupyter Book passes on only its own keys)."""
    import yaml

    path = Path(app.srcdir) / "_config.yml"
    settings = yaml.safe_load(path.read_text()) if path.exists() else {}
    return str(((settings or {}).get("repository") or {}).get("pages_branch") or "gh-pages")


def repository_buttons(app, config):
    """With a repository URL the repository button and this extension's launch buttons (never the
    theme's, which open a MyST chapter in Colab); without one, no button that needs it."""
    options = config.html_theme_options
    repository = public_repository(options.get("repository_url", ""), options.get("repository_branch") or "main",
                                   options.get("path_to_docs", ""), options.get("launch_buttons"),
                                   _pages_branch(app))
    options["launch_buttons"] = {}
    config.html_context = {**(config.html_context or {}), "attnmath_repository": repository}
    if repository:
        options["use_repository_button"] = True
        app.tags.add("public_repository")
        return
    for key in ("use_repository_button", "use_issues_button", "use_edit_page_button",
                "use_source_button"):
        options[key] = False


def setup(app):
    app.connect("html-page-context", drop_repeated_scripts, priority=900)
    app.connect("html-page-context", drop_unused_assets, priority=900)
    # before sphinx-book-theme copies the notebook for download (priority 501)
    app.connect("html-page-context", add_cached_outputs, priority=400)
    app.connect("html-page-context", make_standalone, priority=450)
    app.connect("html-page-context", image_sizes)
    app.connect("html-page-context", download_menu, priority=600)
    app.connect("html-page-context", launch_buttons, priority=600)
    # after pydata-sphinx-theme writes pygments.css (build-finished, priority 500)
    app.connect("build-finished", lighten_pages, priority=900)
    app.connect("build-finished", write_binder_requirements)
    app.connect("config-inited", repository_buttons, priority=900)
    app.add_node(launch_reference)
    app.add_role("launch", launch_role)
    app.connect("doctree-resolved", resolve_launch_references)
    # the formulas typeset at build time (Node.js and npm mathjax-full, when they are here)
    app.setup_extension("attnmath_mathjax")
    # env_version: raised when the downloads or the buttons change, so that a build rewrites every
    # page and its download (3: downloads as the page, the menu's names, launch buttons)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": 3}
