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

Two costs of starting each chapter's kernel are paid once per build instead: every kernel is
forked from a kernel server that has imported NumPy, PyTorch and matplotlib already
(``book/_ext/attnmath_kernels.py``), and a kernel is killed after its last cell rather than shut
down (its outputs are all in by then; the shutdown costs half a second of CPU).

The execution cache knows a chapter by its code cells only, but the chapters' outputs also come
from the library and the book's own modules (``book/figstyle.py``). When any of those files
changes (:func:`code_digest`), every cached execution is dropped and every chapter is read and
executed again, so a build never shows outputs of code that is no longer there.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)


def _forked_kernel_manager(server: str):
    """A Jupyter kernel manager class whose Python kernels are forked by the kernel server
    listening on ``server`` (:mod:`attnmath_kernels`)."""
    from attnmath_kernels import kernel_command
    from jupyter_client import AsyncKernelManager

    class ForkedKernelManager(AsyncKernelManager):
        @property
        def kernel_spec(self):
            if self._kernel_spec is None:
                spec = AsyncKernelManager.kernel_spec.fget(self)
                if spec is not None and spec.language == "python":
                    spec.argv = [*kernel_command(server), "-f", "{connection_file}"]
            return self._kernel_spec

    return ForkedKernelManager


def _execute(text: str, cwd: str, timeout: int | None, server: str | None = None
             ) -> tuple[str | None, float, str | None]:
    """Execute the notebook ``text`` (JSON) in ``cwd``, its kernel forked by the kernel server
    ``server`` if given: the executed notebook, the seconds, the error."""
    from build_book import skip_iri_grammar  # book/_ext/build_book.py: a worker starts 1-2 s sooner

    skip_iri_grammar()
    import nbformat
    from jupyter_cache.executors.utils import single_nb_execution

    nb = nbformat.reads(text, as_version=4)
    options = {} if server is None else {"kernel_manager_class": _forked_kernel_manager(server)}
    try:
        result = single_nb_execution(nb, cwd=cwd, timeout=timeout, allow_errors=False, meta_override=True,
                                     shutdown_kernel="immediate", **options)
    except Exception as exc:  # noqa: BLE001  a kernel that died or did not start: myst-nb tries again
        return None, 0.0, f"{type(exc).__name__}: {exc}"
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


def code_digest(root: Path) -> str:
    """SHA-256 over the files the chapters' outputs depend on besides their own cells: the library
    (``lib/attnmath``) and the book's modules (``book/*.py``), by path and content."""
    digest = hashlib.sha256()
    files = sorted((root / "lib" / "attnmath").rglob("*.py")) + sorted((root / "book").glob("*.py"))
    for path in files:
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def drop_stale_executions(cache, record: Path, digest: str) -> bool:
    """Drop every cached execution when ``digest`` differs from the one in ``record`` (then store
    it); True when something was dropped. A first build (no record) drops nothing."""
    before = record.read_text().strip() if record.exists() else None
    stale = before is not None and before != digest
    if stale:
        for entry in cache.list_cache_records():
            cache.remove_cache(entry.pk)
    if before != digest:
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text(digest + "\n")
    return stale


def execute_ahead(app, env, added, changed, removed):
    """Execute, in parallel, the notebooks this build would execute one by one; when the library or
    the book's modules changed, every chapter first (returned, so that Sphinx reads them again)."""
    config = getattr(env, "mystnb_config", None)
    if config is None or config.execution_mode != "cache" or app.builder.format != "html":
        return []
    from jupyter_cache import get_cache

    cache_path = Path(config.execution_cache_path or ".jupyter_cache")
    cache = get_cache(str(cache_path))
    record = cache_path.with_name(cache_path.name + ".code-digest")
    again = set()
    if drop_stale_executions(cache, record, code_digest(Path(app.srcdir))):
        again = {doc for doc in env.found_docs if doc not in added and doc not in changed}
        logger.info("the library or the book's modules changed: every chapter is executed again")
    todo = _uncached(env, set(added) | set(changed) | again)
    again = sorted(doc for doc in again if str(env.doc2path(doc)) in {path for path, _nb in todo})
    if len(todo) < 2:
        return again
    import nbformat
    from jupyter_cache.base import CacheBundleIn

    from attnmath_kernels import kernel_server

    workers = min(len(todo), os.cpu_count() or 1)
    logger.info(f"executing {len(todo)} notebooks, {workers} at a time ...")
    with kernel_server() as server, \
            ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        jobs = {path: pool.submit(_execute, nbformat.writes(nb), str(Path(path).parent),
                                  config.execution_timeout, server)
                for path, nb in todo}
        for path, job in jobs.items():
            executed, seconds, error = job.result()
            if error is not None:  # myst-nb executes it again and reports the error
                logger.info(f"{path}: execution failed ({error}); it is executed again while read")
                continue
            cache.cache_notebook_bundle(
                CacheBundleIn(nbformat.reads(executed, as_version=4), path, data={"execution_seconds": seconds}),
                check_validity=False, overwrite=True)
    return again


def setup(app):
    # after the claim tests have started in the background (attnmath_claims, default priority)
    app.connect("env-get-outdated", execute_ahead, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
