"""Kernels forked from one process that has already imported what every chapter imports.

Each chapter's kernel spends about 2 s of CPU starting: the IPython kernel itself, then the
chapter's first cell imports NumPy, PyTorch and matplotlib, and its first ``glue`` (myst_nb)
imports nbformat. A cold build executes every chapter,
so it pays that once per chapter. While a build executes chapters ahead
(``book/_ext/attnmath_execute.py``), a *kernel server* (:func:`serve`) imports those modules once
and forks a fresh kernel process for each chapter: the kernel starts with the modules in memory,
as they would be right after importing them, and with nothing else of any other chapter (each
kernel is its own process, forked from a server that never runs a chapter's code).

The Jupyter client launches a kernel as a command; here the command is this file's
:func:`connect`, a small stand-in process that asks the server for a kernel with the client's
connection file, working folder and environment, forwards interrupt and terminate signals to
it, and exits with the kernel's exit status. When the stand-in ends (the client kills it after
the last cell), the server kills its kernel; when the server's standard input closes (the build
is over), it kills every kernel it still has and exits; a kernel whose server is gone exits too.

What the server imports is what a fresh kernel would import with the same environment:
matplotlib is imported with the backend the IPython kernel sets (``MPLBACKEND``, the inline
backend) and NumPy with one BLAS thread (``OPENBLAS_NUM_THREADS=1``, as the timing chapters set
it themselves; two chapters run side by side on the CPUs). pyplot is not imported in the server
(it hooks into the IPython shell, which only the kernel has).

    python book/_ext/attnmath_kernels.py serve SOCKET            # the server
    python book/_ext/attnmath_kernels.py connect SOCKET ARGS...  # a kernel (ipykernel's ARGS)
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

#: Imported once by the server, before it forks any kernel.
#: (myst_nb's ``glue``, which every chapter calls, imports nbformat and with it jsonschema, whose
#: optional IRI checker compiles a grammar on import: 0.7 s of CPU in each kernel otherwise.)
PRELOADED = ("numpy", "torch", "matplotlib", "matplotlib.figure", "ipykernel.kernelapp", "attnmath",
             "myst_nb.ext.glue")
#: Environment the server imports them under (what the kernel and the timing chapters set).
PRELOAD_ENV = {"MPLBACKEND": "module://matplotlib_inline.backend_inline", "OPENBLAS_NUM_THREADS": "1"}


def kernel_command(sock: str) -> list[str]:
    """The command that starts one kernel from the server listening on ``sock`` (ipykernel's
    ``-f {connection_file}`` and any extra arguments follow it)."""
    return [sys.executable, "-I", os.path.abspath(__file__), "connect", sock]


def _send(conn: socket.socket, message: dict) -> None:
    conn.sendall(json.dumps(message).encode() + b"\n")


def _receive(stream) -> dict | None:
    line = stream.readline()
    return json.loads(line) if line else None


def connect(sock: str, argv: list[str]) -> int:
    """The stand-in for one kernel: ask the server for it, relay signals, return its exit status."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(sock)
    stream = conn.makefile("rb")
    _send(conn, {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)})
    reply = _receive(stream)
    if reply is None or "pid" not in reply:
        return 1
    pid = reply["pid"]
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda signum, _frame: _signal_group(pid, signum))
    while True:
        try:
            reply = _receive(stream)
        except InterruptedError:
            continue
        return 1 if reply is None else int(reply["exit"])


def _run_kernel(request: dict) -> None:
    """In the forked child: become the kernel the request asks for; never returns."""
    status = 1
    try:
        os.setsid()  # its own process group, as the Jupyter client starts a kernel: a signal
        #              or the kill at the end reaches what the kernel started too
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        _as_fresh_process(request["argv"])
        import logging

        from ipykernel.kernelapp import IPKernelApp

        # its sockets listen on the loopback interface only and every message is signed with the
        # session's key: ipykernel's warning about TCP without encryption says nothing here, and
        # it was printed once per chapter into the build's and the tests' output
        logging.getLogger("IPKernelApp").addFilter(lambda record: "without encryption" not in record.getMessage())
        app = IPKernelApp.instance()
        # the server is the parent: the kernel exits when the server does
        app.initialize([*request["argv"], f"--IPKernelApp.parent_handle={os.getppid()}"])
        app.start()
        status = 0
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 0
    except BaseException:  # noqa: BLE001  said where the build's errors go; the chapter then fails
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


