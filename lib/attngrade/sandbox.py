"""The grader's side of a worker: start it isolated, feed it, read it as untrusted data, end it.

Isolation levels, strongest first (:func:`detect_isolation` probes which one works here):

``namespaces``  (Linux, root) ``unshare`` gives the worker new PID, network, mount, IPC and UTS
                namespaces; it builds a private read-only root from an allowlist: the system
                libraries, the Python standard library, package folders emptied except NumPy
                and what the release's setup cells import (:func:`site_view`), an empty
                size-limited ``/tmp`` (its working directory) and ``/dev/shm``; the reference
                libraries, the grader and the course do not exist there. It drops to an
                unprivileged uid (one per concurrent job, reserved by a lock file across
                batches) with no new privileges; killing it kills everything it started.
``userns``      (Linux, non-root, user namespaces allowed) the same namespaces and private root
                inside a user namespace; the worker keeps the invoking user's uid outside it.
``uid``         (Linux, root, no namespaces) an unprivileged uid and a scratch directory; files
                readable by everybody stay readable.
``basic``       (any POSIX) a separate process and session with resource limits and a scratch
                directory; no protection of files the grading user can read.

On every level: a fresh interpreter in isolated mode (``-I``) with a scrubbed environment,
``setrlimit`` limits (address space, CPU time, processes, file size, open files, no core
files), a wall-clock limit per phase that kills the whole process group, capped stdout/stderr,
results read from a pipe as length-prefixed frames of plain data and validated here. Where a
memory cgroup can be made (:class:`MemoryGroup`), the worker runs in its own, limited to
``memory_mb``; the memory of memory-limited cases is read from it here, by the grader.
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
import pwd
import queue
import re
import selectors
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import plain

__all__ = [
    "Limits",
    "Isolation",
    "WorkerJob",
    "WorkerRun",
    "run_worker",
    "detect_isolation",
    "MODES",
    "ABORT",
]

#: Set it to stop every running worker at once (for example on Ctrl-C).
ABORT = threading.Event()

MODES = ("namespaces", "userns", "uid", "basic")
WORKER = str(Path(__file__).with_name("worker.py"))
LIB_DIR = str(Path(__file__).resolve().parent.parent)
_FRAME = struct.Struct(">II")
_UNSHARE = ["unshare", "--pid", "--fork", "--kill-child", "--net", "--mount", "--ipc", "--uts"]


@dataclass
class Limits:
    """Resource limits of one worker (see the module docstring)."""

    timeout: float = 30.0  # wall-clock seconds for the answer cells, and again for each part
    boot_timeout: float = 60.0  # wall-clock seconds to start (before any student code runs)
    memory_mb: int = 2048  # RLIMIT_AS
    output_bytes: int = 4 << 20  # stdout + stderr
    result_bytes: int = 64 << 20  # one result frame
    tmp_mb: int = 64  # the private /tmp
    fsize_mb: int = 16  # RLIMIT_FSIZE
    nproc: int = 32  # RLIMIT_NPROC (per sandbox uid; not set where the worker keeps the caller's uid)
    nofile: int = 64  # RLIMIT_NOFILE

    def cpu_seconds(self, n_parts: int) -> int:
        return int(self.timeout * (n_parts + 1) + 5)


@dataclass
class Isolation:
    """The isolation level in use and what it enforced in the probe run."""

    mode: str
    enforced: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    uids: list = field(default_factory=list)  # one unprivileged uid per concurrent job
    gid: int | None = None
    memory: str = "none"  # how memory is measured: "cgroup v1", "cgroup v2" or "none"
    locks: list = field(default_factory=list, repr=False)  # open lock files that reserve ``uids``


@dataclass
class WorkerJob:
    cells: list  # [{"id": label, "source": python}] in the order they run
    parts: list  # [{"id": grade_id, "function": name, "trace": [bool per case], "after": n cells}]
    inputs: bytes  # plain.pack({grade_id: [(args, kwargs), ...]}); memory cases hold ((), {})
    blocked: list  # top-level modules the worker refuses to import (a second line of defence)
    modules: tuple = ("numpy",)  # what the private root's site-packages view holds (with their dependencies)
    held: dict = field(default_factory=dict)  # {grade_id: {case index: plain.pack((args, kwargs))}}


@dataclass
class PartData:
    defined: bool
    records: list  # [{"error": str|None, "peak": int|None, "out": plain value}]


@dataclass
class WorkerRun:
    """What came back from one worker, all of it untrusted except ``end`` (decided here)."""

    end: str = "boot_failed"  # done, timeout, output, result_size, protocol, died, boot_failed
    detail: str = ""
    booted: bool = False
    report: dict = field(default_factory=dict)
    cells: dict = field(default_factory=dict)
    parts: dict = field(default_factory=dict)
    current: str | None = None  # the part running when the worker stopped early
    phase: str = "boot"  # boot, cells, part, done
    stdout: bytes = b""
    stderr: bytes = b""
    output_bytes: int = 0
    seconds: float = 0.0
    exit: dict = field(default_factory=dict)  # {"code": n} or {"signal": n}
    baseline: int | None = None  # memory in use when the worker was ready, before any student code
    memory: dict = field(default_factory=dict)  # {(grade_id, case): {"before": bytes, "peak": bytes}}
    oom_kills: int = 0  # processes the kernel killed at the worker's memory limit


class _Protocol(Exception):
    pass


def _lock_dir() -> str:
    for folder in ("/run/attngrade", os.path.join(tempfile.gettempdir(), "attngrade-uids")):
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            return folder
        except OSError:
            continue
    raise RuntimeError("no folder for the sandbox uid locks")


def _sandbox_uids(n: int) -> tuple[list[int], list]:
    """``n`` unused uids, each reserved by an exclusive lock file for as long as this process lives.

    Two batches on one host therefore never share a sandbox uid (nor its RLIMIT_NPROC count).
    """
    uids, locks, uid = [], [], 61000
    folder = _lock_dir()
    while len(uids) < n and uid < 65000:
        try:
            pwd.getpwuid(uid)
            uid += 1
            continue
        except KeyError:
            pass
        fh = open(os.path.join(folder, f"uid-{uid}.lock"), "a")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.close()
            uid += 1
            continue
        uids.append(uid)
        locks.append(fh)
        uid += 1
    return uids, locks


class MemoryGroup:
    """A memory cgroup for one worker (v2, or v1's memory controller), managed by the grader only.

    The worker enters it before it runs anything (see :func:`run_worker`); the limit counts every
    process, thread, ``mmap`` and tmpfs page of the worker, and its usage and peak are read here.
    The worker cannot see or change it: the private root has no ``/sys``, and it is root's.
    """

    def __init__(self, base: str, version: int, limit: int):
        self.version = version
        self.path = tempfile.mkdtemp(prefix="attngrade-", dir=base)
        self._write("memory.max" if version == 2 else "memory.limit_in_bytes", str(limit))
        if version == 1:
            try:
                self._write("memory.memsw.limit_in_bytes", str(limit))
            except OSError:
                pass  # no swap accounting: there is no swap to hide memory in either

    def _write(self, name: str, value: str) -> None:
        with open(os.path.join(self.path, name), "w") as fh:
            fh.write(value)

    def _read(self, name: str) -> str:
        with open(os.path.join(self.path, name)) as fh:
            return fh.read()

    @property
    def procs(self) -> str:
        return os.path.join(self.path, "cgroup.procs")

    def usage(self) -> int:
        return int(self._read("memory.current" if self.version == 2 else "memory.usage_in_bytes"))

    def peak(self) -> int:
        return int(self._read("memory.peak" if self.version == 2 else "memory.max_usage_in_bytes"))

    def reset_peak(self) -> None:
        self._write("memory.peak" if self.version == 2 else "memory.max_usage_in_bytes", "0")

    def oom_kills(self) -> int:
        text = self._read("memory.events" if self.version == 2 else "memory.oom_control")
        m = re.search(r"^oom_kill (\d+)", text, re.M)
        return int(m.group(1)) if m else 0

    def close(self) -> None:
        for _ in range(50):
            try:
                with open(self.procs) as fh:
                    for pid in fh.read().split():
                        try:
                            os.kill(int(pid), signal.SIGKILL)
                        except (ProcessLookupError, PermissionError):
                            pass
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.02)


def _memory_base() -> tuple[str, int] | None:
    """Where this process may create memory cgroups: ``(folder, version)``, or None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        hid, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            base = "/sys/fs/cgroup/memory" + path
            if os.path.isfile(os.path.join(base, "memory.max_usage_in_bytes")):
                return base, 1
    for line in lines:
        if line.startswith("0::"):
            base = "/sys/fs/cgroup" + line[3:]
            try:
                if "memory" in Path(base, "cgroup.controllers").read_text().split():
                    return base, 2
            except OSError:
                return None
    return None


def _memory_group(limits: Limits) -> MemoryGroup | None:
    found = _memory_base()
    if found is None:
        return None
    try:
        group = MemoryGroup(found[0], found[1], limits.memory_mb << 20)
        group.usage(), group.peak()
        if found[1] == 2:
            group.reset_peak()  # memory.peak is writable from Linux 6.12 on
        return group
    except (OSError, ValueError):
        return None


#: Top-level entries of a site-packages folder that never appear in the private root's view.
_NEVER = re.compile(r"^(__pycache__|.*\.pth|_?attn(math|grade).*|torch.*|scipy.*|jax.*|nbgrader.*|__editable__.*)$", re.I)


def _requirement_name(req: str) -> str | None:
    if ";" in req and "extra" in req.split(";", 1)[1]:
        return None
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req)
    return m.group(1) if m else None


