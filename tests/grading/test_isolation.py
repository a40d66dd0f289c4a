"""The worker's isolation, probed from inside a worker, and the untrusted result channel."""

from __future__ import annotations

import io
import json
import os
import socket
import struct
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

import gradingkit as gk
from attngrade import plain
from attngrade.sandbox import Limits, WorkerJob, case_memory, run_worker

PROBE = r"""
import os, sys, socket, resource

def probe():
    out = {}
    out["course_visible"] = os.path.exists(COURSE + "/nbgrader_config.py")
    out["solutions_visible"] = os.path.exists(COURSE + "/solutions")
    out["uid"] = os.getuid()
    out["cwd_entries"] = len(os.listdir("."))
    with open("scratch.txt", "w") as fh:
        fh.write("ok")
    out["cwd_writable"] = os.path.exists("scratch.txt")
    try:
        socket.create_connection(("127.0.0.1", PORT), timeout=1).close()
        out["network"] = True
    except OSError:
        out["network"] = False
    for name in ("attnmath", "attngrade", "torch"):
        try:
            __import__(name)
            out["import_" + name] = True
        except ImportError:
            out["import_" + name] = False
    out["env_keys"] = ",".join(sorted(os.environ))
    out["rlimit_as"] = resource.getrlimit(resource.RLIMIT_AS)[0]
    out["rlimit_nofile"] = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    out["rlimit_core"] = resource.getrlimit(resource.RLIMIT_CORE)[0]
    out["pid"] = os.getpid()
    return json.dumps(out)
import json
"""


def _job(source: str, function: str = "probe", n_cases: int = 1) -> WorkerJob:
    inputs = plain.pack({"p": [((), {})] * n_cases})
    return WorkerJob(
        cells=[{"id": "answer", "source": source}],
        parts=[{"id": "p", "function": function, "trace": [False] * n_cases}],
        inputs=inputs,
        blocked=["attnmath", "attngrade", "torch"],
    )


def test_the_worker_sees_nothing_of_the_course_and_nothing_of_the_network(isolation, tmp_path):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    try:
        src = f"COURSE = {str(gk.ROOT)!r}\nPORT = {port}\n" + PROBE
        run = run_worker(_job(src), isolation, Limits(timeout=20), tmp_root=str(tmp_path))
    finally:
        server.close()
    assert run.end == "done", (run.end, run.detail, run.stderr)
    out = json.loads(run.parts["p"].records[0]["out"])
    assert out["cwd_writable"] and out["cwd_entries"] == 0
    assert not out["import_attnmath"] and not out["import_attngrade"] and not out["import_torch"]
    assert out["rlimit_as"] == Limits().memory_mb << 20
    assert out["rlimit_nofile"] == Limits().nofile and out["rlimit_core"] == 0
    assert "PYTHONPATH" not in out["env_keys"] and "ATTNMATH_GRADEBOOK_URL" not in out["env_keys"]
    if isolation.mode in ("namespaces", "userns"):
        assert not out["course_visible"] and not out["solutions_visible"]
        assert not out["network"]
        assert out["pid"] != os.getpid() and out["pid"] < 10  # its own PID namespace
    if isolation.mode in ("namespaces", "uid"):
        assert out["uid"] != 0
    assert not list(tmp_path.iterdir()), "the scratch directory is deleted"


def test_forged_result_frames_break_the_protocol_and_earn_nothing(isolation):
    src = r"""
import json, os, struct
def probe():
    head = json.dumps({"ev": "part", "part": "p", "defined": True}).encode()
    for fd in range(3, 64):
        try:
            os.write(fd, struct.pack(">II", 4 + len(head), len(head)) + head + b"garbage")
        except OSError:
            pass
    return 1.0
"""
    run = run_worker(_job(src), isolation, Limits(timeout=20))
    assert run.end == "protocol"
    assert "p" not in run.parts


def _processes_running(marker: str) -> list[str]:
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    if marker.encode() in fh.read():
                        found.append(pid)
            except OSError:
                pass
    return found


