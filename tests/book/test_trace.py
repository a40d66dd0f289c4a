"""The build trace (book/_ext/attnmath_trace.py): silent unless asked, one line per phase, slow
event handlers named, and handlers' results and errors passed through unchanged."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from sphinx.events import EventListener

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import attnmath_trace as trace  # noqa: E402


class FakeApp:
    def __init__(self):
        self.connected = []
        self.events = SimpleNamespace(listeners={})

    def connect(self, event, handler, priority=500):
        self.connected.append(event)
        listener = EventListener(len(self.connected), handler, priority)
        self.events.listeners.setdefault(event, []).append(listener)


def test_without_the_variable_the_trace_connects_nothing(monkeypatch):
    monkeypatch.delenv("ATTNMATH_BUILD_TRACE", raising=False)
    app = FakeApp()
    assert trace.setup(app)["parallel_read_safe"]
    assert app.connected == []


def test_with_the_variable_each_phase_prints_its_time_since_the_given_start(monkeypatch, capsys):
    started = time.time() - 5
    monkeypatch.setenv("ATTNMATH_BUILD_TRACE", repr(started))
    app = FakeApp()
    trace.setup(app)
    for event in ("config-inited", "builder-inited", "env-get-outdated", "env-updated", "build-finished"):
        assert event in app.connected
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("[trace]") and "extensions loading" in lines[0]
    assert 5 <= float(lines[0].split()[1]) < 60


def test_a_repeated_event_is_printed_once_unless_a_second_passes(capsys):
    t = trace.Trace(time.time())
    for name in ("a", "b", "c"):
        t.count("read", name)
    t.last -= 2  # a pause of two seconds
    t.count("read", "d")
    lines = capsys.readouterr().err.splitlines()
    assert [line.split()[-1] for line in lines] == ["a", "d"]
    assert "read #1" in lines[0] and "read #4" in lines[1]


def test_slow_handlers_are_named_and_every_handler_keeps_its_result_and_errors(capsys, monkeypatch):
    monkeypatch.setattr(trace, "SLOW_HANDLER_SECONDS", 0.05)
    app = FakeApp()

    def slow(app, x):
        time.sleep(0.06)
        return x + 1

    def fast(app, x):
        return x * 2

    def failing(app, x):
        raise ValueError("x")

    for handler in (slow, fast, failing):
        app.connect("env-updated", handler)
    trace.time_handlers(app, trace.Trace(time.time()))
    wrapped = [listener.handler for listener in app.events.listeners["env-updated"]]
    assert [h(app, 3) for h in wrapped[:2]] == [4, 6]
    with pytest.raises(ValueError, match="x"):
        wrapped[2](app, 3)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "handler of env-updated took" in lines[0] and lines[0].endswith("slow")