def site_view(modules) -> tuple[str, ...]:
    """The site-packages entries that installing ``modules`` (and what they require) put there."""
    from importlib import metadata

    owners = metadata.packages_distributions()
    todo = [d for m in modules for d in owners.get(m.split(".")[0], [])]
    seen, entries = set(), set()
    while todo:
        name = todo.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        for f in dist.files or []:
            if f.parts and f.parts[0] != ".." and not _NEVER.match(f.parts[0]):
                entries.add(f.parts[0])
        todo.extend(n for n in map(_requirement_name, dist.requires or []) if n)
    return tuple(sorted(entries))


def _nogroup() -> int:
    import grp

    for name in ("nogroup", "nobody"):
        try:
            return grp.getgrnam(name).gr_gid
        except KeyError:
            continue
    return 65534


def _site_dirs_under(path: str) -> list[str]:
    found = []
    for pattern in ("lib/python3*/site-packages", "lib/python3*/dist-packages", "local/lib/python3*/*-packages",
                    "lib/python3/dist-packages", "lib64/python3*/site-packages"):
        found.extend(str(p) for p in Path(path).glob(pattern) if p.is_dir())
    return found


@functools.lru_cache(maxsize=16)
def _root_plan(modules: tuple) -> dict:
    """The private root: what is bound read-only, which package folders are emptied, what they show.

    Every ``site-packages``/``dist-packages`` folder under an exposed path is covered by an empty
    file system; the ones on this interpreter's path then show only the entries of
    :func:`site_view` (NumPy and what the release's setup cells import). Reference libraries, the
    grader, the course and everything else installed do not exist inside the worker.
    """
    expose = _expose_paths()
    site = {os.path.realpath(p) for p in sys.path if p and os.path.isdir(p) and p.endswith(("site-packages", "dist-packages"))}
    masks = set(site)
    for path in expose:
        if os.path.isdir(path) and not os.path.islink(path):
            masks.update(os.path.realpath(d) for d in _site_dirs_under(path))
    entries = site_view(modules)
    views = {d: [e for e in entries if os.path.lexists(os.path.join(d, e))] for d in sorted(site)}
    return {"expose": expose, "masks": sorted(masks, key=len), "views": views}


