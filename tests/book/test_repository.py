"""One setting, `repository: url:` in _config.yml, decides every link to the public repository
(book/_ext/attnmath_html.py). With a URL, every page links the repository, every chapter has
launch buttons (Binder, JupyterHub, Colab) that open its downloadable notebook where the built
book is published, the built book carries the requirements Binder builds from, and the landing
page's "Run" points at the buttons; without one, nothing links to nowhere and the landing page
says how to run locally. Both states are
built here as a book of two pages (a landing page and one notebook chapter), not the whole book."""

from __future__ import annotations

import html
import json
import re
import sys
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
from attnmath_html import binder_requirements, launch_links, public_repository  # noqa: E402

URL = "https://github.com/attn-course/attention-math"
LAUNCH = {"binderhub_url": "https://mybinder.org", "colab_url": "https://colab.research.google.com",
          "jupyterhub_url": "https://hub.example.edu", "notebook_interface": "jupyterlab"}

CONF = '''
import sys
sys.path.insert(0, {ext!r})
extensions = ["myst_nb", "attnmath_html"]
html_theme = "sphinx_book_theme"
html_theme_options = {{"repository_url": {url!r}, "repository_branch": "main", "path_to_docs": "",
                      "launch_buttons": {launch!r}, "use_download_button": True}}
nb_execution_mode = "off"
myst_enable_extensions = ["colon_fence"]
html_static_path = []
'''
INDEX = """# The book

:::{only} public_repository
Run online: {launch}`Binder <book/01_x>` or {launch}`Colab <book/01_x>`.
:::

:::{only} not public_repository
Run locally: pip install -r requirements.txt.
:::

```{toctree}
book/01_x
```
"""
CHAPTER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
# A chapter

```{code-cell} ipython3
x = 1
```
"""


def _build(tmp_path: Path, url: str) -> Path:
    """The two-page book built with ``repository_url`` ``url``; its HTML folder."""
    from sphinx.application import Sphinx

    src = tmp_path / "src"
    (src / "book").mkdir(parents=True)
    (src / "conf.py").write_text(CONF.format(ext=str(ROOT / "book" / "_ext"), url=url, launch=LAUNCH))
    (src / "index.md").write_text(INDEX)
    (src / "book" / "01_x.md").write_text(CHAPTER)
    out = tmp_path / "html"
    app = Sphinx(str(src), str(src), str(out), str(tmp_path / "doctrees"), "html", status=None,
                 warning=None, freshenv=True)
    app.build()
    return out


@pytest.fixture(scope="module", params=["", URL], ids=["no repository", "public repository"])
def book(request, tmp_path_factory):
    return request.param, _build(tmp_path_factory.mktemp("book"), request.param)


def _hrefs(page: Path) -> list[str]:
    return re.findall(r'href="([^"#]+)', page.read_text())


def test_the_pages_link_the_repository_only_when_it_is_set(book):
    url, out = book
    index, chapter = (html.unescape((out / page).read_text()) for page in ("index.html", "book/01_x.html"))
    if url:
        for page in (index, chapter):
            assert f'href="{URL}"' in page, "no repository button"
        links = launch_links(public_repository(URL, launch=LAUNCH), "book/01_x")
        assert sorted(links) == ["Binder", "Colab", "JupyterHub"]
        for service, link in links.items():
            assert f'href="{link}"' in chapter, f"no {service} button on the chapter"
        assert f'href="{links["Binder"]}"' in index and f'href="{links["Colab"]}"' in index
        assert "Run online" in index and "Run locally" not in index
        assert (out / "requirements.txt").read_text() == binder_requirements(public_repository(URL, launch=LAUNCH))
        downloaded = json.loads((out / "_sources" / "book" / "01_x.ipynb").read_text())
        code = ["".join(c["source"]) for c in downloaded["cells"] if c["cell_type"] == "code"]
        assert f"git+{URL}@main" in code[0] and code[-1] == "x = 1", "the notebook does not install the library first"
    else:
        assert "github.com" not in index + chapter and "launch-buttons" not in chapter
        assert "source-repository-button" not in index + chapter
        assert "Run locally" in index and "Run online" not in index and not (out / "requirements.txt").exists()
        for page in (out / "index.html", out / "book" / "01_x.html"):
            for href in _hrefs(page):
                if "://" not in href and not href.startswith("mailto:"):
                    assert (page.parent / href.split("?")[0]).resolve().exists(), f"{page.name}: {href} leads nowhere"


def test_the_launch_links_open_the_chapter():
    repository = public_repository(URL + ".git", "main", "", LAUNCH, "gh-pages")
    assert repository["install"] == f"attnmath @ git+{URL}@main"
    assert repository["raw"] == "https://raw.githubusercontent.com/attn-course/attention-math/main/"
    links = launch_links(repository, "book/08_flash")
    # Each opens the downloaded notebook where the built book is published (ghp-import's branch).
    binder = urlparse(links["Binder"])
    assert binder.path == "/v2/gh/attn-course/attention-math/gh-pages"
    assert unquote(parse_qs(binder.query)["urlpath"][0]) == "lab/tree/_sources/book/08_flash.ipynb"
    hub = parse_qs(urlparse(links["JupyterHub"]).query)
    assert hub == {"repo": [URL], "branch": ["gh-pages"], "urlpath": ["lab/tree/attention-math/_sources/book/08_flash.ipynb"]}
    assert links["Colab"] == ("https://colab.research.google.com/github/attn-course/attention-math/blob/"
                              "gh-pages/_sources/book/08_flash.ipynb")
    assert binder_requirements(repository).splitlines()[2:] == [
        "--extra-index-url https://download.pytorch.org/whl/cpu", f"attnmath[torch] @ git+{URL}@main", "matplotlib"]
    nested = public_repository(URL, "dev", "course/", LAUNCH)
    assert nested["install"].endswith("@dev#subdirectory=course") and nested["raw"].endswith("/dev/course/")
    other = launch_links(public_repository("https://git.example.org/a/b", launch=LAUNCH), "book/01_x")
    assert sorted(other) == ["Binder", "JupyterHub"]  # Colab opens notebooks on GitHub only


def test_no_url_no_links_and_a_bad_url_is_named():
    assert public_repository("") == {} and public_repository("  ") == {}
    with pytest.raises(ValueError, match="repository: url:.*github.com/x"):
        public_repository("github.com/x")
