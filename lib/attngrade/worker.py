"""The student's side of grading: one isolated process that only *computes*.

Started by :mod:`attngrade.sandbox` as ``python -I worker.py RESULT_FD STATUS_FD GO_FD`` (under
``unshare`` where the platform allows, inside its own memory cgroup where one can be made), or,
at the ``namespaces`` level, forked from a worker template (``worker.py --template LIB``: step 1
below done once per class, see :func:`_template`), which then does what ``unshare`` does. It
reads everything it needs from stdin before any student code exists in the process: a JSON
configuration (cells to run in order, parts to compute and where, limits, how to build its
private root) and the hidden cases' *inputs* as plain data, except those of memory-limited
cases. Then it

1. imports NumPy and private copies of :mod:`attngrade.plain` and :mod:`attngrade.spec`
   (trusted code, before any limit), whose functions see builtins and the standard library
   modules they use as they were then;
2. builds its view of the file system (namespaces: a fresh read-only root with the system
   libraries, the Python standard library, package folders that show the course environment
   minus the references, a small writable ``/tmp`` whose empty ``/tmp/work`` is the working
   directory, ``/dev/shm`` and a few devices; the course, the grader and the reference libraries
   are not there), forks a monitor when it is process 1 of a PID namespace, sets resource limits
   and drops to an unprivileged user;
3. reports "boot" and waits on ``GO_FD`` until the grader has read the memory in use;
4. runs the code cells as the student's notebook ran them (setup, answers, added cells and the
   test cells' visible checks), each in its own ``try``, in a real ``__main__`` module; after each
   test cell it computes that part (each case through :func:`~attngrade.spec.call_case`) and
   writes the outcomes, as plain data, to ``RESULT_FD`` in length-prefixed frames. A
   memory-limited case's inputs arrive on ``GO_FD`` only when the case starts; where the grader
   counts memory per case, the case runs in a forked child that the grader moves into a memory
   group of its own (where the kernel stops a call that allocates more than the case allows; the
   grader then says so, and the worker goes on with the next case). The student's namespace (builtins included) stays as the student's code
   left it; the worker's own code keeps the builtins it took before any student code.

For an assignment whose answers may use torch only to allocate and launch (a part's ``watch``),
each call runs under :mod:`attngrade.tripwire`: a call that computed with torch or launched no
Triton kernel fails there, with the tripwire's error name.

It never sees expected values, tolerances or case labels, never measures anything, and never
decides a score: the grader checks the outputs, and reads memory from the kernel, in its own
process. Everything written to ``RESULT_FD`` is untrusted there.
"""

from __future__ import annotations

import builtins
import json
import os
import re
import struct
import subprocess
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


def _read_only(libc, target: str, source: str) -> bool:
    """Remount the bind at ``target`` read-only (keeping the flags ``source`` is locked with)."""
    flags = _MS["BIND"] | _MS["REMOUNT"] | _MS["RDONLY"] | _MS["NOSUID"] | _MS["NODEV"]
    try:
        _mount(libc, None, target, None, flags | _locked_flags(source))
        return True
    except OSError:
        return False