def test_a_runaway_worker_and_its_children_are_killed(isolation):
    # The worker never returns: it waits, as the wall-clock limit ends it whatever it does (the
    # corpus's 01_loop_at_import is the runaway that burns CPU until then).
    src = r"""
import os, subprocess, time
def probe():
    subprocess.Popen(["sleep", "987654"], start_new_session=True)
    if os.fork() == 0:
        os.setsid()
        os.execvp("sleep", ["sleep", "987655"])
    while True:
        time.sleep(0.2)
"""
    run = run_worker(_job(src), isolation, Limits(timeout=2))
    assert run.end == "timeout" and run.current == "p"
    if isolation.mode != "basic":  # the basic level cannot follow children into new sessions
        time.sleep(0.5)
        assert not _processes_running("987654") and not _processes_running("987655")


@pytest.mark.parametrize("where", ["cell", "part"])
def test_output_past_the_cap_is_discarded_with_a_note_and_costs_nothing(isolation, where):
    big = "sys.stdout.write('x' * (7 << 20)); sys.stderr.write('e' * (2 << 20))"
    src = "import sys\n" + (big if where == "cell" else "") + "\ndef probe():\n    " + (
        big if where == "part" else "pass"
    ) + "\n    return 1.0\n"
    run = run_worker(_job(src), isolation, Limits(timeout=20, output_bytes=1 << 20))
    assert run.end == "done", (run.end, run.detail)
    assert run.parts["p"].records[0] == {"error": None, "out": 1.0}
    assert run.output_bytes == 9 << 20
    assert run.stdout == b"x" * 8192 and run.stderr == b"e" * 8192
    assert any("discarded" in note and str(9 << 20) in note for note in run.notes)


def test_endless_output_ends_at_the_time_limit_not_the_grader(isolation):
    # 64 KiB every 10 ms, for ever: past the 1 MiB cap within a fraction of the 3 s limit, without
    # a writer and a reader burning both CPUs until then (a gigabyte at full speed: the corpus's
    # 10_print_1gb).
    src = ("import sys, time\ndef probe():\n    while True:\n        sys.stdout.write('y' * 65536)\n"
           "        time.sleep(0.01)\n")
    run = run_worker(_job(src), isolation, Limits(timeout=3, output_bytes=1 << 20))
    assert run.end == "timeout" and run.current == "p"
    assert len(run.stdout) <= 8192 and run.output_bytes > 1 << 20


def test_an_oversized_result_is_an_error_of_that_case(isolation):
    src = "import numpy as np\ndef probe():\n    return np.ones(3 * 2**20)\n"
    run = run_worker(_job(src), isolation, Limits(timeout=20, result_bytes=2**20))
    assert run.end == "done"
    assert run.parts["p"].records[0]["error"] == "OutputTooLarge"


def test_a_frame_announcing_too_many_bytes_is_refused(isolation):
    src = r"""
import os, struct
def probe():
    for fd in range(3, 64):
        try:
            os.write(fd, struct.pack(">I", 2**30))
        except OSError:
            pass
    return 1.0
"""
    run = run_worker(_job(src), isolation, Limits(timeout=20, result_bytes=2**20))
    assert run.end == "result_size"


def test_a_huge_nested_result_is_an_error_of_that_case_not_a_protocol_breach(isolation):
    src = "def probe():\n    return [float(i) for i in range(300000)]\n"
    run = run_worker(_job(src), isolation, Limits(timeout=20))
    assert run.end == "done"
    assert run.parts["p"].records[0]["error"] == "OutputTooLarge"


def test_plain_data_round_trips():
    value = (
        np.arange(6.0).reshape(2, 3),
        [1, 2.5, True, None, "s", 3 + 4j, float("nan")],
        {"k": np.float32(1.5), "big": 2**70},
        np.array([True, False]),
    )
    back = plain.unpack(plain.pack(value))
    assert isinstance(back, tuple) and isinstance(back[1], list) and isinstance(back[2], dict)
    np.testing.assert_array_equal(back[0], value[0])
    assert back[1][:6] == value[1][:6] and np.isnan(back[1][6])
    assert (
        back[2]["k"] == np.float32(1.5) and isinstance(back[2]["k"], np.float32) and back[2]["big"] == 2**70
    )
    assert back[3].dtype == bool


def _npz_with(array_bytes: bytes, name: str = "a0.npy", compress=zipfile.ZIP_STORED) -> bytes:
    skeleton = json.dumps({"array": 0}).encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compress) as zf:
        zf.writestr(name, array_bytes)
    return struct.pack(">I", len(skeleton)) + skeleton + buf.getvalue()


