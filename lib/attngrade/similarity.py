"""Similarity evidence: which students' answers to one part are alike beyond what the task forces.

For the instructor only: nothing here reaches a student's feedback, and nothing changes a point
or a status. Each part (answer cell, by grade id) is compared across the whole class with
copydetect (tokenised by Pygments, names replaced by placeholders, so renaming, comments,
whitespace and the order of functions change nothing; k-gram fingerprints, compared pairwise).

What is not evidence:

* the release's starter code and the code quoted in the task text (fingerprints removed);
* code that the task forces: the fingerprints of the instructor's solution are removed too, so
  two answers that both write the obvious line share nothing by it;
* short answers: an answer with fewer than ``min_tokens`` characters of its own (after the
  above is removed; names count one character each) is not compared. The default is set above
  the two-line solutions of ``01_softmax`` (Parts 2 and 3, about 45), below its one real
  function (Part 1, 100), so an answer that is no more than what such a task forces is no
  evidence.

A pair's score is the larger of the two shares: the part of one answer's own code found in
the other. A copy with an inserted dead helper still contains all of the original, so the
original's share stays high. Every k-gram is kept (winnowing window 1): answer cells are small,
and the result then does not depend on Python's per-process string hashing.

Why copydetect and not Dolos (``@dodona/dolos-lib``): on the planted-copy class of
``tests/grading/similarity`` Dolos 3.5.1 (defaults, the solution as its template) separated
the copies from the honest pairs by 0.02 (0.650 against 0.632), copydetect as used here by 0.2
(1.000 against 0.798); Dolos's symmetric score drops for a copy padded with a dead helper, and
it brings Node.js and 450 MB of tree-sitter parsers compiled at install time to a Python grader.

With ``--shard`` every host writes its share's answers (:func:`write_answers`, in
``OUT/similarity/answers.json``); ``python -m attngrade.similarity OUT-1 OUT-2 ... --out DIR``
compares the whole class. Answers, not fingerprints, travel between hosts: copydetect hashes
with Python's salted ``hash``, so fingerprints are comparable within one process only.
"""

from __future__ import annotations

import argparse
import csv
import html
import io
import itertools
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from copydetect import CodeFingerprint, compare_files

from .names import csv_cell, shown
from .notebooks import cell_grade_id

__all__ = [
    "K",
    "MIN_TOKENS",
    "THRESHOLD",
    "Pair",
    "PartInfo",
    "Similarity",
    "answers_of",
    "compare_class",
    "compare_part",
    "add_to_summary",
    "class_step",
    "course_code",
    "for_class",
    "load_answers",
    "main",
    "render_section",
    "task_code",
    "update_answers",
    "write_answers",
    "write_csv",
]

K = 25  # characters of tokenised code per fingerprint (copydetect's default noise threshold)
THRESHOLD = 0.9  # a pair is listed when this share of one answer's own code is in the other
MIN_TOKENS = 60  # an answer with less code of its own than this is not evidence (tokenised characters)
MIN_CLASS = 3  # the grading command compares classes of at least this many students by default
MAX_CHARS = 64 * 1024  # an answer's first characters compared: the analysis is bounded per student
ANSWERS_FILE = "answers.json"


@dataclass(frozen=True)
class Pair:
    """Two students' answers to one part, with the passages they share (character ranges)."""

    part: str
    student_a: str
    student_b: str
    score: float  # max(share_a, share_b)
    share_a: float  # the part of a's own code found in b's
    share_b: float
    code_a: str
    code_b: str
    marks_a: tuple = ()  # ((start, end), ...) in code_a
    marks_b: tuple = ()


@dataclass
class PartInfo:
    """What was compared for one part, and what was not evidence."""

    part: str
    compared: int = 0
    short: list = field(default_factory=list)  # students whose answer is too short to compare
    cut: list = field(default_factory=list)  # students whose answer was longer than MAX_CHARS


@dataclass
class Similarity:
    """The class's result: pairs at or above the threshold, most similar first."""

    pairs: list
    parts: list
    threshold: float


def _check_threshold(threshold: float) -> float:
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
        raise TypeError(f"threshold must be a number from 0 to 1, got {type(threshold).__name__}")
    if not 0.0 <= float(threshold) <= 1.0:
        raise ValueError(f"threshold must be from 0 to 1, got {threshold}")
    return float(threshold)