def _bind(libc, src: str, dst: str, read_only: bool = True) -> bool:
    """Bind ``src`` at ``dst`` (made as an empty folder or file first), read-only unless told."""
    if os.path.isdir(src):
        os.makedirs(dst, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        open(dst, "a").close()
    _mount(libc, src, dst, None, _MS["BIND"] | _MS["REC"])
    return _read_only(libc, dst, src) if read_only else True


def _tree_read_only(libc, target: str) -> bool:
    """Make ``target`` and every mount below it read-only, nosuid and nodev in one call
    (``mount_setattr`` with ``AT_RECURSIVE``, Linux 5.12 on); False where that is not available."""
    import ctypes

    attr = (ctypes.c_uint64 * 4)(1 | 2 | 4, 0, 0, 0)  # MOUNT_ATTR_RDONLY | NOSUID | NODEV
    try:
        return libc.syscall(442, -100, target.encode(), 0x8000, ctypes.byref(attr), ctypes.sizeof(attr)) == 0
    except (AttributeError, OSError):
        return False


def _bind_exposed(libc, root: str, expose: list) -> bool:
    read_only = True
    for path in sorted(expose, key=len):
        if not os.path.lexists(path):
            continue
        if os.path.islink(path) and os.path.dirname(path) == "/":
            os.symlink(os.readlink(path), root + path)
            continue
        read_only = _bind(libc, path, root + path) and read_only
    return read_only


def _make_links(root: str, links: list) -> None:
    """The symbolic links on the way to the bound real paths (a linked ``.venv`` or course root),
    made after every bind: each ``where`` has no link above it, so nothing here is made through a
    link, and inside the root each link leads to the same bound, masked folder as outside."""
    for where, target in sorted(links, key=lambda link: len(link[0])):
        if os.path.lexists(root + where):
            continue  # inside a bound folder, where it is already what it is here
        os.makedirs(root + os.path.dirname(where), exist_ok=True)
        os.symlink(target, root + where)


def _bind_views(libc, root: str, masks: list, views: dict) -> None:
    """Package folders: emptied, then only the allowed entries (the course environment minus the
    references): what is not bound here does not exist inside the worker."""
    for folder in masks:
        target = root + folder
        if not os.path.isdir(folder):
            continue
        os.makedirs(target, exist_ok=True)
        _mount(libc, "tmpfs", target, "tmpfs", _MS["NOSUID"] | _MS["NODEV"], "size=1m,mode=755")
        entries = [(os.path.join(folder, e), os.path.join(target, e)) for e in views.get(folder, [])]
        for src, dst in entries:
            _bind(libc, src, dst, read_only=False)
        if not _tree_read_only(libc, target):
            for src, dst in entries:
                _read_only(libc, dst, src)
            _mount(libc, None, target, None, _MS["REMOUNT"] | _MS["RDONLY"] | _MS["NOSUID"] | _MS["NODEV"])


def _mount_devices(libc, root: str, tmp_bytes: int) -> None:
    os.makedirs(root + "/dev")
    for dev in ("null", "zero", "urandom", "random"):
        open(root + "/dev/" + dev, "a").close()
        _mount(libc, "/dev/" + dev, root + "/dev/" + dev, None, _MS["BIND"])
    os.makedirs(root + "/dev/shm")  # POSIX semaphores and shared memory (multiprocessing)
    _mount(libc, "tmpfs", root + "/dev/shm", "tmpfs", _MS["NOSUID"] | _MS["NODEV"], f"size={tmp_bytes},mode=1777")


def _mount_gpu(libc, root: str) -> None:
    """A timed job's GPU (:mod:`attngrade.leaderboard`): the NVIDIA device files and a ``/proc``
    of the worker's own PID namespace, which the CUDA driver reads (best effort: without them the
    timed calls fail and earn no speed points; nothing else changes)."""
    import glob

    for dev in glob.glob("/dev/nvidia*"):
        if not os.path.isdir(dev):
            open(root + dev, "a").close()
            _mount(libc, dev, root + dev, None, _MS["BIND"])
    os.makedirs(root + "/proc", exist_ok=True)
    try:
        _mount(libc, "proc", root + "/proc", "proc", _MS["NOSUID"] | _MS["NODEV"] | _MS["NOEXEC"])
    except OSError:
        pass


def _build_root(cfg: dict, report: dict) -> None:
    libc = _libc()
    root, tmp_bytes = cfg["root"], int(cfg["tmp_bytes"])
    _mount(libc, None, "/", None, _MS["REC"] | _MS["PRIVATE"])
    _mount(libc, "tmpfs", root, "tmpfs", _MS["NOSUID"] | _MS["NODEV"], "size=4m,mode=755")
    os.makedirs(root + "/tmp")
    _mount(libc, "tmpfs", root + "/tmp", "tmpfs", _MS["NOSUID"] | _MS["NODEV"], f"size={tmp_bytes},mode=1777")
    read_only = _bind_exposed(libc, root, cfg["expose"])
    _bind_views(libc, root, cfg.get("masks", []), cfg.get("views", {}))
    _make_links(root, cfg.get("links", []))
    _mount_devices(libc, root, tmp_bytes)
    for path in ("/proc/cpuinfo", "/sys/devices/system/cpu") if cfg.get("cpu_info") else ():
        try:  # what torch's cpuinfo reads (an assignment that allows torch); without it torch's
            read_only = _bind(libc, path, root + path) and read_only  # float16 casts fail
        except OSError:
            pass
    if cfg.get("gpu"):
        _mount_gpu(libc, root)
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
    """A meta-path finder that refuses the reference libraries where the worker has no private root
    (levels ``uid`` and ``basic``); with a private root they are absent and nothing is refused."""

    def __init__(self, names):
        self.names = frozenset(names)

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in self.names:
            raise ImportError(f"importing {fullname} is not allowed in an answer")
        return None


def _safe_name(exc: BaseException) -> str:
    name = type(exc).__name__
    return name if isinstance(name, str) and name.isidentifier() and len(name) <= 80 else "Exception"


_MISSING = object()


class _StudentBuiltins:
    """The student's builtins, kept apart from the ones the worker's own code uses.

    The worker takes the builtins as they are before any student code and runs its own code
    (reports, packing, its loop) with them. ``with student:`` puts back whatever the student's
    code had changed in them when it last ran, and on leaving keeps the student's changes aside
    again: the student's code always sees its namespace as it left it, and no change of the
    student's reaches the worker's reports.
    """

    def __init__(self):
        self.table = vars(builtins)
        self.pristine = dict(self.table)
        self.changed: dict = {}

    def __enter__(self):
        table = self.table
        for key, value in self.changed.items():
            if value is _MISSING:
                table.pop(key, None)
            else:
                table[key] = value
        return self

    def __exit__(self, *exc):
        table, pristine = self.table, self.pristine
        changed = {k: v for k, v in table.items() if pristine.get(k, _MISSING) is not v}
        changed.update({k: _MISSING for k in pristine if k not in table})
        for key in changed:
            if key in pristine:
                table[key] = pristine[key]
            else:
                del table[key]
        self.changed = changed
        return False


class _Watched:
    """The student's builtins and a tripwire's watch (:mod:`attngrade.tripwire`) around one call:
    the watch's mode goes on torch's dispatch stack last and comes off first."""

    def __init__(self, student: _StudentBuiltins, watch):
        self.student, self.watch = student, watch

    def __enter__(self):
        self.student.__enter__()
        try:
            self.watch.__enter__()
        except BaseException:
            self.student.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        try:
            self.watch.__exit__(*exc)
        finally:
            self.student.__exit__(*exc)
        return False


def _tripwire(tripwire):
    """The run-time check of an assignment whose answers may import torch (exercise 17's
    ``ALLOWED_MODULES``: torch only to allocate and launch, the attention in a Triton kernel),
    made before any student code, with torch imported now, for a job whose parts say ``watch``
    (:mod:`attngrade.running`); None where torch does not import (then no answer can use it)."""
    try:
        import torch
    except Exception:  # noqa: BLE001
        return None
    return tripwire.Tripwire(torch, sys.modules)


class _Channel:
    """Length-prefixed frames of plain data to the grader, written with references taken before
    any student code. Only the process that owns it reports: a forked copy of the student's code
    that tries is ended."""

    def __init__(self, fd: int):
        self.fd = fd
        self.owner = os.getpid()
        self._write, self._getpid, self._exit = os.write, os.getpid, os._exit
        self._dumps, self._frame = json.dumps, _FRAME.pack

    def send(self, header: dict, blob: bytes = b"") -> None:
        if self._getpid() != self.owner:
            self._exit(0)
        head = self._dumps(header).encode()
        view = memoryview(self._frame(4 + len(head) + len(blob), len(head)) + head + blob)
        while view:
            view = view[self._write(self.fd, view):]


def _display(*objs, **kwargs):
    """``display`` as a notebook kernel provides it without an import (IPython's, where installed)."""
    try:
        from IPython.display import display
    except ImportError:
        for obj in objs:
            print(repr(obj))
        return None
    return display(*objs, **kwargs)


_EXPANSION = re.compile(r"\$\$|\{\{|\}\}|\$([A-Za-z_]\w*)|\{([^{}]+)\}")
_INSTALLS = re.compile(r"\s*(?:sudo\s+)?(?:pip3?|conda|mamba|apt(?:-get)?|python3?\s+-m\s+pip)\s+install\b")


def _expand(command: str, frame) -> str:
    """IPython's expansion of ``$name`` and ``{expression}`` in a shell command, in the namespace
    of the code that runs it (``$$``, ``{{``, ``}}``: the character); what cannot be expanded
    stays as written, as in IPython."""
    names = {**frame.f_globals, **frame.f_locals}

    def one(m):
        text = m.group(0)
        if text in ("$$", "{{", "}}"):
            return text[0]
        try:
            return str(names[m.group(1)] if m.group(1) else eval(m.group(2), frame.f_globals, frame.f_locals))  # noqa: S307
        except Exception:  # noqa: BLE001 - as IPython: left as written
            return text

    return _EXPANSION.sub(one, command)


def _shell_escape(command, capture=False, program="sh"):
    """IPython's shell escapes in the worker (:data:`attngrade.staticcheck.SHELL_ESCAPE`): ``!cmd``
    runs ``cmd`` with ``/bin/sh`` (``%%bash``: ``/bin/bash``), its output in the worker's; with
    ``capture`` (``x = !cmd``, ``%sx``) the output (stderr included) is returned as a list of lines.
    Where the sandbox cannot run it (no shell, no process left) and for package installs, a line
    on stderr says why, and nothing runs."""
    command = _expand(str(command), sys._getframe(1))
    if _INSTALLS.match(command):
        return _not_run(command, "installing packages is not part of grading (the course environment is fixed)", capture)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - the student's stream
            pass
    pipe = subprocess.PIPE if capture else None
    try:
        done = subprocess.run(
            [f"/bin/{program}", "-c", command], stdin=subprocess.DEVNULL, stdout=pipe,
            stderr=subprocess.STDOUT if capture else None, check=False,
        )
    except OSError as exc:
        why = f"the grader's sandbox does not allow it here ({type(exc).__name__}: {exc.strerror or exc})"
        return _not_run(command, why, capture)
    return done.stdout.decode("utf-8", "replace").splitlines() if capture else None


def _not_run(command: str, why: str, capture: bool):
    sys.stderr.write(f"shell command not run: {command[:200]}: {why}\n")
    return [] if capture else None


#: The loops of the standard library's thread pools, by module and name: the threads a memory
#: case's process starts again (:func:`_restart_pool_threads`).
_POOL_LOOPS = frozenset({
    ("concurrent.futures.thread", "_worker"),  # ThreadPoolExecutor's threads
    ("multiprocessing.pool", "Pool._handle_workers"),  # multiprocessing.pool.ThreadPool's handlers,
    ("multiprocessing.pool", "Pool._handle_tasks"),  # which start its worker threads again
    ("multiprocessing.pool", "Pool._handle_results"),
})


def _other_threads() -> list:
    """The threads of the process other than the calling one (taken before a fork)."""
    threading = sys.modules.get("threading")
    try:
        return [t for t in threading.enumerate() if t is not threading.current_thread()] if threading else []
    except Exception:  # noqa: BLE001 - whatever the student's code made of the module
        return []


def _restart_pool_threads(threads: list) -> None:
    """In a memory case's process (a fork of the worker, where only the forking thread exists):
    the threads of the student's thread pools (``concurrent.futures.ThreadPoolExecutor``,
    ``multiprocessing.pool.ThreadPool``) that ran before the fork run again, from their loops, so
    that a call which uses a pool made by an earlier cell gets its work done instead of waiting
    for ever. What they do is the call's, counted in the case's memory group."""
    threading = sys.modules.get("threading")
    for old in threads:
        target = getattr(old, "_target", None)
        if (getattr(target, "__module__", None), getattr(target, "__qualname__", None)) not in _POOL_LOOPS:
            continue
        try:
            args = _fresh_executor_state(old, threading)
            if getattr(target, "__name__", "") == "_handle_workers":
                # multiprocessing's ThreadPool: its worker threads start again now, before the
                # call (which would otherwise find the pool's list of workers empty for a moment);
                # its handler of workers does not, as it waits on a lock shared with the worker's
                # process, which a fork killed while holding it would leave taken there
                target.__self__._maintain_pool(*args[2:12])
                continue
            new = threading.Thread(target=target, args=args, kwargs=old._kwargs, daemon=True)
            if hasattr(old, "_state"):
                new._state = old._state  # multiprocessing's handlers read their pool's state there
            new.start()
        except Exception:  # noqa: BLE001 - a thread that cannot start: the call goes on without it
            continue


def _fresh_executor_state(old, threading) -> tuple:
    """The arguments a pool thread starts again with. For a ``ThreadPoolExecutor``, its executor's
    work queue and locks are made anew, once: at the fork a thread of the parent may have held one
    of them (the idle semaphore it releases after each task, or the queue's lock, taken by a thread
    woken for a task and still waiting for the interpreter), and in the fork that lock stays taken
    for ever, so the next call waits for ever (37 forks in 150, measured). Nothing else holds
    them in the fork, where only the forking thread runs; the tasks queued at the fork move over."""
    args = old._args
    if old._target.__module__ != "concurrent.futures.thread" or len(args) < 2:
        return args
    executor = args[0]() if callable(args[0]) else None  # the thread holds a weak reference
    if executor is None or getattr(executor, "_work_queue", None) is not args[1]:
        return args
    if not getattr(executor, "_attngrade_fresh", False):
        queue = sys.modules["queue"].SimpleQueue()
        while True:
            try:
                queue.put(args[1].get_nowait())
            except Exception:  # noqa: BLE001 - queue.Empty: every task moved
                break
        executor._work_queue, executor._attngrade_fresh = queue, True
        executor._idle_semaphore, executor._shutdown_lock = threading.Semaphore(0), threading.Lock()
    return (args[0], executor._work_queue, *args[2:])


#: What the worker's own code uses (its loop, :mod:`attngrade.plain`, :mod:`attngrade.spec`, the
#: mounts and ``prctl`` through ``ctypes``), imported once, before any limit or student code: the
#: worker holds these modules as they are then, and never imports anything later, when the import
#: system, ``sys.modules`` and the limits are as the student's code left them. NumPy is among
#: them: packing results needs it.
_OWN_MODULES = ("ctypes", "gc", "io", "zipfile", "numpy", "numpy.lib.format")
#: Compiled modules of the standard library that the isolation probe imports after dropping
#: privileges: a level whose private root or uid leaves them unreadable fails its probe,
#: instead of failing every student's ``import``.
_PROBE_MODULES = ("decimal", "random")


def _trusted_imports(lib: str):
    """The grader's own modules and :data:`_OWN_MODULES`, imported before any limit or student code."""
    import importlib

    try:
        import attngrade  # noqa: F401
    except ImportError:
        sys.path.insert(0, lib)
    for name in _OWN_MODULES:
        importlib.import_module(name)
    from attngrade import plain, spec, tripwire

    return _private_copy(plain), _private_copy(spec), _private_copy(tripwire)


def _private_copy(module):
    """A copy of one of the grader's modules for the worker's own use, made before any student
    code: its functions look names up in builtins and in the standard library modules it uses as
    they are now, whatever the student's code later changes in the shared ones."""
    import types

    snapshot = dict(vars(builtins))
    namespace = {"__name__": module.__name__, "__file__": module.__file__, "__builtins__": snapshot}
    code = module.__spec__.loader.get_code(module.__name__)  # its cached bytecode, as the import used
    exec(code, namespace)  # noqa: S102 - the grader's own code
    for name, value in list(namespace.items()):
        if isinstance(value, types.ModuleType) and value.__name__ in _FROZEN_MODULES:
            namespace[name] = types.SimpleNamespace(**vars(value))
    return types.SimpleNamespace(**{k: v for k, v in namespace.items() if not k.startswith("__")})


#: Standard library modules that the worker's own reporting sees as they were before any student code.
_FROZEN_MODULES = frozenset({"io", "json", "math", "struct", "zipfile", "contextlib"})


def _isolate(config: dict, fds: tuple) -> dict:
    """Private root, monitor, limits and an unprivileged user; returns what was enforced."""
    result_fd, status_fd, go_fd = fds
    report: dict = {"mode": config["mode"], "private_root": False}
    mode = config["mode"]
    if mode in ("namespaces", "userns"):
        _build_root(config, report)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    report["pid_namespace"] = os.getpid() == 1
    if os.getpid() == 1:
        child = os.fork()
        if child:
            os.close(result_fd)
            os.close(go_fd)
            _monitor(child, status_fd)
    os.close(status_fd)
    report["no_new_privs"] = _no_new_privs()
    _apply_limits(config["limits"], report)
    _drop_privileges(config.get("uid"), config.get("gid"), report)
    if mode in ("uid", "basic"):
        os.chdir(config["root"])
    return report


def _probe(config: dict, report: dict, channel: _Channel) -> None:
    import importlib

    for name in _PROBE_MODULES:
        importlib.import_module(name)
    report["course_visible"] = any(os.path.exists(p) for p in config.get("hidden", []))
    report["network"] = _network_reachable()
    channel.send({"ev": "probe", "report": report})
    channel.send({"ev": "done"})
    os._exit(0)


def main() -> None:
    if sys.argv[1] == "--template":
        _template(sys.argv[2])
    fds = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    config, inputs_blob = _read_job()
    _run_job(config, inputs_blob, fds, *_trusted_imports(config["lib"]))


def _run_job(config: dict, inputs_blob: bytes, fds: tuple, plain, spec, tripwire) -> None:
    """Isolate this process, then run the job: the worker's life after its imports."""
    report = _isolate(config, fds)
    channel = _Channel(fds[0])
    if config.get("probe"):
        _probe(config, report, channel)
    sys.path.insert(0, "")  # as in a kernel: modules in the working folder (%%writefile) import
    inputs = plain.unpack(inputs_blob, max_bytes=1 << 62)
    del inputs_blob
    blocked = set(config["blocked"]) | {"attngrade"}
    watcher = _tripwire(tripwire) if any(part.get("watch") for part in config["parts"]) else None
    if not report.get("private_root"):
        sys.meta_path.insert(0, _Blocker(blocked))
    for name in [n for n in sys.modules if n.split(".")[0] in blocked]:
        del sys.modules[name]  # the worker keeps its own references; an import finds nothing
    import signal

    if hasattr(signal, "SIGXFSZ"):
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)  # a file past RLIMIT_FSIZE ends the worker
    runner = _Runner(config, inputs, channel, fds[2], plain, spec, watcher)
    channel.send({"ev": "boot", "report": report})
    _read_exact(fds[2], 1)  # the grader has read the memory in use before any student code
    runner.run()


