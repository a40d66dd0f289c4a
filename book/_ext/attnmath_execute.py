"""Chapters executed side by side: the notebooks a build must execute run in parallel first.

With ``execute_notebooks: cache``, myst-nb executes each chapter that is not in the execution
cache while Sphinx reads it, one after the other, so a cold build of the book keeps one CPU busy
with one kernel at a time. Before Sphinx reads anything (``env-get-outdated``), this extension
finds the chapters that will be read and have no cached execution, executes them in parallel
(a process per CPU, each with its own kernel, with the book's timeout and in the chapter's folder
as myst-nb would) and stores each result in the execution cache exactly as myst-nb does, so that
reading then finds every chapter in the cache. A chapter whose execution fails is not stored:
myst-nb executes it again while reading and reports the error with its traceback, as without
this extension. A build that has at most one chapter to execute (``make book`` after editing a
chapter) leaves it to myst-nb.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)


def _execute(text: str, cwd: str, timeout: int | None) -> tuple[str | None, float, str | None]:
    """Execute the notebook ``text`` (JSON) in ``cwd``: the executed notebook, the seconds, the error."""
    from build_book import skip_iri_grammar  # book/_ext/build_book.py: a worker starts 1-2 s sooner

    skip_iri_grammar()
    import nbformat
    from jupyter_cache.executors.utils import single_nb_execution

    nb = nbformat.reads(text, as_version=4)
    result = single_nb_execution(nb, cwd=cwd, timeout=timeout, allow_errors=False, meta_override=True)
    if result.err is not None:
        return None, result.time, f"{type(result.err).__name__}: {result.err}"
    return nbformat.writes(nb), result.time, None


def _uncached(env, docs) -> list[tuple[str, object]]:
    """``(path, notebook)`` of each document in ``docs`` that is a notebook without a cached execution."""
    from jupyter_cache import get_cache
    from myst_nb.core.read import create_nb_reader

    cache = get_cache(env.mystnb_config.execution_cache_path or ".jupyter_cache")
    todo = []
    for doc in sorted(docs):
        path = str(env.doc2path(doc))
        if not os.path.isfile(path):
            continue
        content = Path(path).read_text(encoding="utf-8")
        reader = create_nb_reader(path, env.myst_config, env.mystnb_config, content)
        if reader is None:
            continue
        nb = reader.read(content)
        if env.mystnb_config.metadata_key in nb.metadata:  # its own execution settings: myst-nb's
            continue
        try:
            cache.match_cache_notebook(nb)
        except KeyError:
            todo.append((path, nb))
    return todo


def execute_ahead(app, env, added, changed, removed):
    """Execute, in parallel, the notebooks this build would execute one by one."""
    config = getattr(env, "mystnb_config", None)
    if config is None or config.execution_mode != "cache" or app.builder.format != "html":
        return []
    todo = _uncached(env, set(added) | set(changed))
    if len(todo) < 2:
        return []
    import nbformat
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    cache = get_cache(config.execution_cache_path or ".jupyter_cache")
    workers = min(len(todo), os.cpu_count() or 1)
    logger.info(f"executing {len(todo)} notebooks, {workers} at a time ...")
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        jobs = {path: pool.submit(_execute, nbformat.writes(nb), str(Path(path).parent), config.execution_timeout)
                for path, nb in todo}
        for path, job in jobs.items():
            executed, seconds, error = job.result()
            if error is not None:  # myst-nb executes it again and reports the error
                logger.info(f"{path}: execution failed ({error}); it is executed again while read")
                continue
            cache.cache_notebook_bundle(
                CacheBundleIn(nbformat.reads(executed, as_version=4), path, data={"execution_seconds": seconds}),
                check_validity=False, overwrite=True)
    return []


def setup(app):
    # after the claim tests have started in the background (attnmath_claims, default priority)
    app.connect("env-get-outdated", execute_ahead, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