def _fingerprint(code: str, boilerplate: np.ndarray | None = None) -> CodeFingerprint:
    return CodeFingerprint(
        "answer.py", K, 1, boilerplate=boilerplate, language="python", fp=io.StringIO(code)
    )


def _boilerplate(codes) -> np.ndarray:
    hashes: set = set()
    for code in codes:
        if code and code.strip():
            hashes |= _fingerprint(code).hashes
    return np.array(sorted(hashes), dtype=np.int64)


def task_code(markdown: str) -> str:
    """The code a task's text quotes (fenced blocks and inline spans), one snippet a line."""
    if not isinstance(markdown, str):
        raise TypeError(f"markdown must be a str, got {type(markdown).__name__}")
    fenced = re.findall(r"```[^\n]*\n(.*?)```", markdown, flags=re.S)
    rest = re.sub(r"```.*?```", "", markdown, flags=re.S)
    inline = re.findall(r"`([^`\n]+)`", rest)
    return "\n".join([*(f.strip("\n") for f in fenced), *inline])


def _marks(slices, length: int) -> tuple:
    if len(slices) != 2 or len(slices[0]) == 0:
        return ()
    out = []
    for start, end in zip(np.asarray(slices[0]).tolist(), np.asarray(slices[1]).tolist()):
        start, end = max(0, int(start)), min(length, int(end))
        if end > start:
            out.append((start, end))
    return tuple(out)


def compare_part(
    part: str,
    answers: dict,
    *,
    boilerplate=(),
    solution: str = "",
    threshold: float = THRESHOLD,
    min_tokens: int = MIN_TOKENS,
) -> tuple[list, PartInfo]:
    """Pairs of ``answers`` (student -> code) of one part at or above ``threshold``, most similar first.

    ``boilerplate`` (starter code, the task's code) and ``solution`` never count as evidence.
    """
    threshold = _check_threshold(threshold)
    if not isinstance(answers, dict):
        raise TypeError(f"answers must be a dict of student -> code, got {type(answers).__name__}")
    info = PartInfo(part)
    ignored = _boilerplate([*boilerplate, solution])
    prints = {}
    for student in sorted(answers):
        code = answers[student]
        if isinstance(code, str) and len(code) > MAX_CHARS:
            code = code[:MAX_CHARS]
            info.cut.append(student)
        fp = _fingerprint(code, ignored) if isinstance(code, str) and code.strip() else None
        if fp is None or fp.token_coverage < min_tokens:
            info.short.append(student)
        else:
            prints[student] = fp
    info.compared = len(prints)
    pairs = []
    for a, b in itertools.combinations(prints, 2):
        fa, fb = prints[a], prints[b]
        if not fa.hashes & fb.hashes:
            continue
        _, (share_a, share_b), (slices_a, slices_b) = compare_files(fa, fb)
        score = float(max(share_a, share_b))
        if score >= threshold:
            pairs.append(
                Pair(part, a, b, round(score, 4), round(float(share_a), 4), round(float(share_b), 4),
                     fa.raw_code, fb.raw_code, _marks(slices_a, len(fa.raw_code)),
                     _marks(slices_b, len(fb.raw_code)))
            )
    pairs.sort(key=lambda p: (-p.score, p.student_a, p.student_b))
    return pairs, info


def compare_class(
    answers_by_student_and_part: dict,
    release_code: dict,
    solution_code: dict,
    threshold: float = THRESHOLD,
    *,
    task_text: str = "",
    min_tokens: int = MIN_TOKENS,
) -> Similarity:
    """Every part's pairs at or above ``threshold`` across the class, most similar first.

    ``answers_by_student_and_part``: student -> {grade id: code}; ``release_code`` and
    ``solution_code``: grade id -> the release's starter code and the instructor's solution;
    ``task_text``: the code quoted by the task text (:func:`task_code`), never evidence.
    """
    if not isinstance(answers_by_student_and_part, dict):
        raise TypeError("answers_by_student_and_part must be a dict of student -> {grade id: code}")
    parts = sorted({g for per in answers_by_student_and_part.values() for g in per})
    pairs, infos = [], []
    for gid in parts:
        answers = {s: per[gid] for s, per in answers_by_student_and_part.items() if gid in per}
        found, info = compare_part(
            gid, answers, boilerplate=[release_code.get(gid, ""), task_text],
            solution=solution_code.get(gid, ""), threshold=threshold, min_tokens=min_tokens,
        )
        pairs.extend(found)
        infos.append(info)
    pairs.sort(key=lambda p: (-p.score, p.part, p.student_a, p.student_b))
    return Similarity(pairs, infos, _check_threshold(threshold))