# --------------------------------------------------------------------------------------------
# The worker template (level ``namespaces``)

#: What ``unshare --mount --uts --ipc --pid --net`` gives: CLONE_NEWNS, NEWUTS, NEWIPC, NEWPID, NEWNET.
_NEW_NAMESPACES = 0x00020000 | 0x04000000 | 0x08000000 | 0x20000000 | 0x40000000


def _template(lib: str) -> None:
    """A worker template: one interpreter per class that does the imports every worker does
    (:func:`_trusted_imports`), then forks one fresh worker per request of the grader, which
    arrive on a socket (stdin) with the new worker's pipes. It never reads a job, a cell or an
    input itself, so no fork holds anything of another student's; it ends when the grader closes
    the socket. Requests: ``fork`` (answered with the new process's pid) and ``reap`` (its status,
    once the grader is done with it; until then its pid and process group cannot be reused)."""
    import socket

    trusted = _trusted_imports(lib)
    control = socket.socket(fileno=0)
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(control, 1 << 16, 8)
        except OSError:
            os._exit(0)
        if not msg:
            os._exit(0)
        request = json.loads(msg)
        if request["op"] == "reap":
            control.send(json.dumps({"status": os.waitpid(request["pid"], 0)[1]}).encode())
            continue
        pid = os.fork()
        if pid == 0:
            control.close()
            _forked_worker(request, fds, trusted)
        for fd in fds:
            os.close(fd)
        control.send(json.dumps({"pid": pid}).encode())


