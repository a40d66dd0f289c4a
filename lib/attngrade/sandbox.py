"""The grader's side of a worker: start it isolated, feed it, read it as untrusted data, end it.

Isolation levels, strongest first (:func:`detect_isolation` probes which one works here):

``namespaces``  (Linux, root) ``unshare`` gives the worker new PID, network, mount, IPC and UTS
                namespaces; it builds a private read-only root holding only the Python
                installation, an empty size-limited ``/tmp`` (its working directory) and
                ``/dev/null``; it drops to an unprivileged uid (one per concurrent job) with no
                new privileges; killing it kills everything it started.
``userns``      (Linux, non-root, user namespaces allowed) the same namespaces and private root
                inside a user namespace; the worker keeps the invoking user's uid outside it.
``uid``         (Linux, root, no namespaces) an unprivileged uid and a scratch directory; files
                readable by everybody stay readable.
``basic``       (any POSIX) a separate process and session with resource limits and a scratch
                directory; no protection of files the grading user can read.

On every level: a fresh interpreter in isolated mode (``-I``) with a scrubbed environment,
``setrlimit`` limits (address space, CPU time, processes, file size, open files, no core
files), a wall-clock limit per phase that kills the whole process group, capped stdout/stderr,
results read from a pipe as length-prefixed frames of plain data and validated here.
"""

from __future__ import annotations

import json
import os
import pwd
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


@dataclass
class WorkerJob:
    cells: list  # [{"id": label, "source": python}]
    parts: list  # [{"id": grade_id, "function": name, "trace": [bool per case]}]
    inputs: bytes  # plain.pack({grade_id: [(args, kwargs), ...]})
    blocked: list  # top-level modules the worker refuses to import


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


class _Protocol(Exception):
    pass


def _sandbox_uids(n: int) -> list[int]:
    uids, uid = [], 61000
    while len(uids) < n and uid < 65000:
        try:
            pwd.getpwuid(uid)
        except KeyError:
            uids.append(uid)
        uid += 1
    return uids


def _nogroup() -> int:
    import grp

    for name in ("nogroup", "nobody"):
        try:
            return grp.getgrnam(name).gr_gid
        except KeyError:
            continue
    return 65534


def _expose_paths() -> list[str]:
    """What the private root shows: the system's libraries and this Python installation only."""
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
    return {
        "mode": mode,
        "root": scratch,
        "expose": _expose_paths(),
        "hidden": hidden,
        "tmp_bytes": limits.tmp_mb << 20,
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
    cmd = [sys.executable, "-I", WORKER, str(res_w), str(st_w)]
    if mode == "namespaces":
        cmd = _UNSHARE + ["--"] + cmd
    elif mode == "userns":
        cmd = _UNSHARE[:1] + ["--user", "--map-root-user"] + _UNSHARE[1:] + ["--"] + cmd
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(res_w, st_w),
            env=_env(mode, scratch),
            cwd=scratch,
            start_new_session=True,
        )
    except OSError as exc:
        for fd in (res_r, res_w, st_r, st_w):
            os.close(fd)
        _rmtree(scratch)
        run.detail = f"could not start the worker: {exc}"
        return run
    os.close(res_w)
    os.close(st_w)

    def feed():
        try:
            proc.stdin.write(payload)
            proc.stdin.close()
        except (BrokenPipeError, OSError, ValueError):
            pass

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    try:
        _pump(proc, res_r, st_r, run, job, limits, started)
    finally:
        _kill_group(proc)
        if mode == "uid" and uid is not None:
            _kill_uid(uid)
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
        if run.exit.get("signal") == signal.SIGXCPU:
            run.end, run.detail = "timeout", "CPU time limit"
        elif run.exit.get("signal") == signal.SIGXFSZ:
            run.end, run.detail = "output", "file size limit"
    return run


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


def _pump(proc, res_r, st_r, run: WorkerRun, job: WorkerJob, limits: Limits, started: float) -> None:
    sel = selectors.DefaultSelector()
    for fobj, name in ((proc.stdout, "stdout"), (proc.stderr, "stderr")):
        os.set_blocking(fobj.fileno(), False)
        sel.register(fobj.fileno(), selectors.EVENT_READ, name)
    for fd, name in ((res_r, "result"), (st_r, "status")):
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ, name)
    buffers = {"result": bytearray(), "status": bytearray()}
    heads = {"stdout": bytearray(), "stderr": bytearray()}
    state = {"cell": 0, "part": 0}
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
    if ev == "boot" and run.phase == "boot":
        run.booted = True
        run.report = h.get("report") if isinstance(h.get("report"), dict) else {}
        run.phase = "cells"
        return now + limits.timeout
    if ev == "cell" and run.phase == "cells":
        i = state["cell"]
        if i >= len(job.cells) or h.get("id") != job.cells[i]["id"]:
            raise _Protocol("unexpected cell report")
        err = h.get("error")
        run.cells[job.cells[i]["id"]] = _error_name(err) if err is not None else None
        state["cell"] += 1
        return deadline
    if ev == "start" and run.phase in ("cells", "between"):
        i = state["part"]
        if state["cell"] != len(job.cells) or i >= len(job.parts) or h.get("part") != job.parts[i]["id"]:
            raise _Protocol("unexpected part start")
        run.phase, run.current = "part", job.parts[i]["id"]
        return now + limits.timeout
    if ev == "part" and run.phase == "part":
        part = job.parts[state["part"]]
        if h.get("part") != part["id"]:
            raise _Protocol("result for another part")
        try:
            records = plain.unpack(blob, max_bytes=limits.result_bytes)
        except plain.PlainDataError as exc:
            raise _Protocol(f"result is not plain data: {exc}") from exc
        if not isinstance(records, list) or len(records) != len(part["trace"]):
            raise _Protocol("wrong number of outcomes")
        clean = []
        for rec in records:
            if not isinstance(rec, dict) or set(rec) != {"error", "peak", "out"}:
                raise _Protocol("malformed outcome")
            err, peak = rec["error"], rec["peak"]
            if err is not None and not isinstance(err, str):
                raise _Protocol("malformed error name")
            if peak is not None and (not isinstance(peak, int) or isinstance(peak, bool) or peak < 0):
                raise _Protocol("malformed memory peak")
            clean.append(
                {"error": _error_name(err) if err is not None else None, "peak": peak, "out": rec["out"]}
            )
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


def _error_name(err) -> str:
    if isinstance(err, str) and err.isidentifier() and len(err) <= 80:
        return err
    return "Exception"


# --------------------------------------------------------------------------------------------


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
    uids = _sandbox_uids(max(jobs, 1)) if os.geteuid() == 0 else []
    gid = _nogroup() if uids else None
    for mode in modes:
        if mode in ("namespaces", "userns") and shutil.which("unshare") is None:
            notes.append(f"{mode}: no unshare command")
            continue
        if mode in ("namespaces", "uid") and not uids:
            notes.append(f"{mode}: needs root")
            continue
        iso = Isolation(mode, uids=uids if mode in ("namespaces", "uid") else [], gid=gid)
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
            "import_blocker": True,
        }
        iso.notes = notes
        return iso
    raise RuntimeError("no isolation level works here: " + "; ".join(notes))