def _expose_paths() -> list[str]:
    """What the private root binds: the system's libraries and this Python installation only."""
    paths = [
        "/usr",
        "/bin",
        "/lib",
        "/lib64",
        "/lib32",
        "/libx32",
        "/sbin",
        "/etc/ld.so.cache",
        "/etc/localtime",
    ]
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    for entry in sys.path:
        if entry and os.path.isdir(entry) and ("site-packages" in entry or "dist-packages" in entry):
            prefixes.add(entry)
    real = sorted({os.path.realpath(p) for p in prefixes} | prefixes, key=len)
    chosen: list[str] = []
    for p in real:
        if not os.path.isdir(p) or p == "/":
            continue
        if any(p == c or p.startswith(c.rstrip("/") + "/") for c in paths + chosen):
            continue
        chosen.append(p)
    return paths + chosen


def _env(mode: str, scratch: str) -> dict:
    tmp = "/tmp/work" if mode in ("namespaces", "userns") else scratch
    env = {
        # glibc: large blocks always come from mmap and go back when freed, so memory freed by
        # one case (or one part) is not still counted against the next.
        "MALLOC_MMAP_THRESHOLD_": "131072",
        "MALLOC_TRIM_THRESHOLD_": "262144",
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "HOME": tmp,
        "TMPDIR": tmp,
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "NUMEXPR_NUM_THREADS": "1",
        "VECLIB_MAXIMUM_THREADS": "1",
        "MPLBACKEND": "Agg",
    }
    return env