def _forked_worker(request: dict, fds: list, trusted: tuple) -> None:
    """A fork of the template becomes what ``unshare --fork --kill-child`` makes of a started
    worker: a session of its own, its memory group, new namespaces, and its child as process 1
    there, which reads the job and runs it; this process waits and ends as that child did."""
    import ctypes
    import signal

    os.setsid()
    for target, fd in zip((0, 1, 2), fds[:3]):
        os.dup2(fd, target)
    channel = tuple(fds[3:6])
    for fd in {*fds[:3]} - {0, 1, 2, *channel}:
        os.close(fd)
    for fd in channel:
        os.set_inheritable(fd, True)  # as a started worker has them
    if request.get("procs"):
        with open(request["procs"], "w") as fh:
            fh.write(str(os.getpid()))
    os.chdir(request["cwd"])
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(_NEW_NAMESPACES) != 0:
        os._exit(70)
    child = os.fork()
    if child == 0:
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG: it dies with this process
        config, inputs_blob = _read_job()
        _run_job(config, inputs_blob, channel, *trusted)
    for fd in channel:
        os.close(fd)
    _, status = os.waitpid(child, 0)
    if os.WIFSIGNALED(status):
        signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
    _end_like(status)


class _Runner:
    """Runs the cells in order in a real ``__main__`` module (as in a kernel: functions defined
    there pickle by name, so multiprocessing works) and computes each part at its place."""

    def __init__(self, config: dict, inputs: dict, channel: _Channel, go_fd: int, plain, spec, watcher=None):
        import gc
        import types

        self.config, self.inputs, self.channel, self.go_fd = config, inputs, channel, go_fd
        self.plain, self.call_case, self.Outcome = plain, spec.call_case, spec.Outcome
        self.watcher, self.watching, self.returned = watcher, False, spec.call_notes
        self.result_limit = int(config.get("result_bytes", 1 << 62))
        self.fork_cases = bool(config.get("case_groups"))
        self.freeze, self.fork, self.waitpid = gc.freeze, os.fork, os.waitpid
        self.parts_after: dict = {}
        for part in config["parts"]:
            self.parts_after.setdefault(part.get("after", len(config["cells"])), []).append(part)
        main_module = types.ModuleType("__main__")
        main_module.__dict__["__builtins__"] = builtins
        sys.modules["__main__"] = main_module
        self.namespace = main_module.__dict__
        builtins.display = _display
        builtins._shell_escape = _shell_escape
        self.student = _StudentBuiltins()
        import linecache  # a function's source (Triton's kernels read theirs) is found by its cell's name

        self.lines = linecache.cache
        self.device = _Device() if any(part.get("timed") for part in config["parts"]) else None

    def run(self) -> None:
        self.run_parts(0)
        for position, cell in enumerate(self.config["cells"], start=1):
            error = None
            try:
                name, source = f"<cell {cell['id']}>", cell["source"]
                self.lines[name] = (len(source), None, source.splitlines(True), name)  # as IPython keeps it
                code = compile(source, name, "exec")
                with self.student:
                    exec(code, self.namespace)  # noqa: S102 - running the student's code is the point
            except BaseException as exc:  # noqa: BLE001 - like a notebook: the next cell still runs
                error = _safe_name(exc)
            self.channel.send({"ev": "cell", "id": cell["id"], "error": error})
            self.run_parts(position)
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        self.channel.send({"ev": "done"})
        os._exit(0)

    def run_parts(self, position: int) -> None:
        for part in self.parts_after.get(position, []):
            self.channel.send({"ev": "start", "part": part["id"]})
            self.watching = bool(part.get("watch"))
            fn = self.namespace.get(part["function"])
            outcomes = []
            for index, ((args, kwargs), trace) in enumerate(zip(self.inputs[part["id"]], part["trace"])):
                if not callable(fn):
                    outcomes.append(self.Outcome(None, "NameError"))
                elif part.get("timed") and self.device is not None:
                    outcomes.append(self.device.timed(self, fn, tuple(args), dict(kwargs), int(part["timed"])))
                elif trace:
                    outcomes.append(self.memory_case(fn, index))
                else:
                    outcomes.append(self.call(fn, tuple(args), dict(kwargs)))
            records, used = [], [1]
            for outcome in outcomes:
                records.append(self.record(outcome, used))
            self.channel.send({"ev": "part", "part": part["id"], "defined": callable(fn)}, self.pack(records))

    def call(self, fn, args: tuple, kwargs: dict, watched: bool = True):
        """One call of the answer, under the tripwire where the assignment has one (``watched``;
        a call that returned but broke the assignment's rule fails with the tripwire's error)."""
        watch = self.new_watch() if watched else None
        guard = self.student if watch is None else _Watched(self.student, watch)
        outcome = self.call_case(fn, args, kwargs, guard=guard)
        verdict = watch.verdict() if watch is not None else None
        if verdict is not None and self.returned(outcome.error) is not None:
            return self.Outcome(None, verdict)  # an exception's name stays what the call raised
        if outcome.error is None and _nbytes(outcome.output) > self.result_limit:
            return self.Outcome(None, "OutputTooLarge")  # freed now, never packed
        return outcome

    def new_watch(self):
        """A fresh watch of :mod:`attngrade.tripwire` for one call of a part that has one, else None."""
        return self.watcher.watch() if self.watching and self.watcher is not None else None

    def record(self, outcome, used: list) -> dict:
        """An outcome as plain data, counted with the part's others under the packing bounds (a
        timed call's seconds with it)."""
        plain = self.plain
        record = {"error": outcome.error, "out": outcome.output}
        if isinstance(getattr(outcome, "seconds", None), float):
            record["seconds"] = outcome.seconds
        count = [used[0]]
        try:
            plain.to_skeleton(record, [], _count=count)
            used[0] = count[0]
        except (plain.PlainDataError, RecursionError) as exc:
            too_big = isinstance(exc, RecursionError) or "too" in str(exc)
            record = {"error": "OutputTooLarge" if too_big else "TypeError", "out": None}
            used[0] += 8
        return record

    def pack(self, records: list) -> bytes:
        try:
            return self.plain.pack(records)
        except MemoryError:
            return self.plain.pack([{"error": "OutputTooLarge", "out": None} for _ in records])

    def receive_inputs(self):
        (size,) = struct.unpack(">Q", _read_exact(self.go_fd, 8))
        args, kwargs = self.plain.unpack(_read_exact(self.go_fd, size), max_bytes=1 << 62)
        return tuple(args), dict(kwargs)

    def memory_case(self, fn, index: int):
        """A memory-limited case: its inputs come now, after the grader prepared the count.

        Where the grader counts memory per case (``case_groups``), the case runs in a forked
        child that the grader moves into a memory group of its own once the inputs are in place:
        that group's peak is exactly what the call allocates, whatever earlier cells hold or free
        (their pages stay charged where they are), and the rest of the worker is stopped
        meanwhile. The child hands its outcome back through a pipe and ends.
        """
        self.channel.send({"ev": "mem", "case": index})
        if not self.fork_cases:
            args, kwargs = self.receive_inputs()
            self.channel.send({"ev": "ready", "case": index, "pid": os.getpid()})
            _read_exact(self.go_fd, 1)
            return self.call(fn, args, kwargs)
        try:
            read_end, write_end = os.pipe()
        except OSError as exc:  # what the student's code left of the open files: the case fails
            self.receive_inputs()  # read off, so that the next case gets its own
            return self.Outcome(None, _safe_name(exc))
        threads = _other_threads()
        try:
            pid = self.fork()
        except OSError as exc:  # what the student's processes left of the process limit
            os.close(read_end)
            os.close(write_end)
            self.receive_inputs()
            return self.Outcome(None, _safe_name(exc))
        if pid == 0:
            os.close(read_end)
            self.case_child(fn, index, write_end, threads)
        os.close(write_end)
        data = _read_all(read_end)
        _, status = self.waitpid(pid, 0)
        if not data:  # the grader says whether the kernel stopped the call at the case's ceiling
            self.channel.send({"ev": "lost", "case": index})
            if _read_exact(self.go_fd, 1) == b"m":
                return self.Outcome(None, None)  # the grader records the case as over its allowance
            _end_like(status)  # the case ended its process: the worker ends the same way
        record = self.plain.unpack(data, max_bytes=1 << 62)
        return self.Outcome(record["out"], record["error"])

    def case_child(self, fn, index: int, write_end: int, threads: list) -> None:
        self.freeze()  # the collector leaves the parent's objects (and their pages) alone
        self.channel.owner = os.getpid()
        args, kwargs = self.receive_inputs()
        self.channel.send({"ev": "ready", "case": index, "pid": os.getpid()})
        _read_exact(self.go_fd, 1)  # now in the case's own memory group
        _restart_pool_threads(threads)  # here: whatever they do is charged to the case
        outcome = self.call(fn, args, kwargs)
        self.channel.send({"ev": "called", "case": index})
        _read_exact(self.go_fd, 1)  # the grader has read the group's peak
        blob = self.pack(self.record(outcome, [1]))
        view = memoryview(blob)
        while view:
            view = view[os.write(write_end, view):]
        os._exit(0)