def answers_of(notebook, grade_ids) -> dict:
    """The code answer cells of a (rebuilt) notebook by grade id, for the ids in ``grade_ids``."""
    wanted = set(grade_ids)
    out = {}
    for cell in (notebook or {}).get("cells", []):
        gid = cell_grade_id(cell)
        if gid in wanted and cell.get("cell_type") == "code":
            src = cell.get("source", "")
            out[gid] = "".join(src) if isinstance(src, list) else str(src)
    return out


def _source(cell) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def course_code(release, solution) -> dict:
    """What never counts, from the released and the solution notebooks (nbformat dicts).

    ``{"release": {grade id: starter code}, "solution": {grade id: solution code},
    "task": the release's other code cells and the code its text quotes}``.
    """
    starter, shared = {}, []
    for cell in release.get("cells", []):
        gid = cell_grade_id(cell)
        meta = cell.get("metadata", {}).get("nbgrader", {}) or {}
        if cell.get("cell_type") == "code" and meta.get("solution"):
            starter[gid] = _source(cell)
        elif cell.get("cell_type") == "code":
            shared.append(_source(cell))
        else:
            shared.append(task_code(_source(cell)))
    solutions = answers_of(solution, starter)
    return {"release": starter, "solution": solutions, "task": "\n".join(shared)}


def write_answers(folder: Path, assignment: str, answers: dict, course: dict) -> Path:
    """``folder/answers.json``: the answers of this run (or this host's share) and what never counts."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / ANSWERS_FILE
    data = {"assignment": assignment, "course": course, "answers": answers}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, sort_keys=True), encoding="utf-8")
    tmp.replace(path)
    return path


def load_answers(paths) -> tuple[str, dict, dict]:
    """``(assignment, course code, answers)`` merged from several hosts' ``answers.json``."""
    assignment, course, answers = None, None, {}
    for p in paths:
        p = Path(p)
        if p.is_dir():
            p = p / "similarity" / ANSWERS_FILE if (p / "similarity").is_dir() else p / ANSWERS_FILE
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ValueError(f"cannot read the answers of {p}: {exc}") from exc
        if assignment is not None and data["assignment"] != assignment:
            raise ValueError(f"{p} holds answers of {data['assignment']}, not of {assignment}")
        assignment, course = data["assignment"], data["course"]
        overlap = set(answers) & set(data["answers"])
        if overlap:
            raise ValueError(f"{p}: students graded on two hosts: {', '.join(sorted(overlap)[:5])}")
        answers.update(data["answers"])
    if assignment is None:
        raise ValueError("no answers given")
    return assignment, course, answers


def update_answers(folder: Path, assignment: str, fresh: dict, everyone, course: dict) -> dict:
    """This run's answers plus the kept answers of students not graded again (unchanged), for
    the students of ``everyone``; written back to ``folder/answers.json`` and returned."""
    kept = {}
    try:
        old = json.loads((Path(folder) / ANSWERS_FILE).read_text(encoding="utf-8"))
        if old.get("assignment") == assignment:
            kept = old.get("answers", {})
    except (OSError, ValueError):
        pass
    keep = set(everyone)
    merged = {s: a for s, a in kept.items() if s in keep}
    merged.update(fresh)
    write_answers(folder, assignment, merged, course)
    return merged


def run(answers: dict, course: dict, threshold: float = THRESHOLD) -> Similarity:
    """:func:`compare_class` on answers and :func:`course_code`'s output."""
    return compare_class(
        answers, course["release"], course["solution"], threshold, task_text=course.get("task", "")
    )


CSV_HEADER = ["part", "score", "student_a", "student_b", "share_a", "share_b", "shared_a", "shared_b"]


def _shared_text(code: str, marks) -> str:
    """The shared passages on one line (whitespace runs become one space), `` ... `` between."""
    return " ... ".join(" ".join(code[s:e].split()) for s, e in marks)


