"""The grader's side of a worker: start it isolated, feed it, read it as untrusted data, end it.

Isolation levels, strongest first (:func:`detect_isolation` probes which one works here):

``namespaces``  (Linux, root) ``unshare`` gives the worker new PID, network, mount, IPC and UTS
                namespaces; it builds a private read-only root from an allowlist: the system
                libraries, the Python standard library, package folders that show the course
                environment minus the references (:func:`site_view`), an empty
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

On every level: a fresh process in isolated mode (``-I``) with a scrubbed environment (at the
``namespaces`` level forked from a worker template, :class:`_Template`, started once per class;
elsewhere a new interpreter),
``setrlimit`` limits (address space, CPU time, processes, file size, open files, no core
files), a wall-clock limit per phase that kills the whole process group, stdout/stderr read
to the end but kept only up to a cap (what comes past it is discarded with a note, never a
reason to stop), results read from a pipe as length-prefixed frames of plain data and
validated here. Where a memory cgroup can be made (:class:`MemoryGroup`), the worker runs in
its own, limited to ``memory_mb``, and each memory-limited case in a sub-group of its own whose
peak, read here by the grader, is what the case's call allocated; that group's limit lies just
above what the case allows (:func:`case_ceiling`), so a call that could only fail is stopped by
the kernel at once instead of building gigabytes first.
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
import pwd
import queue
import re
import select
import selectors
import shutil
import signal
import socket
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
    template: object = field(default=None, repr=False)  # the level's worker template, once started

    def close(self) -> None:
        """End the worker template, if one was started (a later worker starts a new one)."""
        with _TEMPLATES:
            template, self.template = self.template, None
        if template is not None:
            template.close()


@dataclass
class WorkerJob:
    cells: list  # [{"id": label, "source": python}] in the order they run
    parts: list  # [{"id": grade_id, "function": name, "trace": [bool per case], "after": n cells}]
    inputs: bytes  # plain.pack({grade_id: [(args, kwargs), ...]}); memory cases hold ((), {})
    blocked: list  # top-level modules the worker refuses to import (a second line of defence)
    held: dict = field(default_factory=dict)  # {grade_id: {case index: plain.pack((args, kwargs))}}
    allowed: dict = field(default_factory=dict)  # {grade_id: {case index: bytes the case's call may allocate}}


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
    memory: dict = field(default_factory=dict)  # {(grade_id, case): {"inputs", "ready", "peak_call"}}
    oom_kills: int = 0  # processes the kernel killed at the worker's memory limit
    notes: list = field(default_factory=list)  # for the instructor: output discarded past the cap


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

    The group holds the limit; the worker runs in its sub-group ``main`` (entered before it runs
    anything, see :func:`run_worker`) and each memory-limited case in a fresh sub-group of its
    own (:meth:`case_group`), so the limit counts every process, thread, ``mmap`` and tmpfs page
    of the worker, and a case's peak counts only what its call allocated: pages that earlier
    cells hold stay charged to ``main`` whether the case frees them or not. A case's group has a
    limit of its own while its call runs (:func:`case_ceiling`). The worker cannot see
    or change any of it: the private root has no ``/sys``, and it is root's.
    """

    def __init__(self, base: str, version: int, limit: int):
        self.version = version
        self.path = tempfile.mkdtemp(prefix="attngrade-", dir=base)
        self.cases: list[str] = []
        self.stopped: list[str] = []  # case groups whose call the kernel stopped at their ceiling
        self.main = os.path.join(self.path, "main")
        try:
            self._setup(limit)
        except OSError:
            self.close()
            raise

    def _setup(self, limit: int) -> None:
        version = self.version
        self._write("memory.max" if version == 2 else "memory.limit_in_bytes", str(limit))
        if version == 1:
            for name, value in (("memory.memsw.limit_in_bytes", str(limit)), ("memory.use_hierarchy", "1")):
                try:
                    self._write(name, value)
                except OSError:
                    pass  # no swap accounting: there is no swap to hide memory in either
        else:
            self._write("cgroup.subtree_control", "+memory")
        os.mkdir(self.main)

    def _write(self, name: str, value: str, folder: str | None = None) -> None:
        with open(os.path.join(folder or self.path, name), "w") as fh:
            fh.write(value)

    def _read(self, name: str, folder: str | None = None) -> str:
        with open(os.path.join(folder or self.path, name)) as fh:
            return fh.read()

    @property
    def procs(self) -> str:
        """Where the worker is put before it starts."""
        return os.path.join(self.main, "cgroup.procs")

    def usage(self) -> int:
        return int(self._read("memory.current" if self.version == 2 else "memory.usage_in_bytes"))

    def peak(self, folder: str | None = None) -> int:
        return int(self._read("memory.peak" if self.version == 2 else "memory.max_usage_in_bytes", folder))

    def oom_kills(self, folder: str | None = None) -> int:
        text = self._read("memory.events" if self.version == 2 else "memory.oom_control", folder)
        m = re.search(r"^oom_kill (\d+)", text, re.M)
        return int(m.group(1)) if m else 0

    def worker_kills(self) -> int:
        """Processes the kernel killed at the worker's limit: v2 counts a sub-group's kills in its
        parent too, so those of the cases stopped at their own ceiling are left out."""
        kills = self.oom_kills()
        if self.version == 2:
            kills -= sum(self.oom_kills(folder) for folder in self.stopped)
        return max(kills, 0)

    def pids(self, folder: str | None = None) -> list[int]:
        return [int(p) for p in self._read("cgroup.procs", folder or self.main).split()]

    def case_group(self, limit: int | None = None) -> str:
        """A fresh, empty sub-group for one memory-limited case (its peak starts at 0), limited
        to ``limit`` bytes where given: the kernel stops the case's call there."""
        folder = os.path.join(self.path, f"case-{len(self.cases)}")
        os.mkdir(folder)
        self.cases.append(folder)
        if limit is not None:
            self._write("memory.max" if self.version == 2 else "memory.limit_in_bytes", str(limit), folder)
        return folder

    def find(self, ns_pid: int) -> int | None:
        """The host pid of the worker's process whose pid in its own namespace is ``ns_pid``."""
        for pid in self.pids():
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            m = re.search(r"^NSpid:\s+([\d\s]+)$", status, re.M)
            last = int(m.group(1).split()[-1]) if m else pid
            if last == ns_pid:
                return pid
        return None

    def unlimit(self, folder: str) -> None:
        """Lift a case group's own limit (the worker's still holds)."""
        unlimited = "max" if self.version == 2 else "-1"
        self._write("memory.max" if self.version == 2 else "memory.limit_in_bytes", unlimited, folder)

    def move(self, pid: int, folder: str) -> None:
        self._write("cgroup.procs", str(pid), folder)

    def signal_main(self, sig: int) -> list[int]:
        """Send ``sig`` to every process of the worker outside the case groups."""
        pids = self.pids()
        for pid in pids:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        return pids

    def close(self) -> None:
        for folder in [*self.cases, self.main, self.path]:
            _empty_group(folder)