def _rmtree(path: str) -> None:
    def onerror(func, p, exc):
        try:
            os.chmod(p, stat.S_IRWXU)
            parent = os.path.dirname(p)
            os.chmod(parent, stat.S_IRWXU)
            func(p)
        except OSError:
            pass

    shutil.rmtree(path, onerror=onerror)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _kill_uid(uid: int) -> None:
    """Kill every process of a sandbox uid (the ``uid`` level has no PID namespace)."""
    for _ in range(3):
        found = False
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    os.kill(int(entry), signal.SIGKILL)
                    found = True
            except (OSError, ProcessLookupError):
                continue
        if not found:
            return
        time.sleep(0.05)


def _tasks_of(uid: int) -> int:
    """Threads of every process of ``uid`` (what RLIMIT_NPROC counts), on Linux."""
    total = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    total += len(os.listdir(f"/proc/{entry}/task"))
            except OSError:
                continue
    return total


def _nproc(mode: str, uid: int | None, limits: Limits) -> int | None:
    """RLIMIT_NPROC for a worker: counted per sandbox uid, per user namespace, or on top of the caller's."""
    if uid is not None:
        return limits.nproc
    if mode in ("userns", "basic") and sys.platform.startswith("linux") and os.geteuid() != 0:
        return _tasks_of(os.getuid()) + limits.nproc
    return None  # root is exempt from RLIMIT_NPROC; macOS has no /proc to count with


def _config(
    job: WorkerJob,
    isolation: Isolation,
    limits: Limits,
    scratch: str,
    slot: int,
    hidden: list[str],
    probe: bool,
) -> dict:
    mode = isolation.mode
    uid = (
        isolation.uids[slot % len(isolation.uids)]
        if mode in ("namespaces", "uid") and isolation.uids
        else None
    )
    plan = _root_plan(tuple(sorted(set(job.modules) | {"numpy"})))
    return {
        "mode": mode,
        "root": scratch,
        "expose": plan["expose"],
        "masks": plan["masks"],
        "views": plan["views"],
        "hidden": hidden,
        "tmp_bytes": limits.tmp_mb << 20,
        "result_bytes": limits.result_bytes,
        "limits": {
            "as": limits.memory_mb << 20,
            "cpu": limits.cpu_seconds(len(job.parts)),
            "nproc": _nproc(mode, uid, limits),
            "fsize": limits.fsize_mb << 20,
            "nofile": limits.nofile,
            "core": 0,
        },
        "uid": uid,
        "gid": isolation.gid if uid is not None else None,
        "blocked": sorted(job.blocked),
        "lib": LIB_DIR,
        "cells": job.cells,
        "parts": job.parts,
        "probe": probe,
    }


