"""Helpers of the grading tests: build submissions from the release, run the command, read results.

Corpus files (``tests/grading/corpus/*.py``) use the sample-script format of
``tests/exercises/samples`` plus a few header lines; see ``corpus/README.md``.
"""

from __future__ import annotations

import copy
import csv
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from attngrade.notebooks import answer_cells, cell_grade_id, read_answer_script

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "solutions"
EXERCISES = ROOT / "exercises"
SAMPLES = ROOT / "tests" / "exercises" / "samples"
CORPUS = Path(__file__).resolve().parent / "corpus"
ASSIGNMENTS = sorted(
    p.name
    for p in SOLUTIONS.iterdir()
    if p.is_dir()
    and not p.name.startswith(".")
    and (p / "hidden_tests.py").is_file()
    and (EXERCISES / p.name).is_dir()
)


def notebook_name(assignment: str) -> str:
    names = sorted(p.name for p in (EXERCISES / assignment).glob("*.ipynb"))
    assert len(names) == 1, names
    return names[0]


def release(assignment: str):
    return nbformat.read(EXERCISES / assignment / notebook_name(assignment), as_version=4)


def solution_answers(assignment: str) -> dict[str, str]:
    source = nbformat.read(SOLUTIONS / assignment / notebook_name(assignment), as_version=4)
    return answer_cells(source)