def _empty_group(folder: str) -> None:
    """Kill every process of a cgroup folder and remove it."""
    for _ in range(50):
        try:
            with open(os.path.join(folder, "cgroup.procs")) as fh:
                for pid in fh.read().split():
                    try:
                        os.kill(int(pid), signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass
            os.rmdir(folder)
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
    group = None
    try:
        group = MemoryGroup(found[0], found[1], limits.memory_mb << 20)
        group.usage(), group.peak(), group.peak(group.main)
        return group
    except (OSError, ValueError):
        if group is not None:
            group.close()
        return None


#: Top-level entries of a site-packages folder that never appear in the private root's view.
_NEVER = re.compile(r"^(__pycache__|.*\.pth|_?attn(math|grade).*|torch.*|scipy.*|jax.*|nbgrader.*|__editable__.*)$", re.I)
#: The distributions that hold references (or the grader): none of their files is in the worker.
REFERENCES = ("torch", "scipy", "jax", "jaxlib", "attnmath", "attngrade", "nbgrader")


#: The references an assignment may let its answers import (its ``cases.py``'s ``ALLOWED_MODULES``,
#: exercise 17's torch): a job that does not block one shows it in the worker's view.
ALLOWABLE = ("torch",)


@functools.lru_cache(maxsize=4)
def _reference_entries(allow: tuple = ()) -> frozenset:
    """Top-level site-packages entries that the references' distributions installed, but for
    those of the references in ``allow``."""
    from importlib import metadata

    entries = set()
    for name in (r for r in REFERENCES if r not in allow):
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        entries.update(f.parts[0] for f in dist.files or [] if f.parts and f.parts[0] != "..")
    return frozenset(entries)


def site_view(folder: str, allow: tuple = ()) -> tuple[str, ...]:
    """The entries of a package folder that the worker sees: the course environment minus the
    references (every file of their distributions), the grader, ``.pth`` hooks and caches; the
    references named in ``allow`` (of :data:`ALLOWABLE`) stay."""
    if not isinstance(folder, str):
        raise TypeError("folder must be a path string")
    if not set(allow) <= set(ALLOWABLE):
        raise ValueError(f"allow must name references of {ALLOWABLE}, got {allow!r}")
    allow = tuple(sorted(allow))
    banned = _reference_entries(allow)

    def shown(e: str) -> bool:
        allowed = e.lower().startswith(allow) and not e.endswith(".pth") if allow else False
        return e not in banned and (allowed or not _NEVER.match(e))

    return tuple(sorted(e for e in os.listdir(folder) if shown(e)))


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


@functools.lru_cache(maxsize=4)
def _root_plan(allow: tuple = ()) -> dict:
    """The private root: what is bound read-only, which package folders are emptied, what they show.

    Every ``site-packages``/``dist-packages`` folder under an exposed path is covered by an empty
    file system; the ones on this interpreter's path then show the entries of :func:`site_view`
    (the course environment minus the references, but for those in ``allow``), so plotting and
    displaying work as in the student's kernel. The references, the grader and the course do not
    exist inside the worker.
    """
    expose, links = _expose_paths()
    site = {os.path.realpath(p) for p in sys.path if p and os.path.isdir(p) and p.endswith(("site-packages", "dist-packages"))}
    masks = set(site)
    for path in expose:
        if os.path.isdir(path) and not os.path.islink(path):
            masks.update(os.path.realpath(d) for d in _site_dirs_under(path))
    views = {d: list(site_view(d, allow)) for d in sorted(site)}
    return {"expose": expose, "links": links, "masks": sorted(masks, key=len), "views": views}


def _links_on(path: str, depth: int = 0) -> list[tuple[str, str]]:
    """Every symbolic link met on the way to the absolute ``path`` (and on the way to each link's
    target), as ``(where it is, what it says)``; ``where`` has no link above it. The private root
    recreates these links, so the path leads inside the worker where it leads here."""
    links, here = [], "/"
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            here = os.path.dirname(here)
            continue
        step = os.path.join(here, part)
        if os.path.islink(step):
            if depth > 40:
                raise OSError(f"too many levels of symbolic links in {path}")
            target = os.readlink(step)
            links.append((step, target))
            links.extend(_links_on(os.path.join(here, target), depth + 1))
            step = os.path.realpath(step)
        here = step
    return links


def _expose_paths() -> tuple[list[str], list[tuple[str, str]]]:
    """What the private root binds: the system's libraries and this Python installation only,
    each by its real path (so that the masks, planned by real paths, cover everything bound),
    and the symbolic links that lead there from the paths this interpreter uses (a linked
    ``.venv``, course root or ``site-packages``), which the root recreates as links."""
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
    real = sorted({os.path.realpath(p) for p in prefixes}, key=len)
    chosen: list[str] = []
    for p in real:
        if not os.path.isdir(p) or p == "/":
            continue
        if any(p == c or p.startswith(c.rstrip("/") + "/") for c in paths + chosen):
            continue
        chosen.append(p)
    links = {link for p in sorted(prefixes | {sys.executable}) for link in _links_on(os.path.abspath(p))}
    return paths + chosen, sorted(links, key=lambda link: (len(link[0]), link))


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
    allow = () if probe else tuple(m for m in ALLOWABLE if m not in job.blocked)
    plan = _root_plan(allow)
    gpu = any(part.get("timed") for part in job.parts)  # a speed part, timed where the host has a GPU
    return {
        "mode": mode,
        "root": scratch,
        "expose": plan["expose"],
        "links": plan["links"],
        "masks": plan["masks"],
        "views": plan["views"],
        "hidden": hidden,
        "tmp_bytes": limits.tmp_mb << 20,
        "result_bytes": limits.result_bytes,
        "gpu": gpu,
        "cpu_info": "torch" in allow,  # torch's CPU kernels read /proc/cpuinfo when they start
        "limits": {
            "as": None if gpu else limits.memory_mb << 20,  # CUDA reserves far more address space
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


def _command(mode: str, group: MemoryGroup | None, fds: tuple) -> list:
    cmd = [sys.executable, "-I", WORKER, *map(str, fds)]
    if mode == "namespaces":
        cmd = _UNSHARE + ["--"] + cmd
    elif mode == "userns":
        cmd = _UNSHARE[:1] + ["--user", "--map-root-user"] + _UNSHARE[1:] + ["--"] + cmd
    if group is not None:  # the worker is in its cgroup before it runs anything
        cmd = ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', group.procs] + cmd
    return cmd


_TEMPLATES = threading.Lock()


class _Template:
    """The worker template of the ``namespaces`` level (``worker.py --template``): one process
    per class, started once, that has done the imports every worker does and never runs or
    reads anything of a student's. Each worker is a fork of it that sets up its own session,
    memory group, namespaces, private root, limits and uid exactly as a started worker does, so
    every student still gets a fresh process, namespaces and limits, and nothing of one student
    reaches another. Requests go over a socket, one at a time."""

    def __init__(self, boot_timeout: float):
        os.close(os.pidfd_open(os.getpid()))  # forks are watched through pidfds (Linux 5.3 on)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", WORKER, "--template", LIB_DIR], stdin=theirs, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, env=_env("namespaces", "/"), cwd="/", start_new_session=True,
            )
        finally:
            theirs.close()
        ours.settimeout(boot_timeout)
        self.sock, self.lock = ours, threading.Lock()

    def _ask(self, request: dict, fds: list | None = None) -> dict:
        with self.lock:
            socket.send_fds(self.sock, [json.dumps(request).encode()], fds or [])
            answer = self.sock.recv(4096)
        if not answer:
            raise OSError("the worker template ended")
        return json.loads(answer)

    def fork(self, procs: str | None, cwd: str, fds: list) -> int:
        return int(self._ask({"op": "fork", "procs": procs, "cwd": cwd}, fds)["pid"])

    def reap(self, pid: int) -> int:
        """The exit status of a fork, as ``Popen.returncode`` gives it; its pid is free from now on."""
        return os.waitstatus_to_exitcode(int(self._ask({"op": "reap", "pid": pid})["status"]))

    def close(self) -> None:
        self.sock.close()  # the template ends when its socket closes
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class _Forked:
    """A worker forked from the template, seen as ``subprocess.Popen`` sees a child: it ends
    when its pidfd says so; the template reaps it (it is the template's child) on ``wait``."""

    def __init__(self, template: _Template, pid: int, stdin: int, stdout: int, stderr: int):
        self.template, self.pid, self.returncode = template, pid, None
        self.pidfd = os.pidfd_open(pid)
        self.stdin = open(stdin, "wb")
        self.stdout, self.stderr = open(stdout, "rb", buffering=0), open(stderr, "rb", buffering=0)

    def _ended(self, timeout: float | None) -> bool:
        return self.pidfd < 0 or bool(select.select([self.pidfd], [], [], timeout)[0])

    def poll(self):
        return -1 if self.returncode is None and self._ended(0) else self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            if not self._ended(timeout):
                raise subprocess.TimeoutExpired("worker", timeout)
            os.close(self.pidfd)
            self.pidfd = -1
            try:
                self.returncode = self.template.reap(self.pid)
            except (OSError, ValueError):  # the template ended: so did its forks, killed by the grader
                self.returncode = -signal.SIGKILL
        return self.returncode


def _template(isolation: Isolation, limits: Limits) -> _Template | None:
    """The level's worker template (started on first use), or None: workers are then started
    afresh (levels other than ``namespaces``, no pidfd, or a template that could not start)."""
    if isolation.mode != "namespaces" or not hasattr(os, "pidfd_open"):
        return None
    with _TEMPLATES:
        if isolation.template is None or isolation.template.proc.poll() is not None:
            try:
                isolation.template = _Template(limits.boot_timeout)
            except OSError:
                return None
        return isolation.template


def _fork_worker(template: _Template, group: MemoryGroup | None, scratch: str, fds: tuple) -> _Forked:
    """A worker forked from ``template``, with the channels ``fds`` and pipes for its stdin,
    stdout and stderr (the ends it gets are closed here once it has them)."""
    (in_r, in_w), (out_r, out_w), (err_r, err_w) = os.pipe(), os.pipe(), os.pipe()
    theirs = [in_r, out_w, err_w, *fds]
    try:
        pid = template.fork(group.procs if group is not None else None, scratch, theirs)
    except (OSError, ValueError):
        for fd in (in_r, in_w, out_r, out_w, err_r, err_w):
            os.close(fd)
        raise OSError("the worker template could not fork")
    for fd in (in_r, out_w, err_w):
        os.close(fd)
    return _Forked(template, pid, in_w, out_r, err_r)


def _start(isolation: Isolation, limits: Limits, group: MemoryGroup | None, scratch: str, fds: tuple):
    """The worker's process: forked from the level's template where there is one, else started."""
    template = _template(isolation, limits)
    if template is not None:
        try:
            return _fork_worker(template, group, scratch, fds)
        except OSError:
            isolation.close()  # started afresh below; the next worker starts a new template
    return subprocess.Popen(
        _command(isolation.mode, group, fds),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        pass_fds=fds,
        env=_env(isolation.mode, scratch),
        cwd=scratch,
        start_new_session=True,
    )


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
    group = _memory_group(limits) if isolation.memory != "none" else None
    config = _config(job, isolation, limits, scratch, slot, hidden or [], probe)
    config["case_groups"] = group is not None
    uid = config["uid"]
    if isolation.mode in ("uid", "basic") and uid is not None:
        os.chown(scratch, uid, isolation.gid if isolation.gid is not None else -1)
    head = json.dumps(config).encode()
    payload = struct.pack(">I", len(head)) + head + struct.pack(">Q", len(job.inputs)) + job.inputs
    res_r, res_w = os.pipe()
    st_r, st_w = os.pipe()
    go_r, go_w = os.pipe()  # the grader's answers to the worker: "go" bytes and memory cases' inputs
    started = time.monotonic()
    try:
        proc = _start(isolation, limits, group, scratch, (res_w, st_w, go_r))
    except OSError as exc:
        for fd in (res_r, res_w, st_r, st_w, go_r, go_w):
            os.close(fd)
        if group is not None:
            group.close()
        _rmtree(scratch)
        run.detail = f"could not start the worker: {exc}"
        return run
    for fd in (res_w, st_w, go_r):
        os.close(fd)
    _serve(proc, payload, run, job, limits, {"group": group, "answers": _Answers(go_w), "res": res_r, "st": st_r})
    _end_worker(proc, run, isolation, uid, group, (res_r, st_r), scratch)
    run.seconds = time.monotonic() - started
    _name_the_end(proc, run, limits)
    return run


def _serve(proc, payload: bytes, run: WorkerRun, job: WorkerJob, limits: Limits, io: dict) -> None:
    """Feed the job to the worker (from a thread of its own) and read it until it ends."""

    def feed():
        try:
            proc.stdin.write(payload)
            proc.stdin.close()
        except (BrokenPipeError, OSError, ValueError):
            pass

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    state = {"cell": 0, "part": 0, "group": io["group"], "answers": io["answers"], "open": None, "case": -1}
    try:
        _pump(proc, io["res"], io["st"], run, job, limits, state)
    finally:
        _kill_group(proc)
        io["answers"].close()
        feeder.join(timeout=5)


def _end_worker(proc, run: WorkerRun, isolation: Isolation, uid, group, fds: tuple, scratch: str) -> None:
    """Kill whatever is left of the worker, read the kernel's count, release everything."""
    _kill_group(proc)
    if isolation.mode == "uid" and uid is not None:
        _kill_uid(uid)
    if group is not None:
        try:
            run.oom_kills = group.worker_kills()
        except (OSError, ValueError):
            pass
        group.close()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL was sent
        pass
    for f in (proc.stdout, proc.stderr):
        f.close()
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
    _rmtree(scratch)


def _name_the_end(proc, run: WorkerRun, limits: Limits) -> None:
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


class _Pump:
    """Reads one worker's channels until it ends: output (capped; what is past the cap is read and
    discarded, never a reason to stop), result frames (validated as they come), the monitor's status."""

    def __init__(self, proc, run: WorkerRun, job: WorkerJob, limits: Limits, state: dict):
        self.proc, self.run, self.job, self.limits, self.state = proc, run, job, limits, state
        self.buffers = {"result": bytearray(), "status": bytearray()}
        self.heads = {"stdout": bytearray(), "stderr": bytearray()}
        self.deadline = time.monotonic() + limits.boot_timeout
        self.ended = None  # why we stopped the worker, if we did

    def stop(self, reason: str, detail: str = "") -> None:
        if self.ended is None:
            self.ended = (reason, detail)
            _kill_group(self.proc)

    def output(self, name: str, chunk: bytes) -> None:
        run = self.run
        run.output_bytes += len(chunk)
        room = 8192 - len(self.heads[name])
        if room > 0:
            self.heads[name] += chunk[:room]

    def chunk(self, name: str, chunk: bytes) -> None:
        if name in self.heads:
            self.output(name, chunk)
            return
        buf = self.buffers[name]
        buf += chunk
        if name == "status":
            if len(buf) > 4096:
                self.stop("protocol", "status channel overflow")
            return
        try:
            self.deadline = _frames(buf, self.run, self.job, self.limits, self.state, self.deadline)
        except _Protocol as exc:
            self.stop("protocol", str(exc))
        except _TooLarge as exc:
            self.stop("result_size", str(exc))

    def loop(self, sel) -> None:
        exited_at = None
        while sel.get_map():
            now = time.monotonic()
            if self.ended is None and now > self.deadline:
                self.stop("timeout", f"no progress within the time limit ({self.run.phase})")
            if self.ended is None and ABORT.is_set():
                self.stop("died", "grading was interrupted")
            if exited_at is None and self.proc.poll() is not None:
                exited_at = now
                _kill_group(self.proc)  # strays in the basic level
            if exited_at is not None and now - exited_at > 2.0:
                break
            if self.ended is not None and now - (exited_at or now) > 5.0:
                break
            _watch_case(self.state)
            for key, _ in sel.select(timeout=0.05):
                try:
                    chunk = os.read(key.fd, _READ_BYTES)
                except BlockingIOError:
                    continue
                except OSError:
                    chunk = b""
                if not chunk:
                    sel.unregister(key.fd)
                elif self.ended is None:
                    self.chunk(key.data, chunk)

    def finish(self) -> None:
        run = self.run
        run.stdout, run.stderr = bytes(self.heads["stdout"]), bytes(self.heads["stderr"])
        if run.output_bytes > self.limits.output_bytes:
            run.notes.append(
                f"printed {run.output_bytes} bytes; what came past {self.limits.output_bytes} bytes was discarded"
            )
        run.exit = _exit_status(bytes(self.buffers["status"]).strip()) or run.exit
        if self.ended is not None:
            run.end, run.detail = self.ended
        elif run.phase == "done":
            run.end = "done"
        elif not run.booted:
            run.end = "boot_failed"
            tail = run.stderr[-600:].decode("utf-8", "replace")
            run.detail = "the worker ended before running any code: " + tail
        else:
            run.end = "died"


def _exit_status(status: bytes) -> dict:
    """The monitor's report of how the worker ended, when it is well formed."""
    if not status:
        return {}
    try:
        info = json.loads(status.splitlines()[-1])
    except ValueError:
        return {}
    if isinstance(info, dict) and set(info) <= {"code", "signal"} and all(isinstance(v, int) for v in info.values()):
        return info
    return {}


_READ_BYTES = 1 << 20
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


def _widen_pipe(fd: int) -> None:
    """A 1 MiB pipe buffer: a worker that prints a lot needs 16 times fewer round trips with the
    grader (on a loaded machine each one costs a context switch), so printing stays cheap."""
    try:
        fcntl.fcntl(fd, _F_SETPIPE_SZ, _READ_BYTES)
    except OSError:
        pass  # a lower pipe-max-size: the default buffer still works, only slower


def _pump(proc, res_r, st_r, run: WorkerRun, job: WorkerJob, limits: Limits, state: dict) -> None:
    sel = selectors.DefaultSelector()
    for fobj, name in ((proc.stdout, "stdout"), (proc.stderr, "stderr")):
        _widen_pipe(fobj.fileno())
        os.set_blocking(fobj.fileno(), False)
        sel.register(fobj.fileno(), selectors.EVENT_READ, name)
    for fd, name in ((res_r, "result"), (st_r, "status")):
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ, name)
    pump = _Pump(proc, run, job, limits, state)
    try:
        pump.loop(sel)
    finally:
        sel.close()
        _thaw(state)
    pump.finish()


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
    if ev in ("probe", "boot") and run.phase == "boot":
        return _on_boot(h, run, state, now + limits.timeout)
    if ev == "cell" and run.phase in ("cells", "between"):
        _on_cell(h, run, job, state)
        return deadline
    if ev == "start" and run.phase in ("cells", "between"):
        _on_start(h, run, job, state)
        return now + limits.timeout
    if ev in _CASE_EVENTS and run.phase == "part":
        _CASE_EVENTS[ev](h, run, job, state)
        return deadline
    if ev == "part" and run.phase == "part":
        _on_part(h, blob, run, job, limits, state)
        return now + limits.timeout
    if ev == "done" and run.phase in ("cells", "between") and state["part"] == len(job.parts) and state[
        "cell"
    ] == len(job.cells):
        run.phase = "done"
        return now + 10.0
    raise _Protocol(f"unexpected event {str(ev)[:40]!r} in phase {run.phase}")


def _on_boot(h: dict, run: WorkerRun, state: dict, deadline: float) -> float:
    run.booted = True
    run.report = h.get("report") if isinstance(h.get("report"), dict) else {}
    run.phase = "cells"
    if h.get("ev") == "boot":
        group, answers = state.get("group"), state.get("answers")
        if group is not None:  # the worker waits for this answer: no student code has run yet
            run.baseline = group.usage()
        if answers is not None:
            answers.send(b"g")
    return deadline


def _on_cell(h: dict, run: WorkerRun, job: WorkerJob, state: dict) -> None:
    i = state["cell"]
    if i >= len(job.cells) or h.get("id") != job.cells[i]["id"]:
        raise _Protocol("unexpected cell report")
    err = h.get("error")
    run.cells[job.cells[i]["id"]] = _error_name(err) if err is not None else None
    state["cell"] += 1
    run.phase = "cells"


def _on_start(h: dict, run: WorkerRun, job: WorkerJob, state: dict) -> None:
    i = state["part"]
    if (
        i >= len(job.parts)
        or h.get("part") != job.parts[i]["id"]
        or state["cell"] != job.parts[i].get("after", len(job.cells))
    ):
        raise _Protocol("unexpected part start")
    run.phase, run.current = "part", job.parts[i]["id"]
    state["case"] = -1


def _on_mem(h: dict, run: WorkerRun, job: WorkerJob, state: dict) -> None:
    """A memory-limited case begins: a fresh group for it, then its inputs (they exist in the
    worker only from now on)."""
    part = job.parts[state["part"]]
    case = h.get("case")
    held = job.held.get(part["id"], {})
    if state.get("open") is not None or not _is_int(case) or case <= state["case"] or case not in held:
        raise _Protocol("unexpected memory case")
    state["case"] = case
    key = (part["id"], case)
    run.memory[key] = {"inputs": len(held[case]), "ready": False, "peak_call": None}
    group, answers = state.get("group"), state.get("answers")
    ceiling = case_ceiling(job.allowed.get(part["id"], {}).get(case))
    folder = group.case_group(ceiling) if group is not None else None
    state["open"] = state["last"] = {"key": key, "folder": folder, "pid": None, "ceiling": ceiling}
    if answers is not None:
        answers.send(struct.pack(">Q", len(held[case])) + held[case])


def _on_ready(h: dict, run: WorkerRun, job: WorkerJob, state: dict) -> None:
    """The case's inputs are in place in the process that will call the answer: the grader moves
    that process into the case's group and stops the rest of the worker until the call is over."""
    case = state.get("open")
    if case is None or h.get("case") != case["key"][1] or run.memory[case["key"]]["ready"] or not _is_int(h.get("pid")):
        raise _Protocol("unexpected memory case start")
    run.memory[case["key"]]["ready"] = True
    group = state.get("group")
    if group is not None and case["folder"] is not None:
        pid = group.find(h["pid"])
        if pid is None:
            raise _Protocol("the memory case's process is not the worker's")
        group.move(pid, case["folder"])
        case["pid"], case["shared"] = pid, _shared_resident(pid)
        state["frozen"] = group.signal_main(signal.SIGSTOP)
    if state.get("answers") is not None:
        state["answers"].send(b"g")


def _on_called(h: dict, run: WorkerRun, job: WorkerJob, state: dict) -> None:
    """The call is over: its group's peak is what the case charged (read here, by the grader)."""
    case = state.get("open")
    if case is None or case["folder"] is None or h.get("case") != case["key"][1] or not run.memory[case["key"]]["ready"]:
        raise _Protocol("unexpected end of a memory case")
    shared = 0
    if case.get("pid"):
        shared = max(_shared_resident(case["pid"]), case.get("shared_peak", 0)) - case.get("shared", 0)
    run.memory[case["key"]]["peak_call"] = max(state["group"].peak(case["folder"]), shared)
    if case["ceiling"] is not None:
        state["group"].unlimit(case["folder"])  # handing the outcome back is not the call's
    _thaw(state)
    state["open"] = None
    state["answers"].send(b"g")


def _shared_resident(pid: int) -> int:
    """The bytes of shared memory (``RssShmem``: a shared anonymous mapping, tmpfs) that process
    ``pid`` has in its pages now, 0 where it cannot be read. Shared pages an earlier cell touched
    stay charged to the worker's group, not the case's: a call that writes into such a mapping
    (an (n, n) array set aside before the part, clean-room red team) charges nothing there, but
    the pages come into the case's process as it touches them, which this counts (read while the
    call runs, every pass of the grader's loop, and after it)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("RssShmem:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _on_lost(h: dict, run: WorkerRun, job: WorkerJob, state: dict) -> None:
    """The case's process ended without handing its outcome back. Where the kernel stopped its
    call at the case's ceiling (the grader reads that from the case's group), the call allocated
    more than any passing call does: recorded so, and the worker goes on (``m``). Otherwise the
    worker ends as the case's process did (``e``)."""
    case, group = state.get("last"), state.get("group")
    part = job.parts[state["part"]]
    if case is None or group is None or case.get("lost") or case["key"] != (part["id"], h.get("case")):
        raise _Protocol("unexpected end of a memory case's process")
    case["lost"] = True
    rec = run.memory[case["key"]]
    stopped = rec["ready"] and rec["peak_call"] is None and case["ceiling"] is not None
    if stopped and group.oom_kills(case["folder"]) > 0:
        rec["peak_call"] = max(group.peak(case["folder"]), case["ceiling"])
        rec["stopped"] = True
        group.stopped.append(case["folder"])
    _thaw(state)
    state["open"] = None
    state["answers"].send(b"m" if rec.get("stopped") else b"e")