def run_worker(
    job: WorkerJob,
    isolation: Isolation,
    limits: Limits,
    *,
    slot: int = 0,
    hidden: list[str] | None = None,
    probe: bool = False,
    tmp_root: str | None = None,
) -> WorkerRun:
    """Run one worker to its end and return what it reported (see :class:`WorkerRun`)."""
    run = WorkerRun()
    scratch = tempfile.mkdtemp(prefix="attngrade-w", dir=tmp_root)
    mode = isolation.mode
    config = _config(job, isolation, limits, scratch, slot, hidden or [], probe)
    uid = config["uid"]
    if mode in ("uid", "basic") and uid is not None:
        os.chown(scratch, uid, isolation.gid if isolation.gid is not None else -1)
    head = json.dumps(config).encode()
    payload = struct.pack(">I", len(head)) + head + struct.pack(">Q", len(job.inputs)) + job.inputs

    res_r, res_w = os.pipe()
    st_r, st_w = os.pipe()
    go_r, go_w = os.pipe()  # the grader's answers to the worker: "go" bytes and memory cases' inputs
    cmd = [sys.executable, "-I", WORKER, str(res_w), str(st_w), str(go_r)]
    if mode == "namespaces":
        cmd = _UNSHARE + ["--"] + cmd
    elif mode == "userns":
        cmd = _UNSHARE[:1] + ["--user", "--map-root-user"] + _UNSHARE[1:] + ["--"] + cmd
    group = _memory_group(limits) if isolation.memory != "none" else None
    if group is not None:  # the worker is in its cgroup before it runs anything
        cmd = ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', group.procs] + cmd
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(res_w, st_w, go_r),
            env=_env(mode, scratch),
            cwd=scratch,
            start_new_session=True,
        )
    except OSError as exc:
        for fd in (res_r, res_w, st_r, st_w, go_r, go_w):
            os.close(fd)
        if group is not None:
            group.close()
        _rmtree(scratch)
        run.detail = f"could not start the worker: {exc}"
        return run
    os.close(res_w)
    os.close(st_w)
    os.close(go_r)
    answers = _Answers(go_w)

    def feed():
        try:
            proc.stdin.write(payload)
            proc.stdin.close()
        except (BrokenPipeError, OSError, ValueError):
            pass

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    try:
        _pump(proc, res_r, st_r, run, job, limits, started, group, answers)
    finally:
        _kill_group(proc)
        if mode == "uid" and uid is not None:
            _kill_uid(uid)
        answers.close()
        if group is not None:
            try:
                run.oom_kills = group.oom_kills()
            except (OSError, ValueError):
                pass
            group.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL was sent
            pass
        for f in (proc.stdout, proc.stderr):
            f.close()
        for fd in (res_r, st_r):
            try:
                os.close(fd)
            except OSError:
                pass
        feeder.join(timeout=5)
        _rmtree(scratch)
    run.seconds = time.monotonic() - started
    if run.end == "died" and not run.exit and proc.returncode is not None:
        rc = proc.returncode
        run.exit = {"signal": -rc} if rc < 0 else {"code": rc}
    if run.end == "died":
        run.detail = _describe_exit(run.exit)
        if run.oom_kills:
            run.end, run.detail = "memory", f"the kernel ended it at the memory limit ({limits.memory_mb} MiB)"
        elif run.exit.get("signal") == signal.SIGXCPU:
            run.end, run.detail = "timeout", "CPU time limit"
        elif run.exit.get("signal") == signal.SIGXFSZ:
            run.end, run.detail = "output", "file size limit"
    return run


class _Answers:
    """Writes to the worker's answer pipe from a thread of its own, so a worker that stops
    reading can never block the grader's loop."""

    def __init__(self, fd: int):
        self.fd = fd
        self.items: queue.Queue = queue.Queue()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def send(self, data: bytes) -> None:
        self.items.put(data)

    def _run(self) -> None:
        while True:
            data = self.items.get()
            if data is None:
                break
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(self.fd, view):]
            except OSError:
                break
        try:
            os.close(self.fd)
        except OSError:
            pass

    def close(self) -> None:
        self.items.put(None)
        self.thread.join(timeout=5)


def _describe_exit(info: dict) -> str:
    if "signal" in info:
        try:
            name = signal.Signals(info["signal"]).name
        except ValueError:
            name = f"signal {info['signal']}"
        return f"killed by {name}"
    if "code" in info:
        return f"exited with code {info['code']} (sys.exit or os._exit)"
    return "ended without a result"


