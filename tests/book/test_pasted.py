"""A page that pastes what a chapter's notebook glued (book/_ext/attnmath_pasted.py): a glued
Markdown table arrives as the book's own table, and the page is read again whenever that notebook
is, so the data appendix of chapter 8 never shows older values than the chapter. No build is
needed: the hooks run on a made-up environment and glue cache."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

from docutils import nodes
from docutils.utils import new_document
from myst_nb.ext.glue.crossref import read_glue_cache
from myst_nb.ext.glue.utils import PendingGlueReference

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import attnmath_pasted as pasted  # noqa: E402

TABLE = "Rates against N.\n\n| setting | 512 | 1024 |\n| --- | ---: | ---: |\n| bf16, 64 | 1.23 | – |\n\nA note."


def _read(app, docname: str, *sources: str) -> None:
    app.env.docname = docname
    tree = nodes.section("", *(PendingGlueReference(refdoc=s, key="k") for s in sources))
    pasted.record_sources(app, tree)


def test_a_page_is_read_again_with_the_notebook_it_pastes_from():
    app = SimpleNamespace(env=SimpleNamespace())
    _read(app, "book/flash_gpu_data", "book/08_flash", "book/08_flash")
    _read(app, "book/01_softmax")
    env = app.env
    assert pasted.pages_to_reread(app, env, set(), {"book/08_flash"}, set()) == ["book/flash_gpu_data"]
    assert pasted.pages_to_reread(app, env, {"book/08_flash"}, set(), set()) == ["book/flash_gpu_data"]
    assert pasted.pages_to_reread(app, env, set(), {"book/09_moe"}, set()) == []
    # read already: nothing to add
    assert pasted.pages_to_reread(app, env, set(), {"book/08_flash", "book/flash_gpu_data"}, set()) == []
    _read(app, "book/flash_gpu_data")  # the page no longer pastes anything
    assert pasted.pages_to_reread(app, env, set(), {"book/08_flash"}, set()) == []


def test_parallel_reads_merge_and_a_removed_page_is_forgotten():
    main, worker = SimpleNamespace(env=SimpleNamespace()), SimpleNamespace(env=SimpleNamespace())
    _read(worker, "book/flash_gpu_data", "book/08_flash")
    _read(worker, "book/other", "book/02_attention")
    pasted.merge(main, main.env, {"book/flash_gpu_data"}, worker.env)
    assert main.env.attnmath_pasted_from == {"book/flash_gpu_data": {"book/08_flash"}}
    pasted.purge(main, main.env, "book/flash_gpu_data")
    assert pasted.pages_to_reread(main, main.env, set(), {"book/08_flash"}, set()) == []


def test_glued_markdown_is_pasted_as_a_table(tmp_path):
    """A block paste of a Markdown value becomes its paragraphs and a docutils table (cells
    aligned as the Markdown says); text pastes and values without Markdown are left to myst-nb."""
    (tmp_path / "book").mkdir()
    cache = {"table": {"data": {"text/markdown": TABLE, "text/plain": "<Markdown>"}},
             "number": {"data": {"text/plain": "512"}}}
    (tmp_path / "book" / "08_flash.glue.json").write_text(json.dumps(cache))
    read_glue_cache.cache_clear()
    document = new_document("<page>")
    refs = [PendingGlueReference(refdoc="book/08_flash", key="table"),
            PendingGlueReference(refdoc="book/08_flash", key="table", gtype="text", inline=True),
            PendingGlueReference(refdoc="book/08_flash", key="number")]
    document += nodes.section("", *refs)
    document.settings.env = SimpleNamespace(mystnb_config=SimpleNamespace(output_folder=str(tmp_path)))
    pasted.PasteMarkdown(document).run()
    section = document.children[0]
    assert [child.tagname for child in section.children] == \
        ["paragraph", "table", "paragraph", "PendingGlueReference", "PendingGlueReference"]
    table = section.children[1]
    cells = [entry.astext() for entry in table.findall(nodes.entry)]
    assert cells == ["setting", "512", "1024", "bf16, 64", "1.23", "–"]
    assert [entry.get("classes") for entry in table.findall(nodes.entry)][4] == ["text-right"]
    assert pasted.TABLE_CLASS in table["classes"]
    assert section.children[2].astext() == "A note."
