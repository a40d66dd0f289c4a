"""A page that pastes another notebook's glued values is read again whenever that notebook is
(book/_ext/attnmath_pasted.py): the data appendix of chapter 8 never shows older values than the
chapter. No build is needed: the hooks run on a made-up environment."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

from docutils import nodes
from myst_nb.ext.glue.utils import PendingGlueReference

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import attnmath_pasted as pasted  # noqa: E402


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