class _Device:
    """Timed calls on the GPU (a speed part, where the grading host has one: see
    :mod:`attngrade.leaderboard`). Made before any student code: torch, its synchronisation and
    the clock are taken then. A timed case's inputs become torch tensors on the GPU; one call warms
    up (Triton compiles), then ``repeats`` calls run between two synchronisations; the output
    comes back as a NumPy array and the seconds per call with it. Without CUDA (a test of this
    path on a CPU host) the tensors stay on the CPU and nothing needs synchronising."""

    def __init__(self):
        import time

        import torch

        cuda = torch.cuda.is_available()
        self.torch, self.clock, self.device = torch, time.perf_counter, "cuda" if cuda else "cpu"
        self.sync = torch.cuda.synchronize if cuda else (lambda: None)
        self.tensor_type = torch.Tensor

    def timed(self, runner, fn, args: tuple, kwargs: dict, repeats: int):
        try:
            inputs = tuple(self.torch.tensor(a, device=self.device) if hasattr(a, "dtype") else a for a in args)
            watch = runner.new_watch()
            with runner.student if watch is None else _Watched(runner.student, watch):
                fn(*inputs, **kwargs)  # the warm-up call, watched as every untimed call is
            verdict = watch.verdict() if watch is not None else None
            if verdict is not None:
                return runner.Outcome(None, verdict)
            self.sync()
            start = self.clock()
            with runner.student:
                for _ in range(repeats):
                    out = fn(*inputs, **kwargs)
            self.sync()
            seconds = (self.clock() - start) / repeats
            if isinstance(out, self.tensor_type):
                out = out.detach().float().cpu().numpy()
        except BaseException as exc:  # noqa: BLE001 - the student's exception is data
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            return runner.Outcome(None, _safe_name(exc))
        outcome = runner.call(lambda: out, (), {}, watched=False)
        outcome.seconds = float(seconds)
        return outcome


def _read_all(fd: int) -> bytes:
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            os.close(fd)
            return b"".join(chunks)
        chunks.append(chunk)


def _end_like(status: int) -> None:
    """End this process as a child of it ended (a signal or an exit code)."""
    import signal

    if os.WIFSIGNALED(status):
        os.kill(os.getpid(), os.WTERMSIG(status))
        os.kill(os.getpid(), signal.SIGKILL)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


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