def fill_any(nb, sources: dict[str, str]):
    """A copy of ``nb`` with the source of every cell whose grade id is in ``sources`` replaced."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        gid = cell_grade_id(cell)
        if gid in sources:
            cell.source = sources[gid]
    return nb


@dataclass
class CorpusCase:
    name: str
    path: Path
    description: str
    expect: dict[str, float]
    status: str
    reason: str | None = None
    status_without_nproc: str | None = (
        None  # where the worker has no process limit (root without a sandbox uid)
    )
    base: str | None = None
    mutations: list[list[str]] = field(default_factory=list)
    sections: dict[str, str] = field(default_factory=dict)
    assignment: str = "01_softmax"
    kind: str = ""  # "honest" (must keep its points) or "cheat" (must not score), when the case says


def read_case(path: Path) -> CorpusCase:
    text = path.read_text()
    sections, expect = read_answer_script(path)
    header = text.split("# %% grade_id:")[0]
    desc = []
    case = CorpusCase(path.stem, path, "", expect, "", sections=sections)
    for line in header.splitlines():
        m = re.match(r"# (status|reason|base|mutate|status-without-nproc|assignment|kind):\s*(.*)$", line)
        if m:
            key, value = m.groups()
            if key == "mutate":
                case.mutations.append(value.split(None, 2))
            else:
                setattr(case, key.replace("-", "_"), value.strip())
        elif line.startswith("# ") and not line.startswith("# expect:"):
            desc.append(line[2:])
    case.description = " ".join(desc)
    assert case.status, f"{path.name}: no '# status:' line"
    return case


def corpus_cases() -> list[CorpusCase]:
    return [read_case(p) for p in sorted([*CORPUS.glob("*.py"), *CORPUS.glob("*.ipy")], key=lambda p: p.name)]


def _image_output(megabytes: float) -> dict:
    """A display_data output holding a PNG-sized base64 blob of ``megabytes``."""
    blob = ("iVBORw0KGgo" + "A" * 64) * int(megabytes * 2**20 / 75)
    return nbformat.v4.new_output("display_data", data={"image/png": blob, "text/plain": "<Figure>"})


def _grow(nb, kind: str, args: list[str]) -> None:
    """Mutations that make a notebook large or odd in ways the grader must take in its stride."""
    if kind != "source-json":
        args = " ".join(args).split()
    if kind == "metadata-mb":  # notebook metadata (widget state) of args[1] MB under key args[0]
        nb.metadata[args[0]] = {"state": {f"w{i}": "A" * 4096 for i in range(int(float(args[1]) * 256))}}
    elif kind == "cell-metadata-mb":  # metadata of args[2] MB under key args[1] on the cell args[0]
        cell = next(c for c in nb.cells if cell_grade_id(c) == args[0])
        cell.metadata[args[1]] = {"blob": "M" * int(float(args[2]) * 2**20)}
    elif kind == "stream-output":  # printed output of args[1] MB on the cell args[0]
        cell = next(c for c in nb.cells if cell_grade_id(c) == args[0])
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="x" * int(float(args[1]) * 2**20))]
    elif kind == "big-cell":  # an added cell of about args[0] MB: one list literal
        rows = int(float(args[0]) * 2**20 / 24)
        nb.cells.append(nbformat.v4.new_code_cell("table = [\n" + "    (1.25, 'abc', 7),\n" * rows + "]\n"))
    elif kind == "many-cells":  # args[0] empty markdown cells at the end
        nb.cells.extend(nbformat.v4.new_markdown_cell("") for _ in range(int(args[0])))
    elif kind == "source-json":  # the source of cell args[0] replaced by a JSON value (not text)
        next(c for c in nb.cells if cell_grade_id(c) == args[0])["source"] = json.loads(args[1])


def build_case(case: CorpusCase, assignment: str, submitted: Path) -> None:
    """Write ``case`` as ``submitted/<case>/<assignment>/<notebook>`` (nbgrader's layout)."""
    nb_file = notebook_name(assignment)
    folder = submitted / case.name / assignment
    folder.mkdir(parents=True)
    sources = dict(solution_answers(assignment)) if case.base == "solution" else {}
    sources.update(case.sections)
    nb = fill_any(release(assignment), sources)
    filename, timestamp, raw, encoding = nb_file, "2026-11-22 10:00:00.000000 UTC", None, "utf-8"
    for op in case.mutations:
        kind, args = op[0], op[1:]
        if kind == "delete":
            nb.cells = [c for c in nb.cells if cell_grade_id(c) != args[0]]
        elif kind == "duplicate":
            i = next(i for i, c in enumerate(nb.cells) if cell_grade_id(c) == args[0])
            twin = copy.deepcopy(nb.cells[i])
            twin["id"] = twin.get("id", "cell") + "-copy"
            nb.cells.insert(i + 1, twin)
        elif kind == "retype":
            cell = next(c for c in nb.cells if cell_grade_id(c) == args[0])
            cell.cell_type = args[1]
            cell.pop("outputs", None)
            cell.pop("execution_count", None)
            if args[1] == "code":  # as Jupyter saves a cell turned into code
                cell.outputs, cell.execution_count = [], None
        elif kind == "meta":
            key, value = args[1].split("=", 1)
            next(c for c in nb.cells if cell_grade_id(c) == args[0]).metadata.nbgrader[key] = json.loads(
                value
            )
        elif kind == "tag":
            cell = next(c for c in nb.cells if cell_grade_id(c) == args[0])
            cell.metadata.setdefault("tags", []).append(args[1])
        elif kind == "add-cell":
            nb.cells.append(nbformat.v4.new_code_cell(" ".join(args).replace("\\n", "\n")))
        elif kind == "add-cell-after":  # an added cell right after the cell with grade id args[0]
            i = next(i for i, c in enumerate(nb.cells) if cell_grade_id(c) == args[0])
            nb.cells.insert(i + 1, nbformat.v4.new_code_cell(" ".join(args[1:]).replace("\\n", "\n")))
        elif kind in ("copy-after", "copy-at-end"):  # a copy of cell args[0], metadata and all, with a new source
            i = next(i for i, c in enumerate(nb.cells) if cell_grade_id(c) == args[0])
            twin = copy.deepcopy(nb.cells[i])
            twin["id"] = twin.get("id", "cell") + "-copy"
            twin.source = " ".join(args[1:]).replace("\\n", "\n")
            nb.cells.insert(i + 1 if kind == "copy-after" else len(nb.cells), twin)
        elif kind == "image-output":  # image outputs of args[1] MB on the cell with grade id args[0]
            cell = next(c for c in nb.cells if cell_grade_id(c) == args[0])
            cell.outputs = [_image_output(float(args[1]) / 4) for _ in range(4)]
        elif kind in ("metadata-mb", "cell-metadata-mb", "stream-output", "big-cell", "many-cells", "source-json"):
            _grow(nb, kind, args)
        elif kind == "strip-nbgrader":
            for c in nb.cells:
                c.metadata.pop("nbgrader", None)
        elif kind == "nbformat":
            raw = json.loads(nbformat.writes(nb))
            raw["nbformat"] = int(args[0])
            raw = json.dumps(raw)
        elif kind == "truncate":
            raw = nbformat.writes(nb)[: int(args[0])]
        elif kind == "text":
            raw = " ".join(args)
        elif kind == "nest":  # the file is N nested JSON arrays
            raw = "[" * int(args[0]) + "]" * int(args[0])
        elif kind == "json-sub":  # text replaced in the file's JSON (escapes such as \ud800 stay escapes)
            raw = (raw if raw is not None else nbformat.writes(nb)).replace(args[0], args[1] if len(args) > 1 else "")
        elif kind == "encode":  # the file written in another encoding
            encoding = args[0]
        elif kind == "name":
            filename = " ".join(args)
        elif kind == "timestamp":
            timestamp = " ".join(args)
        elif kind == "no-notebook":
            filename = None
        else:
            raise ValueError(f"{case.name}: unknown mutation {kind!r}")
    if filename is not None:
        (folder / filename).write_bytes((raw if raw is not None else nbformat.writes(nb)).encode(encoding, "replace"))
    (folder / "timestamp.txt").write_text(timestamp)


def submit_samples(assignment: str, folder: Path, layout: str = "nbgrader") -> dict[str, dict[str, float]]:
    """The solution, the untouched release and every sample of ``assignment`` as submissions."""
    rel = release(assignment)
    nb_file = notebook_name(assignment)
    expected: dict[str, dict[str, float]] = {}
    notebooks = {"solution": fill_any(rel, solution_answers(assignment)), "release": rel}
    for sample in sorted((SAMPLES / assignment).glob("*.py")):
        answers, expect = read_answer_script(sample)
        notebooks[sample.stem] = fill_any(rel, answers)
        expected[sample.stem] = expect
    for student, nb in notebooks.items():
        if layout == "nbgrader":
            target = folder / student / assignment / nb_file
            target.parent.mkdir(parents=True, exist_ok=True)
            (target.parent / "timestamp.txt").write_text("2026-11-22 10:00:00.000000 UTC")
        else:
            folder.mkdir(parents=True, exist_ok=True)
            target = folder / f"{student}.ipynb"
        nbformat.write(nb, target)
    return expected


def run_attngrade(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    """``attngrade`` with ``args``; without ``--course`` or ``--autograded-dir`` the rebuilt
    notebooks go to ``OUT/autograded``, never into the repository's own course folders."""
    args = tuple(map(str, args))
    if "--out" in args and not {"--course", "--autograded-dir"} & set(args):
        args += ("--autograded-dir", str(Path(args[args.index("--out") + 1]) / "autograded"))
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    proc = subprocess.run(
        [sys.executable, "-m", "attngrade", *map(str, args)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return proc


def read_grades(out: Path) -> dict[str, dict]:
    with open(out / "grades.csv", newline="", encoding="utf-8-sig") as fh:  # attngrade writes a BOM
        return {row["student"]: row for row in csv.DictReader(fh)}


def max_points(assignment: str) -> float:
    """The autograded points of ``assignment``'s release."""
    from attngrade.grader import load_assignment, load_course

    return load_assignment(load_course(ROOT), assignment).max_auto


def copy_gradebook(template: Path, target: Path) -> str:
    shutil.copy(template, target)
    return f"sqlite:///{target}"