@pytest.mark.parametrize(
    "blob",
    [
        b"\x80\x04\x95" + b"pickle" * 10,  # a pickle is not plain data
        _npz_with(
            b"\x93NUMPY\x01\x00v\x00{'descr': '|O', 'fortran_order': False, 'shape': (1,), }"
            + b" " * 52
            + b"\n"
            + b"\0" * 8
        ),  # an object array
        _npz_with(
            b"\x93NUMPY\x01\x00v\x00{'descr': '<f8', 'fortran_order': False, 'shape': (10**9,), }"
            + b" " * 46
            + b"\n"
            + b"\0" * 8
        ),  # a header claiming more data than there is
        _npz_with(b"\x93NUMPY" + b"\0" * 200, name="../a0.npy"),  # an unexpected member
        _npz_with(b"\x93NUMPY" + b"\0" * 200, compress=zipfile.ZIP_DEFLATED),  # compressed (a zip bomb)
    ],
)
def test_hostile_plain_data_is_refused(blob):
    with pytest.raises(plain.PlainDataError):
        plain.unpack(blob)


def test_objects_that_are_not_plain_data_are_refused():
    class Anything:
        def __eq__(self, other):
            return True

    with pytest.raises(plain.PlainDataError):
        plain.pack(Anything())
    with pytest.raises(plain.PlainDataError):
        plain.pack(np.array([object()], dtype=object))


needs_private_root = pytest.mark.skipif(
    "os.geteuid() != 0 and not os.path.exists('/proc/sys/kernel/unprivileged_userns_clone')",
    reason="no namespaces here: see the README's isolation table",
)

REACH = r"""
import glob, importlib, json, os, subprocess, sys

def probe():
    sys.meta_path[:] = [f for f in sys.meta_path if "Block" not in type(f).__name__]
    for name in [n for n in sys.modules if n.split(".")[0] in ("attnmath", "attngrade", "torch", "scipy")]:
        del sys.modules[name]
    out = {"imported": [], "site": {}}
    for name in ("torch", "scipy", "attnmath", "attngrade", "nbgrader", "jax", "IPython"):
        try:
            importlib.import_module(name)
            out["imported"].append(name)
        except ImportError:
            pass
    for folder in sorted(set(sys.path) | set(glob.glob("/*/*/lib/python3*/site-packages"))
                         | set(glob.glob("/*/*/*/lib/python3*/site-packages"))
                         | set(glob.glob("/usr/lib/python3*/dist-packages"))):
        if os.path.isdir(folder) and folder.endswith("-packages"):
            out["site"][folder] = sorted(os.listdir(folder))
    child = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True)
    out["child_torch"] = child.returncode == 0
    return json.dumps(out)
"""


def test_the_private_root_holds_the_course_environment_and_nothing_of_the_references(isolation):
    if not isolation.enforced.get("references_absent"):
        pytest.skip(f"{isolation.mode}: no private root here, the README says what is enforced instead")
    run = run_worker(_job(REACH), isolation, Limits(timeout=30))
    assert run.end == "done", (run.end, run.detail, run.stderr)
    out = json.loads(run.parts["p"].records[0]["out"])
    assert out["imported"] == ["IPython"], "of the packages tried, only the one that is no reference"
    assert not out["child_torch"], "a child interpreter cannot import torch either"
    assert out["site"], "the package folders exist (emptied or with the allowed view)"
    seen = {e.lower().split("-")[0].split(".")[0] for entries in out["site"].values() for e in entries}
    assert {"numpy", "matplotlib", "ipython"} <= seen, seen
    banned = {"torch", "scipy", "attnmath", "attngrade", "_attnmath", "nbgrader", "jax", "functorch", "torchgen"}
    assert not seen & banned, seen & banned
    assert not [e for entries in out["site"].values() for e in entries if e.endswith(".pth")]


def _linked_interpreters(base) -> dict:
    """The course's interpreter reached through links, as an instructor may have set it up: a
    ``.venv`` that is a relative link, a course root that is a link, and a virtual environment
    whose ``site-packages`` is a link (to the course's)."""
    venv = Path(sys.prefix)
    (base / "linked_venv").mkdir()
    (base / "linked_venv" / ".venv").symlink_to(os.path.relpath(venv, base / "linked_venv"))
    (base / "course").symlink_to(venv.parent)
    fake = base / "site_link"
    (fake / "bin").mkdir(parents=True)
    (fake / "pyvenv.cfg").write_text((venv / "pyvenv.cfg").read_text())
    (fake / "bin" / "python").symlink_to(os.path.realpath(sys.executable))
    site = next(p for p in sys.path if p.startswith(str(venv)) and p.endswith("site-packages"))
    (fake / Path(site).relative_to(venv)).parent.mkdir(parents=True)
    (fake / Path(site).relative_to(venv)).symlink_to(site)
    return {
        "linked .venv": base / "linked_venv" / ".venv" / "bin" / "python",
        "linked course root": base / "course" / venv.name / "bin" / "python",
        "linked site-packages": fake / "bin" / "python",
    }