_CASE_EVENTS = {"mem": _on_mem, "ready": _on_ready, "called": _on_called, "lost": _on_lost}


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _thaw(state: dict) -> None:
    frozen = state.pop("frozen", None)
    for pid in frozen or []:
        try:
            os.kill(pid, signal.SIGCONT)
        except (ProcessLookupError, PermissionError):
            pass


def _watch_case(state: dict) -> None:
    """A case process that ended without reporting lets the rest of the worker go on (to see it)."""
    case = state.get("open")
    if state.get("frozen") is None or case is None or case["pid"] is None:
        return
    try:
        alive = case["pid"] in state["group"].pids(case["folder"])
    except (OSError, ValueError):
        alive = False
    if not alive:
        _thaw(state)
    else:  # sampled while the call runs: shared pages it unmaps before it returns still count
        case["shared_peak"] = max(case.get("shared_peak", 0), _shared_resident(case["pid"]))


def _on_part(h: dict, blob: bytes, run: WorkerRun, job: WorkerJob, limits: Limits, state: dict) -> None:
    part = job.parts[state["part"]]
    if h.get("part") != part["id"]:
        raise _Protocol("result for another part")
    _thaw(state)
    state["open"] = None
    try:
        records = plain.unpack(blob, max_bytes=limits.result_bytes)
    except plain.PlainDataError as exc:
        raise _Protocol(f"result is not plain data: {exc}") from exc
    if not isinstance(records, list) or len(records) != len(part["trace"]):
        raise _Protocol("wrong number of outcomes")
    clean = []
    keys = ({"error", "out"}, {"error", "out", "seconds"}) if part.get("timed") else ({"error", "out"},)
    for rec in records:
        if not isinstance(rec, dict) or set(rec) not in keys:
            raise _Protocol("malformed outcome")
        err = rec["error"]
        if err is not None and not isinstance(err, str):
            raise _Protocol("malformed error name")
        clean.append({"error": _error_name(err) if err is not None else None, "out": rec["out"]})
        if "seconds" in rec:  # a timed call (attngrade.leaderboard): evidence, checked in checking
            seconds = rec["seconds"]
            clean[-1]["seconds"] = float(seconds) if isinstance(seconds, float) and seconds > 0 else None
    for case in job.held.get(part["id"], {}):  # a memory case the grader did not measure earns nothing
        rec = run.memory.get((part["id"], case), {})
        if rec.get("stopped"):  # its peak is over the case's allowance, whatever the worker says
            clean[case] = {"error": None, "out": None}
        measured = rec.get("ready") and (state.get("group") is None or rec.get("peak_call") is not None)
        if not measured and clean[case]["error"] is None:
            clean[case] = {"error": "NotMeasured", "out": None}
    run.parts[part["id"]] = PartData(bool(h.get("defined") is True), clean)
    state["part"] += 1
    run.phase, run.current = "between", None