def _as_fresh_process(argv: list[str]) -> None:
    """What differs in a forked kernel from one started on its own: its command line and the
    random seeds of the preloaded modules (a fresh process draws its own; Python's ``random``
    draws again after a fork by itself)."""
    import importlib.util

    sys.argv = [importlib.util.find_spec("ipykernel_launcher").origin, *argv]
    if "torch" in sys.modules:
        sys.modules["torch"].seed()
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()


class _Server:
    """The server's state: its listening socket and each client's connection and kernel."""

    def __init__(self, sock: str):
        import selectors

        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(sock)
        self.listener.listen(16)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.listener, selectors.EVENT_READ, "accept")
        self.selector.register(sys.stdin, selectors.EVENT_READ, "stdin")
        self.kernels: dict[int, socket.socket] = {}  # kernel pid -> its stand-in's connection

    def accept(self) -> None:
        import selectors

        conn, _ = self.listener.accept()
        request = _receive(conn.makefile("rb"))
        if request is None:
            conn.close()
            return
        pid = os.fork()
        if pid == 0:  # the kernel keeps nothing of the server's
            self.selector.close()
            for other in (self.listener, conn, *self.kernels.values()):
                other.close()
            _run_kernel(request)
        self.kernels[pid] = conn
        _send(conn, {"pid": pid})
        self.selector.register(conn, selectors.EVENT_READ, pid)

    def closed(self, pid: int) -> None:
        """The stand-in of kernel ``pid`` went away: the kernel goes too."""
        conn = self.kernels.pop(pid, None)
        if conn is not None:
            self.selector.unregister(conn)
            conn.close()
            _kill(pid)

    def reap(self) -> None:
        """Tell each stand-in whose kernel has exited its exit status."""
        while self.kernels:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.kernels.pop(pid, None)
            if conn is not None:
                self.selector.unregister(conn)
                try:
                    _send(conn, {"exit": os.waitstatus_to_exitcode(status)})
                except OSError:
                    pass
                conn.close()

    def stop(self) -> None:
        for pid in list(self.kernels):
            self.closed(pid)
        self.listener.close()


def _signal_group(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signum)


def _kill(pid: int) -> None:
    """Kill kernel ``pid`` and what it started (its process group), and reap it. The kernel
    itself is killed first: one forked a moment ago may not have made its own group yet
    (``os.setsid``), and would then outlive a signal sent to the group alone."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    _signal_group(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def serve(sock: str) -> None:
    """Import :data:`PRELOADED`, then fork a kernel for each stand-in that connects to ``sock``,
    until standard input closes."""
    server = _Server(sock)  # listening: a kernel asked for from now on waits for the imports
    print("listening", flush=True)
    os.dup2(2, 1)  # what the kernels print goes where the server's errors go
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [path for path in sys.path if os.path.abspath(path or ".") != here]  # as a kernel's
    os.environ.update(PRELOAD_ENV)
    import importlib

    for name in PRELOADED:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001  each kernel imports it itself, and reports what fails
            pass
    try:
        while True:
            for key, _ in server.selector.select(timeout=0.05):
                if key.data == "accept":
                    server.accept()
                elif key.data == "stdin":
                    if not os.read(sys.stdin.fileno(), 4096):
                        return
                elif not key.fileobj.recv(4096):
                    server.closed(key.data)
            server.reap()
    finally:
        server.stop()


@contextlib.contextmanager
def kernel_server():
    """A kernel server for the duration of the ``with`` block: yields the socket to give
    :func:`kernel_command`, or None when the server did not start (then kernels start as usual),
    as on a system without ``fork`` or Unix sockets."""
    if not hasattr(os, "fork") or not hasattr(socket, "AF_UNIX"):
        yield None
        return
    folder = tempfile.mkdtemp(prefix="attnmath-kernels-")
    sock = os.path.join(folder, "server")
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "serve", sock],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        yield sock if proc.stdout.readline() == b"listening\n" else None
    finally:
        proc.stdin.close()  # the server kills the kernels it still has and exits
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        serve(sys.argv[2])
    elif sys.argv[1:2] == ["connect"]:
        sys.exit(connect(sys.argv[2], sys.argv[3:]))
    else:
        raise SystemExit(__doc__)
