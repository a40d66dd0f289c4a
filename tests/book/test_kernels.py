"""Kernels forked from the kernel server (book/_ext/attnmath_kernels.py) run a chapter as a kernel
started on its own does: the same outputs, folder, command line and module path, each kernel its
own process with nothing of another's, and no kernel outlives its stand-in or the server."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import psutil
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
from attnmath_execute import _execute  # noqa: E402
from attnmath_kernels import PRELOADED, _kill, kernel_command, kernel_server  # noqa: E402

#: What a chapter could notice of how its kernel was started (everything but the preloading).
_LOOK = [
    "import os, sys\nprint(os.getcwd(), os.path.basename(sys.argv[0]), sys.path)",
    "print(sorted(k for k in os.environ if k.startswith(('OPENBLAS', 'MPLBACKEND', 'ATTNMATH_TEST'))))",
    "import numpy as np\nimport matplotlib.pyplot as plt\nprint(plt.get_backend(), np.ones(3) @ np.ones(3))",
    "fig, ax = plt.subplots()\nax.plot([0, 1], [1, 0])\nplt.show()",
    "print('x' in globals(), [m for m in ('torch', 'nbformat', 'matplotlib.pyplot') if m in sys.modules])",
]


def _notebook(*cells: str) -> str:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata.kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nbformat.writes(nb)


def _outputs(text: str) -> list:
    """Each code cell's outputs: printed text, or the kinds of data shown."""
    nb = nbformat.reads(text, as_version=4)
    return [[out.get("text") or sorted(out.get("data", {})) for out in cell.outputs] for cell in nb.cells]


def _run(tmp_path: Path, server: str | None, *cells: str) -> list:
    executed, _seconds, error = _execute(_notebook(*cells), str(tmp_path), 120, server)
    assert error is None, error
    return _outputs(executed)


@pytest.fixture(scope="module")
def server():
    with kernel_server() as sock:
        assert sock is not None
        yield sock


def test_a_forked_kernel_runs_a_notebook_as_one_started_on_its_own(server, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNMATH_TEST_KERNEL", "1")  # the kernel has the client's environment
    fresh = _run(tmp_path, None, *_LOOK)
    forked = _run(tmp_path, server, *_LOOK)
    assert forked[:-1] == fresh[:-1]
    assert str(tmp_path) in fresh[0][0] and "ATTNMATH_TEST_KERNEL" in fresh[1][0]
    assert fresh[3] == [["image/png", "text/plain"]]  # the inline backend's figure
    # the one difference: the forked kernel has the server's modules already, not pyplot
    assert fresh[-1] == ["False ['matplotlib.pyplot']\n"]
    assert forked[-1] == ["False ['torch', 'nbformat', 'matplotlib.pyplot']\n"]
    assert {"torch", "myst_nb.ext.glue"} <= set(PRELOADED) and "matplotlib.pyplot" not in PRELOADED


def test_each_kernel_is_its_own_process_with_its_own_seeds(server, tmp_path):
    look = ("import os, torch, numpy\nx = 1\n"
            "print(os.getpid(), torch.initial_seed(), numpy.random.randint(2**62))")
    first, second = (_run(tmp_path, server, look, "print('x' in globals())") for _ in range(2))
    pid_1, *seeds_1 = first[0][0].split()
    pid_2, *seeds_2 = second[0][0].split()
    assert pid_1 != pid_2
    assert seeds_1[0] != seeds_2[0] and seeds_1[1] != seeds_2[1]  # drawn again, as a new process does
    assert first[1] == second[1] == ["True\n"]


def _server_process(sock: str) -> psutil.Process:
    return next(proc for proc in psutil.process_iter(["cmdline"])
                if proc.info["cmdline"] and proc.info["cmdline"][-2:] == ["serve", sock])


def _gone(pid: int, seconds: float = 30) -> bool:
    """Whether process ``pid`` has ended (or is a zombie, dead but not yet reaped) within ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:  # it may end between any two looks
            return True
        time.sleep(0.05)
    return False


def _start_kernel(tmp_path: Path, sock: str, name: str) -> tuple[subprocess.Popen, int]:
    """A stand-in started as the Jupyter client starts a kernel, and the kernel's process id."""
    from jupyter_client.connect import write_connection_file

    server = _server_process(sock)
    before = {child.pid for child in server.children()}
    connection, _ = write_connection_file(str(tmp_path / f"{name}.json"))
    stand_in = subprocess.Popen([*kernel_command(sock), "-f", connection], cwd=tmp_path)
    deadline = time.monotonic() + 60
    while not (new := {child.pid for child in server.children()} - before):
        assert time.monotonic() < deadline and stand_in.poll() is None, "no kernel started"
        time.sleep(0.05)
    return stand_in, new.pop()


def test_a_kernel_ends_with_its_stand_in_and_with_the_server(server, tmp_path):
    stand_in, pid = _start_kernel(tmp_path, server, "killed")
    stand_in.kill()  # as the client kills it after the last cell
    stand_in.wait()
    assert _gone(pid)
    with kernel_server() as sock:
        stand_in, pid = _start_kernel(tmp_path, sock, "left")
    assert _gone(pid)
    assert stand_in.wait(timeout=30) != 0  # its kernel went without an exit status


def test_a_kernel_killed_before_it_has_its_own_process_group_is_killed_at_once():
    """The server may stop a kernel it forked a moment ago, before the kernel's ``setsid``: the
    kill must reach it then too (a signal to its group alone would miss it, and the server
    would wait for it)."""
    import threading

    pid = os.fork()
    if pid == 0:  # a kernel that has not reached its setsid yet
        time.sleep(60)
        os._exit(0)
    killer = threading.Thread(target=_kill, args=(pid,), daemon=True)
    killer.start()
    killer.join(10)
    in_time = not killer.is_alive()
    if not in_time:  # end the sleeper, so that the thread returns
        os.kill(pid, 9)
        killer.join()
    assert in_time, "the kernel outlived the kill: it had no process group of its own yet"
    assert _gone(pid, 0.1)


def test_what_a_kernel_started_ends_with_it(server, tmp_path):
    start = "import subprocess\nprint(subprocess.Popen(['sleep', '600']).pid)"
    child = int(_run(tmp_path, server, start)[0][0])
    assert _gone(child)  # the kernel's process group was killed after its last cell


def test_a_kernel_the_server_cannot_give_is_an_execution_error_not_a_crash(tmp_path):
    no_server = str(tmp_path / "no-server")
    executed, _seconds, error = _execute(_notebook("print(1)"), str(tmp_path), 60, no_server)
    assert executed is None and error  # the build leaves the chapter to myst-nb, which reports it


def test_without_fork_there_is_no_server_and_kernels_start_as_usual(monkeypatch):
    monkeypatch.delattr(os, "fork")
    with kernel_server() as sock:
        assert sock is None
