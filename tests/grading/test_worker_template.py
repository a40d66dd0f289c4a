"""Workers forked from a template (level ``namespaces``): the same isolation as a started worker."""

from __future__ import annotations

import dataclasses
import json

import pytest

from attngrade import plain
from attngrade import sandbox as sb
from attngrade.sandbox import Limits, WorkerJob, run_worker


def _job(source: str) -> WorkerJob:
    return WorkerJob(
        cells=[{"id": "answer", "source": source}],
        parts=[{"id": "p", "function": "probe", "trace": [False]}],
        inputs=plain.pack({"p": [((), {})]}),
        blocked=["attnmath", "attngrade", "torch"],
    )


def _out(run) -> dict:
    assert run.end == "done", (run.end, run.detail, run.stderr[-2000:])
    record = run.parts["p"].records[0]
    assert record["out"] is not None, (record, run.memory, run.stderr[-2000:])  # a lost case says why
    return json.loads(record["out"])


#: What one student's worker leaves behind, where the next one would see it if they shared anything.
LEAVE = r"""
import builtins, json, os, sys, stat, numpy as np
builtins.left_by_first = 1
np.left_by_first = 1
sys.modules["left_by_first"] = sys
with open("/tmp/left_by_first", "w") as fh:
    fh.write("x")

def probe():
    return json.dumps({"pid": os.getpid(), "sockets": _sockets()})

def _sockets():
    found = []
    for fd in range(3, 256):
        try:
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                found.append(fd)
        except OSError:
            pass
    return found
"""

LOOK = r"""
import builtins, json, os, sys, numpy as np

def probe():
    return json.dumps({
        "builtins": hasattr(builtins, "left_by_first"), "numpy": hasattr(np, "left_by_first"),
        "modules": "left_by_first" in sys.modules, "file": os.path.exists("/tmp/left_by_first"),
        "pid": os.getpid(),
    })
"""


@pytest.fixture()
def namespaces(isolation):
    if isolation.mode != "namespaces":
        pytest.skip("the worker template serves the namespaces level (root on Linux)")
    iso = dataclasses.replace(isolation, template=None)
    yield iso
    iso.close()


def test_every_student_gets_a_fresh_worker_from_one_template(namespaces):
    first = _out(run_worker(_job(LEAVE), namespaces, Limits(timeout=30)))
    template = namespaces.template
    assert template is not None and template.proc.poll() is None, "the worker was forked from the template"
    second = _out(run_worker(_job(LOOK), namespaces, Limits(timeout=30)))
    assert namespaces.template is template, "one template per class"
    assert first["pid"] == second["pid"] == 2, "each worker is the first child in a PID namespace of its own"
    assert first["sockets"] == [], "the template's socket is not in the worker"
    assert not any(second[k] for k in ("builtins", "numpy", "modules", "file")), second


def test_closing_the_isolation_ends_its_template_and_a_later_worker_starts_another(namespaces):
    _out(run_worker(_job(LOOK), namespaces, Limits(timeout=30)))
    template = namespaces.template
    namespaces.close()
    assert namespaces.template is None and template.proc.poll() is not None
    _out(run_worker(_job(LOOK), namespaces, Limits(timeout=30)))
    assert namespaces.template is not None and namespaces.template is not template