def write_csv(path: Path, result: Similarity) -> Path:
    """The listed pairs as CSV, most similar first; no field can start a spreadsheet formula."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(CSV_HEADER)
        for p in result.pairs:
            w.writerow(
                [csv_cell(x) for x in (
                    p.part, f"{p.score:.4f}", p.student_a, p.student_b, f"{p.share_a:.4f}",
                    f"{p.share_b:.4f}", _shared_text(p.code_a, p.marks_a), _shared_text(p.code_b, p.marks_b),
                )]
            )
    return Path(path)


def _marked(code: str, marks) -> str:
    out, at = [], 0
    for start, end in marks:
        out.append(html.escape(code[at:start]))
        out.append(f"<mark>{html.escape(code[start:end])}</mark>")
        at = end
    out.append(html.escape(code[at:]))
    return "".join(out)


SECTION_CSS = """
.sim-pair{border:1px solid #ddd;border-radius:6px;padding:.5rem 1rem;margin:1rem 0}
.sim-sbs{display:grid;grid-template-columns:1fr 1fr;gap:1rem}
.sim-sbs pre{background:#f6f8fa;border:1px solid #ddd;border-radius:4px;padding:.5rem;overflow-x:auto;
font-size:.8rem;margin:.3rem 0;white-space:pre}
.sim-sbs mark{background:#ffe08a;padding:0}.sim-note{color:#444}
"""


def _e(text) -> str:
    """HTML-escaped printable text: ids and names that are not UTF-8 included."""
    return html.escape(shown(str(text)))


def _pair_html(i: int, p: Pair) -> str:
    e = _e
    return (
        f"<div class='sim-pair' id='sim-{i}'><h3>{i}. <code>{e(p.part)}</code>: {e(p.student_a)} and "
        f"{e(p.student_b)} ({p.score:.0%})</h3><div class='sim-sbs'>"
        f"<div><b>{e(p.student_a)}</b> ({p.share_a:.0%} of this answer's own code is in the other)"
        f"<pre>{_marked(p.code_a, p.marks_a)}</pre></div>"
        f"<div><b>{e(p.student_b)}</b> ({p.share_b:.0%} of this answer's own code is in the other)"
        f"<pre>{_marked(p.code_b, p.marks_b)}</pre></div></div></div>"
    )


def render_section(result: Similarity, csv_name: str = "similarity.csv") -> str:
    """The summary's section: pairs at or above the threshold, most similar first, side by side."""
    e = _e
    out = [
        f"<style>{SECTION_CSS}</style><section id='similarity'>"
        f"<h2>Similar answers ({len(result.pairs)} pairs at {result.threshold:.0%} or more)</h2>"
        "<p class='sim-note'>Evidence for you only: students never see it, and it changes no points "
        "and no status. A pair's score is the share of one answer's own code found in the other; "
        "the starter code, the code in the task's text and the code the solution shares with an answer "
        "never count, and short answers are not compared. Shared passages are <mark>marked</mark>. "
        f"The same pairs are in <code>{e(csv_name)}</code>.</p>"
    ]
    if result.pairs:
        out.append("<table><tr><th>#</th><th>part</th><th>score</th><th>student</th><th>student</th></tr>")
        for i, p in enumerate(result.pairs, 1):
            out.append(
                f"<tr><td><a href='#sim-{i}'>{i}</a></td><td><code>{e(p.part)}</code></td>"
                f"<td>{p.score:.0%}</td><td>{e(p.student_a)}</td><td>{e(p.student_b)}</td></tr>"
            )
        out.append("</table>")
        out.extend(_pair_html(i, p) for i, p in enumerate(result.pairs, 1))
    else:
        out.append("<p>No pair reaches the threshold.</p>")
    notes = []
    for info in result.parts:
        short = ""
        if info.short:
            names = ", ".join(info.short[:20]) + (f" and {len(info.short) - 20} more" if len(info.short) > 20 else "")
            short = f", {len(info.short)} too short to be evidence <small>({e(names)})</small>"
        cut = f", {len(info.cut)} longer than {MAX_CHARS // 1024} KiB, compared by their start" if info.cut else ""
        notes.append(f"<li><code>{e(info.part)}</code>: {info.compared} answers compared{short}{cut}</li>")
    out.append("<p>Per part:</p><ul>" + "".join(notes) + "</ul></section>")
    return "".join(out)


def write_report(folder: Path, result: Similarity, title: str) -> tuple[Path, Path]:
    """``similarity.html`` (the section on its own page) and ``similarity.csv`` in ``folder``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    csv_path = write_csv(folder / "similarity.csv", result)
    page = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{_e(title)}</title>"
        "<style>body{font-family:system-ui,sans-serif;max-width:100rem;margin:2rem auto;padding:0 1rem}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3rem .6rem}</style></head>"
        f"<body><h1>{_e(title)}</h1>{render_section(result, csv_path.name)}</body></html>"
    )
    html_path = folder / "similarity.html"
    html_path.write_text(page, encoding="utf-8", errors="backslashreplace")
    return html_path, csv_path


def for_class(folder: Path, assignment: str, course: dict, fresh: dict, everyone, *, compare: bool,
              threshold: float = THRESHOLD) -> Similarity | None:
    """The grading command's step: keep the class's answers in ``folder/answers.json`` (this
    run's ``fresh`` answers and the kept ones of unchanged students), then compare them unless
    ``compare`` is false (a ``--shard`` host: the final step compares every host's answers)."""
    answers = update_answers(folder, assignment, fresh, everyone, course)
    return run(answers, course, threshold) if compare else None


def add_to_summary(out: Path, result: Similarity) -> Path:
    """Write ``out/similarity.csv``, put the section into ``out/summary.html`` (before its end)
    and the pairs' count into ``out/summary.json``."""
    out = Path(out)
    csv_path = write_csv(out / "similarity.csv", result)
    page = out / "summary.html"
    text = page.read_text(encoding="utf-8")
    at = text.rfind("</body>")
    section = render_section(result, csv_path.name)
    page.write_text(text[:at] + section + text[at:] if at >= 0 else text + section, encoding="utf-8",
                    errors="backslashreplace")
    summary = out / "summary.json"
    data = json.loads(summary.read_text(encoding="utf-8"))
    data["similarity"] = {
        "threshold": result.threshold,
        "pairs": len(result.pairs),
        "csv": csv_path.name,
        "parts": {i.part: {"compared": i.compared, "short": len(i.short)} for i in result.parts},
    }
    summary.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return csv_path


def class_step(out: Path, spec, results: list, prepared: dict, *, everyone: int, shard=None,
               enabled: bool | None = None, say=print) -> Similarity | None:
    """The grading command's similarity step, after the summary is written; never fatal.

    ``enabled`` None: on for a class (every host's students together) of :data:`MIN_CLASS` or
    more. The answers are the graded (rebuilt) notebook's, else the submission's as read.
    On a ``--shard`` host the answers are kept for the final step only.
    """
    if not (enabled if enabled is not None else everyone >= MIN_CLASS):
        return None
    try:
        import nbformat

        course = course_code(spec.release, nbformat.read(str(spec.source_path), as_version=4))
        fresh = {}
        for r in results:
            notebook = r.notebook if r.notebook is not None else getattr(prepared.get(r.student), "notebook", None)
            if notebook is not None:
                fresh[r.student] = answers_of(notebook, course["release"])
        result = for_class(Path(out) / "similarity", spec.name, course, fresh, [r.student for r in results],
                           compare=shard is None)
        if result is None:
            say(f"similarity: this share's answers are in {Path(out) / 'similarity' / ANSWERS_FILE}; when every "
                "host is done: python -m attngrade.similarity OUT-1 OUT-2 ... --out DIR")
            return None
        add_to_summary(out, result)
        say(f"similarity: {len(result.pairs)} pairs at {result.threshold:.0%} or more "
            f"(summary.html, {Path(out) / 'similarity.csv'})")
        return result
    except Exception as exc:  # noqa: BLE001 - evidence only: the grades are written and stand
        print(f"attngrade: the similarity step failed ({type(exc).__name__}: {exc}); grades are unaffected",
              file=sys.stderr)
        return None


def main(argv: list[str] | None = None) -> int:
    """Compare the whole class from the answers each grading host wrote (``--shard``)."""
    p = argparse.ArgumentParser(
        prog="python -m attngrade.similarity",
        description="Compare the answers of every grading host's OUT (written with --shard) as one class.",
    )
    p.add_argument("outs", nargs="+", help="each host's OUT folder (or its similarity/answers.json)")
    p.add_argument("--out", required=True, help="folder for similarity.html and similarity.csv")
    p.add_argument("--threshold", type=float, default=THRESHOLD, help=f"default {THRESHOLD}")
    args = p.parse_args(argv)
    try:
        assignment, course, answers = load_answers(args.outs)
        result = run(answers, course, _check_threshold(args.threshold))
    except (ValueError, KeyError) as exc:
        print(f"attngrade.similarity: {exc}", file=sys.stderr)
        return 2
    html_path, csv_path = write_report(Path(args.out), result, f"Similar answers: {assignment}")
    print(f"{len(answers)} students, {len(result.pairs)} pairs at {result.threshold:.0%} or more")
    print(f"report: {html_path}\npairs: {csv_path}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
