"""Where a book build spends its time: one line per Sphinx phase, printed only when asked.

With ``ATTNMATH_BUILD_TRACE`` set in the environment, the build prints ``[trace]`` lines to
standard error: the seconds since the build started (the value of the variable when it is a
Unix time, as ``bench/bench_rebuild.py`` sets it; else since this extension was loaded) at each
phase (extensions loaded, builder ready, outdated documents decided, each document read, the
environment updated, each page resolved and written, build finished) and how long each phase
took. Without the variable the extension only connects its handlers, which do nothing.
"""

from __future__ import annotations

import os
import sys
import time

_LOADED = time.time()


def _start() -> float:
    value = os.environ.get("ATTNMATH_BUILD_TRACE", "")
    try:
        return float(value)
    except ValueError:
        return _LOADED


class Trace:
    """The phases of one build, each printed with its time stamp as it ends."""

    def __init__(self, start: float):
        self.start = start
        self.last = start
        self.counts: dict[str, int] = {}

    def mark(self, phase: str, detail: str = "") -> None:
        now = time.time()
        print(f"[trace] {now - self.start:7.2f} s  (+{now - self.last:6.2f} s)  {phase}"
              f"{'  ' + detail if detail else ''}", file=sys.stderr, flush=True)
        self.last = now

    def count(self, phase: str, detail: str) -> None:
        """Mark the first of a repeated event, and each one after a pause of a second or more."""
        n = self.counts[phase] = self.counts.get(phase, 0) + 1
        if n == 1 or time.time() - self.last >= 1.0:
            self.mark(f"{phase} #{n}", detail)


#: A handler that takes longer than this is named in the trace.
SLOW_HANDLER_SECONDS = 0.3


def _timed(trace: Trace, event: str, handler):
    def run(*args, **kwargs):
        began = time.time()
        try:
            return handler(*args, **kwargs)
        finally:
            took = time.time() - began
            if took >= SLOW_HANDLER_SECONDS:
                name = f"{getattr(handler, '__module__', '?')}.{getattr(handler, '__qualname__', handler)}"
                trace.mark(f"handler of {event} took {took:.2f} s", name)
    return run


def time_handlers(app, trace: Trace) -> None:
    """Every event handler connected so far names itself in the trace when it is slow."""
    for event, listeners in app.events.listeners.items():
        app.events.listeners[event] = [
            listener._replace(handler=_timed(trace, event, listener.handler)) for listener in listeners]


def _connect(app, trace: Trace) -> None:
    app.connect("builder-inited", lambda app: (trace.mark("builder ready", app.builder.name),
                                               time_handlers(app, trace)), priority=0)
    app.connect("env-get-outdated", lambda app, env, added, changed, removed: trace.mark(
        "outdated decided", f"{len(added)} added, {len(changed)} changed, {len(removed)} removed") or [],
        priority=1000)
    app.connect("env-before-read-docs", lambda app, env, docs: trace.mark(
        "reading starts", f"{len(docs)} documents: {', '.join(sorted(docs))[:300]}"), priority=1000)
    app.connect("doctree-read", lambda app, doctree: trace.count("read", app.env.docname))
    app.connect("env-updated", lambda app, env: trace.mark("environment updated") or [], priority=1000)
    app.connect("env-check-consistency", lambda app, env: trace.mark("consistency checked"), priority=1000)
    app.connect("doctree-resolved", lambda app, doctree, docname: trace.count("resolved", docname))
    app.connect("html-page-context", lambda app, page, *rest: trace.count("page written", page))
    app.connect("build-finished", lambda app, exc: trace.mark("build finished (before other handlers)"),
                priority=0)
    app.connect("build-finished", lambda app, exc: trace.mark("build finished (after every handler)"),
                priority=1000)


def setup(app):
    if os.environ.get("ATTNMATH_BUILD_TRACE"):
        trace = Trace(_start())
        trace.mark("extensions loading", "")
        app.connect("config-inited", lambda app, config: trace.mark("configuration read"))
        _connect(app, trace)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
