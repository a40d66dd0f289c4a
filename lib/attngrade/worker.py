"""The student's side of grading: one isolated process that only *computes*.

Started by :mod:`attngrade.sandbox` as ``python -I worker.py RESULT_FD STATUS_FD GO_FD`` (under
``unshare`` where the platform allows, inside its own memory cgroup where one can be made). It
reads everything it needs from stdin before any student code exists in the process: a JSON
configuration (cells to run in order, parts to compute and where, limits, how to build its
private root) and the hidden cases' *inputs* as plain data, except those of memory-limited
cases. Then it

1. imports NumPy and :func:`attngrade.spec.call_case` (trusted code, before any limit);
2. builds its view of the file system (namespaces: a fresh read-only root with the system
   libraries, the Python standard library, package folders emptied except the allowed entries
   (NumPy and what the release's setup cells import), a small writable ``/tmp`` whose empty
   ``/tmp/work`` is the working directory, ``/dev/shm`` and a few devices; the course, the
   grader and the reference libraries are not there), forks a monitor when it is process 1 of
   a PID namespace, sets resource limits and drops to an unprivileged user;
3. reports "boot" and waits on ``GO_FD`` until the grader has read the memory in use;
4. runs the cells in order, each in its own ``try``, in a real ``__main__`` module; at each test
   cell's place it computes that part (each case through :func:`~attngrade.spec.call_case`) and
   writes the outcomes, as plain data, to ``RESULT_FD`` in length-prefixed frames. A
   memory-limited case's inputs arrive on ``GO_FD`` only when the case starts, after the grader
   reset the cgroup's peak. After every cell, case and part the namespaces of builtins, NumPy
   and the worker's own modules are put back as they were before any student code.

It never sees expected values, tolerances or case labels, never measures anything, and never
decides a score: the grader checks the outputs, and reads memory from the kernel, in its own
process. Everything written to ``RESULT_FD`` is untrusted there.
"""

from __future__ import annotations

import builtins
import json
import os
import struct
import sys

_FRAME = struct.Struct(">II")  # total length after this word, header length


def _read_exact(fd: int, n: int) -> bytes:
    chunks = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            raise EOFError("stdin closed early")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _read_job():
    (n_config,) = struct.unpack(">I", _read_exact(0, 4))
    config = json.loads(_read_exact(0, n_config))
    (n_inputs,) = struct.unpack(">Q", _read_exact(0, 8))
    inputs = _read_exact(0, n_inputs)
    return config, inputs


# --------------------------------------------------------------------------------------------
# The private root (Linux namespaces)

_MS = {
    "RDONLY": 1,
    "NOSUID": 2,
    "NODEV": 4,
    "NOEXEC": 8,
    "REMOUNT": 32,
    "NOATIME": 1024,
    "NODIRATIME": 2048,
    "BIND": 4096,
    "REC": 16384,
    "PRIVATE": 1 << 18,
    "RELATIME": 1 << 21,
}


def _libc():
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    return libc


def _mount(libc, src, target, fstype, flags, data=None):
    import ctypes

    enc = lambda s: s.encode() if isinstance(s, str) else s
    if libc.mount(enc(src), enc(target), enc(fstype), flags, enc(data)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), target)


def _locked_flags(path: str) -> int:
    """Mount flags of ``path`` that a bind remount must keep (required inside a user namespace)."""
    st = os.statvfs(path).f_flag
    flags = 0
    for name, st_bit in (("NOSUID", 2), ("NODEV", 4), ("NOEXEC", 8), ("NOATIME", 1024), ("NODIRATIME", 2048)):
        if st & st_bit:
            flags |= _MS[name]
    if st & 4096:  # ST_RELATIME
        flags |= _MS["RELATIME"]
    return flags