LINKED = r"""
import json, sys
sys.path.insert(0, HERE)
import test_isolation as ti
from attngrade.sandbox import Limits, detect_isolation, run_worker
iso = detect_isolation("auto", jobs=1, limits=Limits(timeout=10), hidden=[], tmp_root=TMP)
run = run_worker(ti._job(ti.REACH), iso, Limits(timeout=30), tmp_root=TMP)
out = json.loads(run.parts["p"].records[0]["out"]) if run.end == "done" else {"end": run.end, "detail": run.detail}
out.update(mode=iso.mode, prefix=sys.prefix)
print(json.dumps(out))
"""


@needs_private_root
def test_a_linked_environment_leaves_the_references_unreachable(isolation, tmp_path):
    """The private root is planned by real paths: an environment reached through a link (the
    ``.venv``, the course root or ``site-packages``) shows the same masked view as the real one."""
    if not isolation.enforced.get("references_absent"):
        pytest.skip(f"{isolation.mode}: no private root here, the README says what is enforced instead")
    for how, python in _linked_interpreters(tmp_path).items():
        script = f"HERE = {str(Path(__file__).parent)!r}\nTMP = {str(tmp_path)!r}\n" + LINKED
        proc = subprocess.run([str(python), "-c", script], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, (how, proc.stderr[-3000:])
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        assert out["prefix"].startswith(str(tmp_path)), (how, "the interpreter runs from the linked path", out["prefix"])
        assert out.get("imported") == ["IPython"], (how, out)
        assert not out["child_torch"], how
        seen = {e.lower().split("-")[0].split(".")[0] for entries in out["site"].values() for e in entries}
        assert {"numpy", "ipython"} <= seen and not seen & {"torch", "attnmath", "nbgrader", "scipy"}, (how, seen)


PLOT = r"""
import json, os, sys
import matplotlib.pyplot as plt
from IPython.display import HTML

def probe():
    fig, ax = plt.subplots()
    ax.plot([1.0, 2.0, 3.0])
    fig.savefig("plot.png")
    display(HTML("<b>shown</b>"))
    import tracemalloc
    tracemalloc.start()
    block = bytearray(1 << 20)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return json.dumps({"backend": plt.get_backend(), "png": os.path.getsize("plot.png"), "peak": peak})
"""


def test_plotting_displaying_and_tracemalloc_work_as_in_the_students_kernel(isolation):
    run = run_worker(_job(PLOT), isolation, Limits(timeout=60))
    assert run.end == "done", (run.end, run.detail, run.stderr[-2000:])
    out = json.loads(run.parts["p"].records[0]["out"])
    assert out["backend"].lower() == "agg" and out["png"] > 1000
    assert out["peak"] >= 1 << 20
    assert b"HTML object" in run.stdout


def _memory_job(source: str) -> WorkerJob:
    return WorkerJob(
        cells=[{"id": "answer", "source": source}],
        parts=[{"id": "p", "function": "probe", "trace": [True, False]}],
        inputs=plain.pack({"p": [((), {}), ((48,), {})]}),
        blocked=[],
        held={"p": {0: plain.pack(((48,), {}))}},
    )


@pytest.mark.parametrize(
    "how",
    [
        "np.ones(mb * 2**20 // 8)",  # plain NumPy
        "np.frombuffer(_touch(mmap.mmap(-1, mb * 2**20)), dtype=np.uint8)",  # an anonymous mmap
        "_in_thread(lambda: np.ones(mb * 2**20 // 8))",  # another thread
        "_in_child(lambda: np.ones(mb * 2**20 // 8))",  # a child process
    ],
)
def test_memory_is_counted_by_the_kernel_and_read_by_the_grader(isolation, how):
    if isolation.memory == "none":
        pytest.skip("no memory cgroup here: memory-limited cases are not enforced (README)")
    src = f"""
import mmap, os, threading, numpy as np

def _touch(buf):
    for i in range(0, len(buf), 4096):
        buf[i] = 1
    return buf

def _in_thread(make):
    box = []
    t = threading.Thread(target=lambda: box.append(float(make().sum())))
    t.start()
    t.join()
    return box[0]

def _in_child(make):
    pid = os.fork()
    if pid == 0:
        make().fill(1.0)
        os._exit(0)
    os.waitpid(pid, 0)
    return 0.0

def probe(mb):
    x = {how}
    return 1.0
"""
    run = run_worker(_memory_job(src), isolation, Limits(timeout=30))
    assert run.end == "done", (run.end, run.detail, run.stderr)
    assert 40 * 2**20 <= case_memory(run.memory[("p", 0)]) <= 56 * 2**20, run.memory
    assert run.parts["p"].records[1]["out"] == 1.0, "the case without a limit ran in the same worker"


@pytest.mark.parametrize(
    "earlier, call, low, high",
    [
        ("held = np.ones(72 * 2**20 // 8)", "x = np.ones(int(0.4 * 2**20) // 8)", 0, 2**20),  # held elsewhere
        ("gone = np.ones(72 * 2**20 // 8); del gone", "x = np.ones(int(0.4 * 2**20) // 8)", 0, 2**20),
        ("_ballast = [np.ones(20 * 2**20 // 8) for _ in range(8)]", "_ballast.clear(); x = np.ones(48 * 2**20 // 8)",
         40 * 2**20, 56 * 2**20),  # ballast freed inside the call
        ("_spare = bytearray(96 * 2**20)", "del _spare[:]; x = np.ones(48 * 2**20 // 8)", 40 * 2**20, 56 * 2**20),
    ],
    ids=["held-by-earlier-cell", "freed-by-earlier-cell", "ballast-freed-in-call", "spare-freed-in-call"],
)
def test_a_memory_case_charges_what_its_call_allocates_whatever_earlier_cells_did(isolation, earlier, call, low, high):
    if isolation.memory == "none":
        pytest.skip("no memory cgroup here: memory-limited cases are not enforced (README)")
    prefix = "global _spare\n    " if "_spare" in call else ""
    src = f"import numpy as np\n{earlier}\n\ndef probe(mb):\n    {prefix}{call}\n    return float(x[0])\n"
    run = run_worker(_memory_job(src), isolation, Limits(timeout=30))
    assert run.end == "done", (run.end, run.detail, run.stderr)
    used = case_memory(run.memory[("p", 0)])
    assert low <= used <= high, (used, run.memory)
    assert [r["out"] for r in run.parts["p"].records] == [1.0, 1.0]


def _ceiling_job(source: str, allowed: int) -> WorkerJob:
    """A part whose first case is memory-limited to ``allowed`` bytes, then a second part."""
    job = _memory_job(source)
    job.allowed = {"p": {0: allowed}}
    job.parts.append({"id": "q", "function": "after", "trace": [False]})
    job.inputs = plain.pack({"p": [((), {}), ((48,), {})], "q": [((), {})]})
    return job


_CEILING = """import os, numpy as np

def after():
    return 7.0

def probe(mb):
    x = {call}
    return {back}
"""


def test_a_memory_case_past_its_allowance_is_stopped_by_the_kernel_and_the_worker_goes_on(isolation):
    if isolation.memory == "none":
        pytest.skip("no memory cgroup here: memory-limited cases are not enforced (README)")
    allowed = 8 * 2**20
    src = _CEILING.format(call="np.ones((4, 4096, 4096))", back="float(x[0, 0, 0])")  # 512 MiB
    run = run_worker(_ceiling_job(src, allowed), isolation, Limits(timeout=30))
    assert run.end == "done", (run.end, run.detail, run.stderr)
    rec = run.memory[("p", 0)]
    assert rec["stopped"] and case_memory(rec) > allowed, rec
    assert case_memory(rec) < 64 * 2**20, "stopped at its ceiling, long before the 512 MiB"
    assert run.parts["p"].records[0] == {"error": None, "out": None}
    assert run.parts["p"].records[1]["out"] == 1.0 and run.parts["q"].records[0]["out"] == 7.0
    assert run.oom_kills == 0, "a case stopped at its ceiling is not the worker's memory limit"


@pytest.mark.parametrize(
    "call, back",
    [
        ("np.ones(40 * 2**20 // 8)", "float(x[0])"),  # near the allowance
        ("np.ones(2**19)", "x"),  # a 4 MiB result, converted to plain data inside the call
    ],
    ids=["allocates-near-allowance", "returns-a-result"],
)
def test_a_memory_case_within_its_allowance_is_measured_not_stopped(isolation, call, back):
    if isolation.memory == "none":
        pytest.skip("no memory cgroup here: memory-limited cases are not enforced (README)")
    allowed = 44 * 2**20 if back != "x" else 12 * 2**20
    run = run_worker(_ceiling_job(_CEILING.format(call=call, back=back), allowed), isolation, Limits(timeout=30))
    assert run.end == "done", (run.end, run.detail, run.stderr)
    rec = run.memory[("p", 0)]
    assert not rec.get("stopped") and case_memory(rec) <= allowed, rec
    out = run.parts["p"].records[0]["out"]
    assert (out == 1.0) if back != "x" else (np.asarray(out).shape == (2**19,) and np.all(out == 1.0))


def test_a_memory_case_that_ends_its_process_still_ends_the_worker(isolation):
    if isolation.memory == "none":
        pytest.skip("no memory cgroup here: memory-limited cases are not enforced (README)")
    src = _CEILING.format(call="os._exit(3)", back="1.0")
    run = run_worker(_ceiling_job(src, 8 * 2**20), isolation, Limits(timeout=30))
    assert run.end == "died" and run.exit == {"code": 3}, (run.end, run.exit, run.detail)
    assert run.current == "p" and not run.memory[("p", 0)].get("stopped")


def test_a_memory_case_gets_its_inputs_only_when_it_starts(isolation):
    src = "import gc\nSEEN = []\ndef probe(n):\n    return float(n)\n"
    run = run_worker(_memory_job(src), isolation, Limits(timeout=30))
    assert run.end == "done"
    assert [r["out"] for r in run.parts["p"].records] == [48.0, 48.0]


def test_concurrent_batches_get_disjoint_sandbox_uids(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("sandbox uids exist for root only")
    from attngrade.sandbox import _sandbox_uids

    mine, locks = _sandbox_uids(3)
    code = "from attngrade.sandbox import _sandbox_uids; print(_sandbox_uids(3)[0])"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    theirs = json.loads(other.stdout.strip())
    assert len(mine) == 3 and len(theirs) == 3
    assert not set(mine) & set(theirs)
    for fh in locks:
        fh.close()


def test_multiprocessing_pool_works_inside_the_worker(isolation):
    src = (
        "import multiprocessing\n"
        "def square(x):\n    return x * x\n"
        "def probe():\n    with multiprocessing.Pool(2) as pool:\n        return float(sum(pool.map(square, range(10))))\n"
    )
    run = run_worker(_job(src), isolation, Limits(timeout=30))
    assert run.end == "done", (run.end, run.detail, run.stderr)
    assert run.parts["p"].records[0] == {"error": None, "out": 285.0}


def test_the_students_namespace_stays_as_left_and_never_reaches_the_reports(isolation):
    src = (
        "import builtins, json, numpy as np\n"
        "builtins.isinstance = lambda *a: False\nbuiltins.len = lambda *a: 0\njson.dumps = None\n"
        "builtins.helper = lambda: 2.0\nnp.my_constant = 5.0\n"
        "def probe():\n    return [float(len([1, 2, 3])), helper(), np.my_constant, float(isinstance(1, int))]\n"
    )
    run = run_worker(_job(src, n_cases=2), isolation, Limits(timeout=30))
    assert run.end == "done", (run.end, run.detail, run.stderr)
    assert [r["out"] for r in run.parts["p"].records] == [[0.0, 2.0, 5.0, 0.0]] * 2


def test_the_site_view_is_the_environment_minus_every_file_of_the_references():
    from attngrade.sandbox import _reference_entries, site_view

    folder = os.path.dirname(os.path.dirname(np.__file__))
    view = set(site_view(folder))
    assert {"numpy", "matplotlib", "IPython"} <= view
    assert not view & _reference_entries()
    assert not {e for e in view if e.endswith(".pth") or e.lower().startswith(("torch", "scipy", "nbgrader", "attn"))}
    assert set(os.listdir(folder)) - view, "something is left out"
    with pytest.raises(TypeError, match="folder"):
        site_view(None)