def _pump(proc, res_r, st_r, run: WorkerRun, job: WorkerJob, limits: Limits, started: float,
          group: MemoryGroup | None = None, answers: _Answers | None = None) -> None:
    sel = selectors.DefaultSelector()
    for fobj, name in ((proc.stdout, "stdout"), (proc.stderr, "stderr")):
        os.set_blocking(fobj.fileno(), False)
        sel.register(fobj.fileno(), selectors.EVENT_READ, name)
    for fd, name in ((res_r, "result"), (st_r, "status")):
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ, name)
    buffers = {"result": bytearray(), "status": bytearray()}
    heads = {"stdout": bytearray(), "stderr": bytearray()}
    state = {"cell": 0, "part": 0, "group": group, "answers": answers, "open": None, "case": -1}
    deadline = started + limits.boot_timeout
    exited_at = None
    ended = None  # why we stopped the worker, if we did

    def stop(reason: str, detail: str = "") -> None:
        nonlocal ended
        if ended is None:
            ended = (reason, detail)
            _kill_group(proc)

    while sel.get_map():
        now = time.monotonic()
        if ended is None and now > deadline:
            stop("timeout", f"no progress within the time limit ({run.phase})")
        if ended is None and ABORT.is_set():
            stop("died", "grading was interrupted")
        if exited_at is None and proc.poll() is not None:
            exited_at = now
            _kill_group(proc)  # strays in the basic level
        if exited_at is not None and now - exited_at > 2.0:
            break
        if ended is not None and now - (exited_at or now) > 5.0:
            break
        for key, _ in sel.select(timeout=0.05):
            name = key.data
            try:
                chunk = os.read(key.fd, 1 << 16)
            except BlockingIOError:
                continue
            except OSError:
                chunk = b""
            if not chunk:
                sel.unregister(key.fd)
                continue
            if ended is not None:
                continue
            if name in heads:
                run.output_bytes += len(chunk)
                room = 8192 - len(heads[name])
                if room > 0:
                    heads[name] += chunk[:room]
                if run.output_bytes > limits.output_bytes:
                    stop("output", f"printed more than {limits.output_bytes} bytes")
                continue
            buf = buffers[name]
            buf += chunk
            if name == "status":
                if len(buf) > 4096:
                    stop("protocol", "status channel overflow")
                continue
            try:
                deadline = _frames(buf, run, job, limits, state, deadline)
            except _Protocol as exc:
                stop("protocol", str(exc))
            except _TooLarge as exc:
                stop("result_size", str(exc))
    sel.close()
    run.stdout, run.stderr = bytes(heads["stdout"]), bytes(heads["stderr"])
    status = bytes(buffers["status"]).strip()
    if status:
        try:
            info = json.loads(status.splitlines()[-1])
            if (
                isinstance(info, dict)
                and set(info) <= {"code", "signal"}
                and all(isinstance(v, int) for v in info.values())
            ):
                run.exit = info
        except ValueError:
            pass
    if ended is not None:
        run.end, run.detail = ended
    elif run.phase == "done":
        run.end = "done"
    elif not run.booted:
        run.end = "boot_failed"
        run.detail = "the worker ended before running any code: " + run.stderr[-600:].decode(
            "utf-8", "replace"
        )
    else:
        run.end = "died"


class _TooLarge(Exception):
    pass


def _frames(
    buf: bytearray, run: WorkerRun, job: WorkerJob, limits: Limits, state: dict, deadline: float
) -> float:
    """Consume complete frames from ``buf``; return the new deadline. Raises on a protocol breach."""
    while len(buf) >= 4:
        (total,) = struct.unpack_from(">I", buf)
        if total > limits.result_bytes:
            raise _TooLarge(f"a result of {total} bytes (limit {limits.result_bytes})")
        if total < 4:
            raise _Protocol("short frame")
        if len(buf) < 4 + total:
            break
        frame = bytes(buf[4 : 4 + total])
        del buf[: 4 + total]
        (hlen,) = struct.unpack_from(">I", frame)
        if hlen > min(len(frame) - 4, 1 << 20):
            raise _Protocol("bad frame header")
        try:
            header = json.loads(frame[4 : 4 + hlen].decode("utf-8"))
        except (ValueError, RecursionError) as exc:
            raise _Protocol("frame header is not JSON") from exc
        if not isinstance(header, dict):
            raise _Protocol("frame header is not an object")
        deadline = _event(header, frame[4 + hlen :], run, job, limits, state, deadline)
    return deadline