def _build_root(cfg: dict, report: dict) -> None:
    libc = _libc()
    root = cfg["root"]
    _mount(libc, None, "/", None, _MS["REC"] | _MS["PRIVATE"])
    _mount(libc, "tmpfs", root, "tmpfs", _MS["NOSUID"] | _MS["NODEV"], "size=4m,mode=755")
    os.makedirs(root + "/tmp")
    _mount(
        libc,
        "tmpfs",
        root + "/tmp",
        "tmpfs",
        _MS["NOSUID"] | _MS["NODEV"],
        f"size={int(cfg['tmp_bytes'])},mode=1777",
    )
    read_only = True
    for path in sorted(cfg["expose"], key=len):
        if not os.path.lexists(path):
            continue
        if os.path.islink(path) and os.path.dirname(path) == "/":
            os.symlink(os.readlink(path), root + path)
            continue
        target = root + path
        if os.path.isdir(path):
            os.makedirs(target, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            open(target, "a").close()
        _mount(libc, path, target, None, _MS["BIND"] | _MS["REC"])
        try:
            _mount(
                libc,
                None,
                target,
                None,
                _MS["BIND"]
                | _MS["REMOUNT"]
                | _MS["RDONLY"]
                | _MS["NOSUID"]
                | _MS["NODEV"]
                | _locked_flags(path),
            )
        except OSError:
            read_only = False
    # Package folders: emptied, then only the allowed entries (NumPy, the setup cells' imports).
    views = cfg.get("views", {})
    for folder in cfg.get("masks", []):
        target = root + folder
        if not os.path.isdir(folder):
            continue
        os.makedirs(target, exist_ok=True)
        _mount(libc, "tmpfs", target, "tmpfs", _MS["NOSUID"] | _MS["NODEV"], "size=1m,mode=755")
        for entry in views.get(folder, []):
            src, dst = os.path.join(folder, entry), os.path.join(target, entry)
            if os.path.isdir(src):
                os.makedirs(dst, exist_ok=True)
            else:
                open(dst, "a").close()
            _mount(libc, src, dst, None, _MS["BIND"] | _MS["REC"])
            _mount(libc, None, dst, None, _MS["BIND"] | _MS["REMOUNT"] | _MS["RDONLY"] | _MS["NOSUID"]
                   | _MS["NODEV"] | _locked_flags(src))
        _mount(libc, None, target, None, _MS["REMOUNT"] | _MS["RDONLY"] | _MS["NOSUID"] | _MS["NODEV"])
    os.makedirs(root + "/dev")
    for dev in ("null", "zero", "urandom", "random"):
        open(root + "/dev/" + dev, "a").close()
        _mount(libc, "/dev/" + dev, root + "/dev/" + dev, None, _MS["BIND"])
    os.makedirs(root + "/dev/shm")  # POSIX semaphores and shared memory (multiprocessing)
    _mount(libc, "tmpfs", root + "/dev/shm", "tmpfs", _MS["NOSUID"] | _MS["NODEV"],
           f"size={int(cfg['tmp_bytes'])},mode=1777")
    try:
        _mount(libc, None, root, None, _MS["REMOUNT"] | _MS["RDONLY"] | _MS["NOSUID"] | _MS["NODEV"])
    except OSError:
        read_only = False
    os.makedirs(root + "/tmp/work")
    os.chmod(root + "/tmp/work", 0o777)
    os.chroot(root)
    os.chdir("/tmp/work")
    report["private_root"] = True
    report["read_only_binds"] = read_only


# --------------------------------------------------------------------------------------------
# Limits and privileges


def _no_new_privs() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(38, 1, 0, 0, 0) == 0  # PR_SET_NO_NEW_PRIVS
    except Exception:  # noqa: BLE001
        return False


def _apply_limits(limits: dict, report: dict) -> None:
    import resource

    applied = []
    table = {
        "as": "RLIMIT_AS",
        "cpu": "RLIMIT_CPU",
        "nproc": "RLIMIT_NPROC",
        "fsize": "RLIMIT_FSIZE",
        "nofile": "RLIMIT_NOFILE",
        "core": "RLIMIT_CORE",
    }
    for key, name in table.items():
        value = limits.get(key)
        if value is None or not hasattr(resource, name):
            continue
        res = getattr(resource, name)
        soft = int(value)
        hard = soft + 2 if key == "cpu" else soft
        try:
            cur_soft, cur_hard = resource.getrlimit(res)
            if cur_hard != resource.RLIM_INFINITY:
                soft, hard = min(soft, cur_hard), min(hard, cur_hard)
            resource.setrlimit(res, (soft, hard))
            applied.append(name)
        except (ValueError, OSError):
            pass
    report["rlimits"] = applied


def _drop_privileges(uid, gid, report: dict) -> None:
    if uid is None or os.geteuid() != 0:
        report["uid"] = os.getuid()
        return
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    report["uid"] = os.getuid()


def _monitor(child: int, status_fd: int) -> None:
    """Process 1 of the PID namespace: reap everything, report how the worker ended, exit."""
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            status = 0
            break
        except InterruptedError:
            continue
        if pid == child:
            break
    if os.WIFSIGNALED(status):
        msg = {"signal": os.WTERMSIG(status)}
    else:
        msg = {"code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1}
    try:
        os.write(status_fd, (json.dumps(msg) + "\n").encode())
    finally:
        os._exit(0)  # the kernel now kills whatever the student left in the namespace


# --------------------------------------------------------------------------------------------
# Running the student's code


class _Blocker:
    """A meta-path finder that refuses the reference libraries and the grader inside the worker."""

    def __init__(self, names):
        self.names = frozenset(names)

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in self.names:
            raise ImportError(f"importing {fullname} is not allowed in an answer")
        return None


def _safe_name(exc: BaseException) -> str:
    name = type(exc).__name__
    return name if isinstance(name, str) and name.isidentifier() and len(name) <= 80 else "Exception"


def main() -> None:
    result_fd, status_fd, go_fd = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    config, inputs_blob = _read_job()

    # Trusted imports, before any limit or student code.
    try:
        import attngrade  # noqa: F401
    except ImportError:
        sys.path.insert(0, config["lib"])
    import numpy  # noqa: F401

    import types

    from attngrade import plain
    from attngrade.spec import Outcome, call_case

    spec_module = sys.modules["attngrade.spec"]

    report: dict = {"mode": config["mode"], "private_root": False}
    mode = config["mode"]
    if mode in ("namespaces", "userns"):
        _build_root(config, report)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)

    main_pid = os.getpid()
    report["pid_namespace"] = main_pid == 1
    if main_pid == 1:
        child = os.fork()
        if child:
            os.close(result_fd)
            os.close(go_fd)
            _monitor(child, status_fd)
        main_pid = os.getpid()
    os.close(status_fd)

    report["no_new_privs"] = _no_new_privs()
    _apply_limits(config["limits"], report)
    _drop_privileges(config.get("uid"), config.get("gid"), report)
    if mode in ("uid", "basic"):
        os.chdir(config["root"])

    write = os.write
    getpid = os.getpid
    exit_now = os._exit
    pack = plain.pack
    dumps = json.dumps

    def send(header: dict, blob: bytes = b"") -> None:
        if getpid() != main_pid:  # a forked copy of the student's code never reports
            exit_now(0)
        head = dumps(header).encode()
        data = _FRAME.pack(4 + len(head) + len(blob), len(head)) + head + blob
        view = memoryview(data)
        while view:
            n = write(result_fd, view)
            view = view[n:]

    if config.get("probe"):
        import decimal  # noqa: F401 - the standard library is readable after dropping privileges
        import random  # noqa: F401

        report["course_visible"] = any(os.path.exists(p) for p in config.get("hidden", []))
        report["network"] = _network_reachable()
        send({"ev": "probe", "report": report})
        send({"ev": "done"})
        exit_now(0)

    inputs = plain.unpack(inputs_blob, max_bytes=1 << 62)
    del inputs_blob
    blocked = set(config["blocked"])
    sys.meta_path.insert(0, _Blocker(blocked))
    for name in list(sys.modules):
        if name.split(".")[0] in blocked:
            del sys.modules[name]

    import signal

    if hasattr(signal, "SIGXFSZ"):
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)  # a file past RLIMIT_FSIZE ends the worker
    read_exact, unpack, struct_unpack = _read_exact, plain.unpack, struct.unpack
    send({"ev": "boot", "report": report})
    read_exact(go_fd, 1)  # the grader has read the memory in use before any student code

    # The cells run in a real ``__main__`` module, as in a kernel: functions defined there pickle by
    # name, so multiprocessing works.
    main_module = types.ModuleType("__main__")
    main_module.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = main_module
    namespace = main_module.__dict__
    # What every cell, every part and the worker's own reports start from, whatever a cell patched:
    # the namespaces of builtins and NumPy as they were before any student code (the dictionaries
    # are held here, so restoring needs no name a cell could have replaced).
    import io
    import zipfile

    import numpy.lib.format

    trusted = (builtins, numpy, numpy.linalg, numpy.lib.format, json, json.encoder, json.decoder, struct, io,
               zipfile, plain, spec_module, os)
    pristine = [(vars(m), dict(vars(m))) for m in trusted]
    result_limit = int(config.get("result_bytes", 1 << 62))

    def restore() -> None:
        for d, saved in pristine:
            for key in [k for k in d if k not in saved]:
                del d[key]
            d.update(saved)

    parts_after: dict = {}
    for part in config["parts"]:
        parts_after.setdefault(part.get("after", len(config["cells"])), []).append(part)

    def run_parts(position: int) -> None:
        for part in parts_after.get(position, []):
            send({"ev": "start", "part": part["id"]})
            fn = namespace.get(part["function"])
            restore()
            outcomes = []
            for index, ((args, kwargs), trace) in enumerate(zip(inputs[part["id"]], part["trace"])):
                if not callable(fn):
                    outcomes.append(Outcome(None, "NameError"))
                    continue
                if trace:  # a memory case: its inputs come now, after the grader reset the peak
                    send({"ev": "mem", "case": index})
                    (size,) = struct_unpack(">Q", read_exact(go_fd, 8))
                    args, kwargs = unpack(read_exact(go_fd, size), max_bytes=1 << 62)
                    send({"ev": "ready", "case": index})
                    read_exact(go_fd, 1)  # the grader has read the usage with the inputs in place
                outcome = call_case(fn, tuple(args), dict(kwargs))
                restore()
                if outcome.error is None and _nbytes(outcome.output) > result_limit:
                    outcome = Outcome(None, "OutputTooLarge")  # freed now, never packed
                outcomes.append(outcome)
            records, used = [], 1
            for outcome in outcomes:
                record = {"error": outcome.error, "out": outcome.output}
                count = [used]
                try:
                    plain.to_skeleton(record, [], _count=count)
                    used = count[0]
                except (plain.PlainDataError, RecursionError) as exc:
                    too_big = isinstance(exc, RecursionError) or "too" in str(exc)
                    record = {"error": "OutputTooLarge" if too_big else "TypeError", "out": None}
                    used += 8
                records.append(record)
            try:
                blob = pack(records)
            except MemoryError:
                records = [{"error": "OutputTooLarge", "out": None} for _ in records]
                blob = pack(records)
            send({"ev": "part", "part": part["id"], "defined": callable(fn)}, blob)

    run_parts(0)
    for position, cell in enumerate(config["cells"], start=1):
        error = None
        try:
            code = compile(cell["source"], f"<cell {cell['id']}>", "exec")
            exec(code, namespace)  # noqa: S102 - running the student's answer is the point
        except BaseException as exc:  # noqa: BLE001 - like a notebook: the next cell still runs
            error = _safe_name(exc)
        restore()
        send({"ev": "cell", "id": cell["id"], "error": error})
        run_parts(position)

    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            pass
    send({"ev": "done"})
    exit_now(0)


def _nbytes(value, depth: int = 0) -> int:
    """The bytes of the arrays and strings in a plain value (what packing it would take)."""
    if depth > 40:
        return 0
    nbytes = getattr(value, "nbytes", None)
    if isinstance(nbytes, int):
        return nbytes
    if isinstance(value, (list, tuple)):
        return sum(_nbytes(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return sum(_nbytes(v, depth + 1) for v in value.values())
    if isinstance(value, (str, bytes)):
        return len(value)
    return 8


def _network_reachable() -> bool:
    import socket

    try:
        with socket.create_connection(("1.1.1.1", 53), timeout=0.5):
            return True
    except OSError:
        return False


if __name__ == "__main__":
    main()