def test_without_a_template_the_worker_is_started_afresh(namespaces, monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError("no template here")

    monkeypatch.setattr(sb, "_Template", refuse)
    out = _out(run_worker(_job(LOOK), namespaces, Limits(timeout=30)))
    assert namespaces.template is None and out["pid"] == 2


# ------------------------------------------------------------------ honest work in the worker

POOL = r"""
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.pool import ThreadPool

executor, pool = ThreadPoolExecutor(2), ThreadPool(2)
both = threading.Barrier(2)
list(executor.map(lambda _: both.wait(), range(2)))  # both of the executor's threads exist now
assert pool.map(abs, [-1]) == [1]

def probe(n):
    return json.dumps([sorted(executor.map(lambda i: i * i, range(n))), pool.map(abs, range(-n, 0))])
"""


def test_thread_pools_made_before_a_memory_case_work_in_the_cases_process(isolation):
    """A memory case runs in a fork of the worker, where the pools' threads do not exist: the
    worker starts them again there (the call waited for ever before, and the part timed out)."""
    if isolation.memory == "none":
        pytest.skip("memory cases run in a process of their own only where the grader counts memory per case")
    job = WorkerJob(
        cells=[{"id": "answer", "source": POOL}],
        parts=[{"id": "p", "function": "probe", "trace": [True]}],
        inputs=plain.pack({"p": [((), {})]}),
        blocked=["attnmath", "attngrade", "torch"],
        held={"p": {0: plain.pack(((4,), {}))}},
        # room to spare: what is tested is that the pools work, not a budget (the pages a fork
        # touches on a busy host are charged to the case's group; 64 MiB lost the case once in CI)
        allowed={"p": {0: 512 << 20}},
    )
    run = run_worker(job, isolation, Limits(timeout=20))
    assert _out(run) == [[0, 1, 4, 9], [4, 3, 2, 1]]
    assert run.memory[("p", 0)]["peak_call"] is not None, "the case ran in its own memory group"



def _forks_that_fail(pool, call, forks: int) -> dict[str, int]:
    """Fork ``forks`` times right after a call on ``pool`` (its threads still busy finishing it),
    restart the pool's threads in the fork as a memory case's process does, and call again there:
    how many forks raised, and how many waited past 2 s."""
    import os
    import signal

    from attngrade.worker import _other_threads, _restart_pool_threads

    failed = {"raised": 0, "waited": 0}
    for _ in range(forks):
        call(pool)
        threads = _other_threads()
        pid = os.fork()
        if pid == 0:  # the fork: exit 0 when the call returns, 3 when it raises, SIGALRM when it waits
            code = 3
            try:
                signal.alarm(2)
                _restart_pool_threads(threads)
                call(pool)
                code = 0
            finally:
                os._exit(code)
        status = os.waitpid(pid, 0)[1]
        if os.WIFSIGNALED(status):
            failed["waited"] += 1
        elif os.WEXITSTATUS(status):
            failed["raised"] += 1
    return failed


def test_a_thread_pool_works_in_every_fork_made_right_after_it_ran():
    """A fork made while an executor's thread still finishes a task (it releases the executor's idle
    semaphore, or waits for the interpreter holding the work queue's lock) kept that lock taken for
    ever: one fork in four waited until the part timed out (30 forks all pass with
    a chance of 2e-4 where that is so) (an honest student's 3 points, corpus
    case 240 on a busy host). Every fork works now; the ThreadPool's list of workers is never
    empty when the call comes (it raised ZeroDivisionError in one fork in fifteen)."""
    from concurrent.futures import ThreadPoolExecutor
    from multiprocessing.pool import ThreadPool

    with ThreadPoolExecutor(2) as executor:
        assert _forks_that_fail(executor, lambda e: list(e.map(abs, [-1, -2])), 30) == {"raised": 0, "waited": 0}
    with ThreadPool(2) as pool:
        assert _forks_that_fail(pool, lambda p: p.map(abs, [-1, -2]), 10)["raised"] == 0


SHELL = """
import json
listed = !echo one; echo two
!pip install numpy
!echo "{2 + 3} $listed" > shell.txt

def probe():
    with open("shell.txt") as fh:
        return json.dumps([listed, fh.read()])
"""


def test_shell_escapes_run_in_the_worker_or_say_why_not(isolation):
    from attngrade.staticcheck import SHELL_ESCAPE, to_python

    python, notes = to_python(SHELL)
    assert SHELL_ESCAPE in python and len(notes) == 3
    run = run_worker(_job(python), isolation, Limits(timeout=10))
    assert _out(run) == [["one", "two"], "5 ['one', 'two']\n"]
    assert b"shell command not run: pip install numpy: installing packages is not part of grading" in run.stderr