def _event(
    h: dict, blob: bytes, run: WorkerRun, job: WorkerJob, limits: Limits, state: dict, deadline: float
) -> float:
    ev = h.get("ev")
    now = time.monotonic()
    if ev == "probe" and run.phase == "boot":
        run.report = h.get("report") if isinstance(h.get("report"), dict) else {}
        run.booted = True
        run.phase = "cells"
        return now + limits.timeout
    group, answers = state.get("group"), state.get("answers")
    if ev == "boot" and run.phase == "boot":
        run.booted = True
        run.report = h.get("report") if isinstance(h.get("report"), dict) else {}
        run.phase = "cells"
        if group is not None:  # the worker waits for this answer: no student code has run yet
            run.baseline = group.usage()
        if answers is not None:
            answers.send(b"g")
        return now + limits.timeout
    if ev == "cell" and run.phase in ("cells", "between"):
        i = state["cell"]
        if i >= len(job.cells) or h.get("id") != job.cells[i]["id"]:
            raise _Protocol("unexpected cell report")
        err = h.get("error")
        run.cells[job.cells[i]["id"]] = _error_name(err) if err is not None else None
        state["cell"] += 1
        run.phase = "cells"
        return deadline
    if ev == "start" and run.phase in ("cells", "between"):
        i = state["part"]
        if (
            i >= len(job.parts)
            or h.get("part") != job.parts[i]["id"]
            or state["cell"] != job.parts[i].get("after", len(job.cells))
        ):
            raise _Protocol("unexpected part start")
        run.phase, run.current = "part", job.parts[i]["id"]
        state["case"] = -1
        return now + limits.timeout
    if ev == "mem" and run.phase == "part":
        part = job.parts[state["part"]]
        case = h.get("case")
        held = job.held.get(part["id"], {})
        if not isinstance(case, int) or isinstance(case, bool) or case <= state["case"] or case not in held:
            raise _Protocol("unexpected memory case")
        _close_interval(run, state)
        state["case"] = case
        key = (part["id"], case)
        run.memory[key] = {"before": None, "peak": None, "inputs": len(held[case]), "ready": False}
        if group is not None:
            group.reset_peak()
        state["open"] = key
        if answers is not None:  # the case's inputs exist in the worker only from now on
            answers.send(struct.pack(">Q", len(held[case])) + held[case])
        return deadline
    if ev == "ready" and run.phase == "part":
        key = state.get("open")
        if key is None or h.get("case") != key[1] or run.memory[key]["ready"]:
            raise _Protocol("unexpected memory case start")
        rec = run.memory[key]
        rec["ready"] = True
        if group is not None:  # the peak while unpacking the inputs, then the usage with them in place
            rec["peak"] = group.peak()
            rec["before"] = group.usage()
            group.reset_peak()
        if answers is not None:
            answers.send(b"g")
        return deadline
    if ev == "part" and run.phase == "part":
        part = job.parts[state["part"]]
        if h.get("part") != part["id"]:
            raise _Protocol("result for another part")
        _close_interval(run, state)
        if h.get("defined") is True and set(run.memory) & {(part["id"], c) for c in job.held.get(part["id"], {})} != {
            (part["id"], c) for c in job.held.get(part["id"], {})
        }:
            raise _Protocol("a memory case was skipped")
        try:
            records = plain.unpack(blob, max_bytes=limits.result_bytes)
        except plain.PlainDataError as exc:
            raise _Protocol(f"result is not plain data: {exc}") from exc
        if not isinstance(records, list) or len(records) != len(part["trace"]):
            raise _Protocol("wrong number of outcomes")
        clean = []
        for rec in records:
            if not isinstance(rec, dict) or set(rec) != {"error", "out"}:
                raise _Protocol("malformed outcome")
            err = rec["error"]
            if err is not None and not isinstance(err, str):
                raise _Protocol("malformed error name")
            clean.append({"error": _error_name(err) if err is not None else None, "out": rec["out"]})
        run.parts[part["id"]] = PartData(bool(h.get("defined") is True), clean)
        state["part"] += 1
        run.phase, run.current = "between", None
        return now + limits.timeout
    if (
        ev == "done"
        and (run.phase in ("cells", "between"))
        and state["part"] == len(job.parts)
        and state["cell"] == len(job.cells)
    ):
        run.phase = "done"
        return now + 10.0
    raise _Protocol(f"unexpected event {str(ev)[:40]!r} in phase {run.phase}")