#: What the kernel counts in a case's group besides the answer's own arrays (the pages of the
#: worker's interpreter that the call writes to and so copies, allocator pages): forgiven.
KERNEL_SLACK = 4 << 20
#: Room between the most a passing call may allocate and where the kernel stops it.
CASE_HEADROOM = 1 << 20


def case_ceiling(allowed) -> int | None:
    """The limit of a memory case's group for a call allowed ``allowed`` bytes (None: the worker's
    limit only). Every call that can pass stays below it (:func:`case_memory` forgives
    :data:`KERNEL_SLACK`), so the kernel stops at once a call that would only fail later, say
    after building gigabytes: its peak is then recorded as the ceiling, over its allowance."""
    if not _is_int(allowed) or allowed < 0:
        return None
    return allowed + KERNEL_SLACK + CASE_HEADROOM


def case_memory(rec: dict | None) -> int | None:
    """What a memory-limited case charged: the peak of the case's own group while its call ran
    (read by the grader), less :data:`KERNEL_SLACK`. None for no such case; 0 where the kernel
    gave no count (the limit is then not enforced, and the summary's isolation says so)."""
    if rec is None:
        return None
    call = rec.get("peak_call")
    return max(call - KERNEL_SLACK, 0) if _is_int(call) else 0


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
            iso.close()
            reason = run.detail or run.end
            notes.append(f"{mode}: probe failed ({reason.strip()[:300]})")
            continue
        rep = run.report
        if rep.get("course_visible") and mode in ("namespaces", "userns"):
            # Still the strongest level; the course sits inside what the worker must see (/usr?).
            notes.append(f"{mode}: part of the course is visible inside the worker (it lies under a system path)")
        iso.enforced = _enforced(mode, rep, memory)
        iso.notes = notes
        return iso
    raise RuntimeError("no isolation level works here: " + "; ".join(notes))


def _enforced(mode: str, rep: dict, memory: str) -> dict:
    """What a level enforced, from its probe's report."""
    return {
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
        "import_blocker": mode not in ("namespaces", "userns"),
    }