def _close_interval(run: WorkerRun, state: dict) -> None:
    """The peak of the memory case measured since its inputs were sent (read here, by the grader)."""
    key, group = state.get("open"), state.get("group")
    if key is not None and group is not None:
        rec = run.memory[key]
        if not rec["ready"]:
            raise _Protocol("a memory case ended before it started")
        rec["peak_call"] = group.peak()
    state["open"] = None


def _error_name(err) -> str:
    if isinstance(err, str) and err.isidentifier() and len(err) <= 80:
        return err
    return "Exception"


# --------------------------------------------------------------------------------------------


def reference_locations() -> list[str]:
    """Where the reference libraries and the grader are installed here (found without importing them)."""
    import importlib.util

    found = []
    for name in ("torch", "scipy", "attnmath", "attngrade", "jax", "nbgrader"):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is not None:
            found.extend(spec.submodule_search_locations or ([spec.origin] if spec.origin else []))
    return found


def _candidates() -> list[str]:
    if sys.platform.startswith("linux"):
        if os.geteuid() == 0:
            return ["namespaces", "userns", "uid", "basic"]
        return ["userns", "basic"]
    return ["basic"]


def detect_isolation(
    requested: str = "auto",
    *,
    jobs: int = 1,
    limits: Limits | None = None,
    hidden: list[str] | None = None,
    tmp_root: str | None = None,
) -> Isolation:
    """The strongest isolation level that works here (or ``requested``), checked by a probe run."""
    limits = limits or Limits()
    probe_limits = Limits(**{**limits.__dict__, "timeout": max(limits.timeout, 10.0)})
    modes = _candidates() if requested == "auto" else [requested]
    notes = []
    uids, locks = _sandbox_uids(max(jobs, 1)) if os.geteuid() == 0 else ([], [])
    gid = _nogroup() if uids else None
    group = _memory_group(limits)
    memory = f"cgroup v{group.version}" if group is not None else "none"
    if group is not None:
        group.close()
    hidden = list(hidden or []) + reference_locations()
    for mode in modes:
        if mode in ("namespaces", "userns") and shutil.which("unshare") is None:
            notes.append(f"{mode}: no unshare command")
            continue
        if mode in ("namespaces", "uid") and not uids:
            notes.append(f"{mode}: needs root")
            continue
        iso = Isolation(
            mode, uids=uids if mode in ("namespaces", "uid") else [], gid=gid, memory=memory, locks=locks
        )
        job = WorkerJob(cells=[], parts=[], inputs=plain.pack({}), blocked=[])
        run = run_worker(job, iso, probe_limits, hidden=hidden, probe=True, tmp_root=tmp_root)
        if run.end != "done" or not run.report:
            reason = run.detail or run.end
            notes.append(f"{mode}: probe failed ({reason.strip()[:300]})")
            continue
        rep = run.report
        if rep.get("course_visible") and mode in ("namespaces", "userns"):
            # Still the strongest level; the course sits inside what the worker must see (/usr?).
            notes.append(f"{mode}: part of the course is visible inside the worker (it lies under a system path)")
        iso.enforced = {
            "separate_process": True,
            "isolated_interpreter": True,
            "scrubbed_environment": True,
            "process_group_kill": True,
            "wall_clock_limit": True,
            "output_cap": True,
            "rlimits": rep.get("rlimits", []),
            "unprivileged_uid": rep.get("uid") not in (None, 0) if mode != "userns" else "mapped root",
            "pid_namespace": bool(rep.get("pid_namespace")),
            "network_namespace": mode in ("namespaces", "userns") and not rep.get("network"),
            "private_root": bool(rep.get("private_root")),
            "read_only_binds": bool(rep.get("read_only_binds")),
            "course_hidden": not rep.get("course_visible"),
            "no_new_privs": bool(rep.get("no_new_privs")),
            "references_absent": not rep.get("course_visible") and mode in ("namespaces", "userns"),
            "memory_measured_by": memory,
            "import_blocker": True,
        }
        iso.notes = notes
        return iso
    raise RuntimeError("no isolation level works here: " + "; ".join(notes))
