"""Similarity evidence: which students' answers to one part are alike beyond what the task forces.

For the instructor only: nothing here reaches a student's feedback, and nothing changes a point
or a status.

**What is compared.** Each answer (answer cell, by grade id) becomes a set of features
(:mod:`attngrade.codeprint`): its syntax tree with names abstracted, comments and docstrings
dropped, method calls, NumPy spellings, operand order, loops and comprehensions, helpers and
temporaries normalised (each expression also with its variables and helper calls expanded), and
k-grams of its tokens as written. Order plays no part, so reordered statements and functions
change nothing.

**What is not evidence.** The features of the release's starter code, of the code the task gives
(its other code cells and the code quoted in its text) and of the instructor's solution weigh
nothing. Every other feature weighs by its rarity in the part across the class:
``(log((n + 1) / df) / log(n + 1)) ** 3`` for a feature in ``df`` of ``n`` answers (``n`` at
least :data:`MIN_CLASS_WEIGHT`, as if the rest of a small class had not written it), and the
k-grams of the code as written half that. An answer with fewer than :data:`MIN_OWN` features
of its own is not compared.

**A pair's score** is the weight the two answers share over the smaller one's weight plus
:data:`PRIOR`: the share of the smaller answer's own, rare code found in the other, which a
dead helper padding a copy does not lower, and which a short answer (little of its own) cannot
reach by chance. Two answers that both write what everyone writes share little weight.

**Ranked by how unusual a pair is in its part.** A pair's *unusualness* is how many deviations
its score stands above the part's usual scores (their median, and a deviation read from their
upper decile, so that copies do not move them). A pair is listed when it is at least
:data:`MIN_Z` above and scores at least :data:`MIN_SCORE`; students linked by listed pairs are
one *group* (ten students who share one answer are one group, not 45 pairs; a pair joins two
groups only if it scores at least :data:`LINK` of the weaker group's best, so one honest pair
does not chain two copy groups). Groups are ranked by their most unusual pair;
``similarity.csv`` has every listed pair with its group, and the pairs just below the cut
(unusualness :data:`NEAR_Z` or more).

**Students with different variants** (:mod:`attngrade.variants`: a part whose task gives each
student their own parameter, such as a temperature). A number equal to one of the part's
parameter values is read as the parameter's name (:func:`attngrade.codeprint.code_print`'s
``literals``), so two answers that differ only there are alike. And two students whose values
differ get a *note* when one answer writes the other's value and not its own (a classmate's
answer, copied with their value, is wrong for one's own variant), or when both hand in the same
code (at least one is wrong for its variant): such a pair is listed whenever it scores at least
:data:`MIN_SCORE`, whatever its unusualness, and ranks before the others.

**Measured.** The constants were set on the planted class of ``tests/grading/similarity``
(30 honest answers to ``01_softmax`` Part 1, 13 disguised copies), where every copy ranks above
every honest pair (copies 0.25-0.83, honest pairs at most 0.21). On the probe that someone else
wrote and that was never used to tune (``tests/grading/similarity/probe``: three parts, 14
honest answers and 8 disguised copies each) every copy ranks above every honest pair of its
part too (copies 0.21-0.82, honest pairs at most 0.14); copydetect, used before, did not
separate two of the three parts.

With ``--shard`` every host writes its share's answers (:func:`write_answers`, in
``OUT/similarity/answers.json``); ``python -m attngrade.similarity OUT-1 OUT-2 ... --out DIR``
compares the whole class.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .codeprint import code_print
from .names import csv_cell
from .notebooks import cell_grade_id

__all__ = [
    "MIN_Z",
    "MIN_SCORE",
    "Group",
    "Pair",
    "PartInfo",
    "PartScores",
    "Similarity",
    "answers_of",
    "class_variants",
    "compare_class",
    "compare_part",
    "add_to_summary",
    "class_step",
    "course_code",
    "for_class",
    "load_answers",
    "main",
    "part_scores",
    "run",
    "task_code",
    "update_answers",
    "variant_note",
    "write_answers",
    "write_csv",
    "write_report",
]

MIN_Z = 4.0  # a pair is listed when its score is this many deviations above its part's usual ...
MIN_SCORE = 0.2  # ... and at least this share of the smaller answer's own code is in the other
NEAR_Z = 3.0  # pairs from here up to the cut are in the CSV too (not listed on the page)
TRIM = 0.1  # the upper quantile (1 - TRIM) that measures a part's deviation
LINK = 0.5  # a pair joins two groups when it scores at least this share of the weaker one's best
PRIOR_PAIRS = 30  # pairs that share nothing added to a part's usual scores
MIN_SPREAD = 0.02  # the least deviation of a part's scores (a class of near-identical answers)
WEIGHT_POWER = 3  # the rarity weight's exponent
SURFACE_WEIGHT = 0.5  # the k-grams of the code as written, against the normalised features
PRIOR = 6.0  # weight added to the smaller answer's: a short answer's share is shrunk towards 0
MIN_CLASS_WEIGHT = 30  # rarity is reckoned as in a class of at least this many
MIN_OWN = 3  # an answer with fewer features of its own is not compared
MIN_CLASS = 3  # the grading command compares classes of at least this many students by default
MAX_CHARS = 64 * 1024  # an answer's first characters compared: the analysis is bounded per student
ANSWERS_FILE = "answers.json"


@dataclass(frozen=True)
class Pair:
    """Two students' answers to one part, with the passages they share (character ranges)."""

    part: str
    student_a: str
    student_b: str
    score: float  # shared weight / (the smaller answer's weight + PRIOR)
    share_a: float  # the part of a's own weight found in b's
    share_b: float
    z: float  # deviations above the part's usual scores
    listed: bool  # z >= MIN_Z and score >= MIN_SCORE
    code_a: str = ""
    code_b: str = ""
    marks_a: tuple = ()  # ((start, end), ...) in code_a
    marks_b: tuple = ()
    note: str = ""  # what the students' variants say of the pair (see the module's docstring)


@dataclass
class Group:
    """Students of one part linked by listed pairs; ``answers``: the distinct answers (after
    normalisation), each as (students, code, marks)."""

    part: str
    students: tuple
    pairs: list
    answers: list = field(default_factory=list)

    @property
    def z(self) -> float:
        return max(p.z for p in self.pairs)

    @property
    def score(self) -> float:
        return max(p.score for p in self.pairs)


@dataclass
class PartInfo:
    """What was compared for one part, what was not evidence, and the part's usual scores."""

    part: str
    compared: int = 0
    short: list = field(default_factory=list)  # students with too little code of their own
    cut: list = field(default_factory=list)  # students whose answer was longer than MAX_CHARS
    unparsed: list = field(default_factory=list)  # students whose code does not all parse
    center: float = 0.0  # the median of the part's pair scores
    spread: float = MIN_SPREAD  # their deviation


@dataclass
class Similarity:
    """The class's result: groups (most unusual first), their listed pairs, and the pairs just
    below the cut (``near``)."""

    groups: list
    parts: list
    near: list = field(default_factory=list)
    min_z: float = MIN_Z
    min_score: float = MIN_SCORE

    @property
    def pairs(self) -> list:
        """Every listed pair, most unusual first."""
        return sorted((p for g in self.groups for p in g.pairs), key=_rank)


def _rank(p: Pair):
    return (not p.note, -p.z, -p.score, p.part, p.student_a, p.student_b)


def _check_number(name: str, value, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number from {low:g} to {high:g}, got {type(value).__name__}")
    if not low <= float(value) <= high:
        raise ValueError(f"{name} must be from {low:g} to {high:g}, got {value}")
    return float(value)


def task_code(markdown: str) -> str:
    """The code a task's text quotes (fenced blocks and inline spans), one snippet a line."""
    if not isinstance(markdown, str):
        raise TypeError(f"markdown must be a str, got {type(markdown).__name__}")
    fenced = re.findall(r"```[^\n]*\n(.*?)```", markdown, flags=re.S)
    rest = re.sub(r"```.*?```", "", markdown, flags=re.S)
    inline = re.findall(r"`([^`\n]+)`", rest)
    return "\n".join([*(f.strip("\n") for f in fenced), *inline])


# Comparing one part.


def _not_evidence(codes, literals: dict | None = None) -> set:
    """The features of code that never counts (starter code, the task's code, the solution)."""
    out: set = set()
    for code in codes:
        if isinstance(code, str) and code.strip():
            out |= set(code_print(code, literals).features)
    return out


def _prints(answers: dict, info: PartInfo, ignored: set, literals: dict | None = None) -> dict:
    """student -> (code, its CodePrint, its own features, its ranges by feature) for the answers
    with enough code of their own."""
    out = {}
    for student in sorted(answers):
        code = answers[student] if isinstance(answers[student], str) else ""
        if len(code) > MAX_CHARS:
            code = code[:MAX_CHARS]
            info.cut.append(student)
        found = code_print(code, literals)
        own = frozenset(found.features) - ignored
        if found.unparsed:
            info.unparsed.append(student)
        if len(own) < MIN_OWN:
            info.short.append(student)
        else:
            out[student] = (code, found, own, _span_table(found))
    return out


def _weights(prints: dict) -> tuple[dict, dict]:
    """Each feature's weight by its rarity among the answers, and how many answers hold it."""
    held: dict = {}
    surface: set = set()
    for _, found, own, _ in prints.values():
        surface |= found.surface & own
        for f in own:
            held[f] = held.get(f, 0) + 1
    n = max(len(prints), MIN_CLASS_WEIGHT)
    top = math.log(n + 1)
    weights = {f: (math.log((n + 1) / d) / top) ** WEIGHT_POWER * (SURFACE_WEIGHT if f in surface else 1.0)
               for f, d in held.items()}
    return weights, held


def _shared_matrix(owns: list, weights: dict, held: dict) -> np.ndarray:
    """``[i, j]``: the weight answers i and j share (features held by two or more, in chunks)."""
    columns = sorted(f for f, d in held.items() if d > 1)
    n, shared = len(owns), np.zeros((len(owns), len(owns)))
    step = max(1, 4_000_000 // max(1, n))
    for at in range(0, len(columns), step):
        chunk = {f: k for k, f in enumerate(columns[at:at + step])}
        x = np.zeros((n, len(chunk)))
        for i, own in enumerate(owns):
            x[i, [chunk[f] for f in own if f in chunk]] = 1.0
        shared += (x * np.array([weights[f] for f in chunk])) @ x.T
    return shared


def _usual(scores: np.ndarray) -> tuple[float, float]:
    """A part's usual score and deviation: the median of its pair scores and the distance from
    there to their upper decile (as 1.28 deviations, a normal's), so that copies, even one pair
    in ten, do not move either; :data:`PRIOR_PAIRS` pairs that share nothing are put in (a small
    class's few pairs say little about what is usual)."""
    values = np.concatenate([scores, np.zeros(PRIOR_PAIRS)])
    center, upper = (float(x) for x in np.quantile(values, [0.5, 1.0 - TRIM]))
    return center, max(MIN_SPREAD, (upper - center) / 1.2816)


def _span_table(found) -> tuple:
    """An answer's feature ranges as arrays sorted by start: (starts, ends, feature ids)."""
    rows = sorted((start, end, f) for f, spans in found.features.items() for start, end in spans)
    if not rows:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    return tuple(np.array(col, dtype=np.int64) for col in zip(*rows))


def _marks(table: tuple, features) -> tuple:
    """The character ranges of an answer that gave ``features``, overlapping ranges merged."""
    starts, ends, ids = table
    keep = np.isin(ids, np.fromiter(features, dtype=np.int64, count=len(features))) & (ends > starts)
    starts, ends = starts[keep], ends[keep]
    if not starts.size:
        return ()
    reach = np.maximum.accumulate(ends)
    new = np.concatenate([[True], starts[1:] > reach[:-1]])
    firsts = np.flatnonzero(new)
    lasts = np.concatenate([firsts[1:] - 1, [starts.size - 1]])
    return tuple(zip(starts[firsts].tolist(), reach[lasts].tolist()))


def _pair(part, a, b, prints, numbers, listed: bool, note: str = "") -> Pair:
    (code_a, _, own_a, spans_a), (code_b, _, own_b, spans_b) = prints[a], prints[b]
    both = own_a & own_b
    score, share_a, share_b, z = (round(float(x), 4) for x in numbers)
    return Pair(part, a, b, score, share_a, share_b, z, listed, code_a, code_b,
                _marks(spans_a, both), _marks(spans_b, both), note)


# Students with different variants.

_NUMBER = re.compile(r"(?<![\w.])(?:\d[\d_]*\.?[\d_]*(?:[eE][-+]?\d+)?|\.\d[\d_]*(?:[eE][-+]?\d+)?)(?![\w.])")


def _check_variants(variants) -> dict:
    """``variants`` of one part: ``{"params": {name: [every value]}, "values": {student: {name: value}}}``."""
    if variants is None:
        return {"params": {}, "values": {}}
    if not isinstance(variants, dict) or not isinstance(variants.get("params"), dict) \
            or not isinstance(variants.get("values"), dict):
        raise TypeError("variants must be a dict with 'params' (name -> values) and 'values' (student -> values)")
    return variants


def _literals(variants: dict) -> dict:
    """The numbers read as a parameter's name: every value of the part's parameters."""
    return {float(v): f"VARIANT_{name}" for name, values in sorted(variants["params"].items()) for v in values
            if isinstance(v, (int, float)) and not isinstance(v, bool)}


def _numbers(code: str) -> set:
    """The numbers the code writes (comments left out)."""
    found = set()
    for text in _NUMBER.findall(re.sub(r"#[^\n]*", "", code)):
        try:
            found.add(float(text.replace("_", "")))
        except ValueError:
            pass
    return found


def _show(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def variant_note(a: str, b: str, code_a: str, code_b: str, variants: dict) -> str:
    """What the variants of students ``a`` and ``b`` say of their answers to one part, or ""."""
    va, vb = variants["values"].get(a), variants["values"].get(b)
    if not va or not vb:
        return ""
    differ = [n for n in sorted(variants["params"]) if n in va and n in vb and va[n] != vb[n]]
    if not differ:
        return ""
    nums = {a: _numbers(code_a), b: _numbers(code_b)}
    for name in differ:
        for x, y, vx, vy in ((b, a, vb, va), (a, b, va, vb)):
            if float(vy[name]) in nums[x] and float(vx[name]) not in nums[x]:
                return (f"{x}'s answer writes {y}'s {name} {_show(vy[name])}, not {x}'s own {_show(vx[name])}: "
                        f"an answer for {y}'s variant")
    if " ".join(re.sub(r"#[^\n]*", "", code_a).split()) == " ".join(re.sub(r"#[^\n]*", "", code_b).split()):
        values = ", ".join(f"{n} {_show(va[n])} and {_show(vb[n])}" for n in differ)
        return f"the same code for two variants ({values}): at least one is wrong for its own variant"
    return ""


def _check_answers(answers) -> dict:
    if not isinstance(answers, dict):
        raise TypeError(f"answers must be a dict of student -> code, got {type(answers).__name__}")
    return answers


@dataclass
class PartScores:
    """Every pair of one part: ``score[i, j]``, ``z[i, j]`` and the weight ``shared[i, j]`` of
    ``students[i]`` and ``students[j]``; ``total[i]``: the weight of ``students[i]``'s own code."""

    info: PartInfo
    students: list
    prints: dict
    score: np.ndarray
    z: np.ndarray
    shared: np.ndarray
    total: np.ndarray

    def of(self, a: str, b: str) -> tuple[float, float]:
        """``(score, z)`` of students ``a`` and ``b``."""
        i, j = self.students.index(a), self.students.index(b)
        return float(self.score[i, j]), float(self.z[i, j])


def part_scores(part: str, answers: dict, *, boilerplate=(), solution: str = "", variants=None) -> PartScores:
    """Every pair of ``answers`` (student -> code) of one part, scored and calibrated on the part.

    ``boilerplate`` (starter code, the task's code) and ``solution`` never count; the numbers
    of ``variants`` (:func:`variant_note`'s) are read as the parameters' names.
    """
    info = PartInfo(part)
    literals = _literals(_check_variants(variants))
    prints = _prints(_check_answers(answers), info, _not_evidence([*boilerplate, solution], literals), literals)
    students = sorted(prints)
    info.compared = len(students)
    weights, held = _weights(prints)
    owns = [prints[s][2] for s in students]
    total = np.array([math.fsum(weights[f] for f in sorted(own)) for own in owns])
    shared = _shared_matrix(owns, weights, held)
    score = shared / (np.minimum.outer(total, total) + PRIOR)
    info.center, info.spread = _usual(score[np.triu_indices(len(students), 1)])
    return PartScores(info, students, prints, score, (score - info.center) / info.spread, shared, total)


def compare_part(
    part: str,
    answers: dict,
    *,
    boilerplate=(),
    solution: str = "",
    min_z: float = MIN_Z,
    min_score: float = MIN_SCORE,
    variants=None,
) -> tuple[list, list, PartInfo]:
    """One part across the class: ``(groups, near, info)`` (:func:`part_scores`).

    ``groups``: students linked by listed pairs (unusualness at least ``min_z`` and score at
    least ``min_score``, or a :func:`variant_note` and that score), noted pairs first, then most
    unusual first; ``near``: the other pairs from :data:`NEAR_Z` (or ``min_z`` if lower) up.
    ``variants``: the part's parameters and each student's values (:func:`variant_note`).
    """
    min_z, min_score = _check_number("min_z", min_z, -1e9, 1e9), _check_number("min_score", min_score, 0, 1)
    variants = _check_variants(variants)
    found = part_scores(part, answers, boilerplate=boilerplate, solution=solution, variants=variants)
    listed, near, students = [], [], found.students
    for i, j in zip(*np.triu_indices(len(students), 1)):
        if found.shared[i, j] <= 0:
            continue
        a, b = students[i], students[j]
        note = variant_note(a, b, found.prints[a][0], found.prints[b][0], variants) if variants["params"] else ""
        if found.z[i, j] < min(NEAR_Z, min_z) and not note:
            continue
        is_listed = bool((found.z[i, j] >= min_z or note) and found.score[i, j] >= min_score)
        numbers = (found.score[i, j], found.shared[i, j] / found.total[i], found.shared[i, j] / found.total[j],
                   found.z[i, j])
        pair = _pair(part, a, b, found.prints, numbers, is_listed, note)
        (listed if is_listed else near).append(pair)
    return _groups(part, listed, found.prints), sorted(near, key=_rank), found.info


def _components(pairs: list) -> list:
    """The groups of students that ``pairs`` (most unusual first) link, each a sorted list.

    A pair joins two groups only if its score is at least :data:`LINK` of the weaker group's best
    pair: two copied answers that an honest pair happens to bridge stay two groups, and that pair
    is a group of its own.
    """
    group: dict = {}  # student -> its group's key
    best: dict = {}  # group key -> its best score
    members: dict = {}  # group key -> students
    alone = []
    for p in sorted(pairs, key=lambda q: (-q.score, q.student_a, q.student_b)):
        a, b = group.get(p.student_a), group.get(p.student_b)
        if a is not None and a == b:
            continue
        if p.score < LINK * min(best.get(a, p.score), best.get(b, p.score)):
            alone.append([p.student_a, p.student_b])
            continue
        key = a if a is not None else b if b is not None else p.student_a
        best[key] = max(best.get(a, 0.0), best.get(b, 0.0), p.score)
        joined = {*members.pop(a, []), *members.pop(b, []), p.student_a, p.student_b}
        members[key] = sorted(joined)
        for s in members[key]:
            group[s] = key
    return list(members.values()) + alone


def _groups(part: str, pairs: list, prints: dict) -> list:
    """The groups of one part's listed pairs, each with its distinct answers, most unusual first."""
    groups = []
    for students in _components(pairs):
        inside = set(students)
        mine = sorted((p for p in pairs if p.student_a in inside and p.student_b in inside), key=_rank)
        answers: dict = {}
        for s in students:
            answers.setdefault(prints[s][2], []).append(s)
        shown = []
        for own, names in answers.items():
            others = frozenset().union(*(o for o in answers if o is not own)) if len(answers) > 1 else own
            code, _, _, spans = prints[names[0]]
            shown.append((tuple(names), code, _marks(spans, own & others)))
        groups.append(Group(part, tuple(students), mine, sorted(shown, key=lambda v: v[0])))
    return sorted(groups, key=_group_rank)


def _group_rank(g: Group):
    return (not any(p.note for p in g.pairs), -g.z, -g.score, g.part, g.students)


def compare_class(
    answers_by_student_and_part: dict,
    release_code: dict,
    solution_code: dict,
    *,
    task_text: str = "",
    min_z: float = MIN_Z,
    min_score: float = MIN_SCORE,
    variants: dict | None = None,
) -> Similarity:
    """Every part across the class: its groups, most unusual first (:func:`compare_part`).

    ``answers_by_student_and_part``: student -> {grade id: code}; ``release_code`` and
    ``solution_code``: grade id -> the release's starter code and the instructor's solution;
    ``task_text``: the task's own code (:func:`course_code`), never evidence; ``variants``:
    ``{"params": {grade id: {name: [every value]}}, "values": {student: {name: value}}}``, the
    parts with per-student parameters and each student's values (:func:`class_variants`).
    """
    variants = variants or {"params": {}, "values": {}}
    if not isinstance(answers_by_student_and_part, dict):
        raise TypeError("answers_by_student_and_part must be a dict of student -> {grade id: code}")
    parts = sorted({g for per in answers_by_student_and_part.values() if isinstance(per, dict) for g in per})
    groups, near, infos = [], [], []
    for gid in parts:
        answers = {s: per[gid] for s, per in answers_by_student_and_part.items()
                   if isinstance(per, dict) and gid in per}
        params = variants["params"].get(gid) or {}
        found, close, info = compare_part(
            gid, answers, boilerplate=[release_code.get(gid, ""), task_text],
            solution=solution_code.get(gid, ""), min_z=min_z, min_score=min_score,
            variants={"params": params, "values": variants["values"]} if params else None,
        )
        groups.extend(found)
        near.extend(close)
        infos.append(info)
    return Similarity(sorted(groups, key=_group_rank), infos, sorted(near, key=_rank), min_z, min_score)


# Answers and the course's code.


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
        values = {**((course or {}).get("variants") or {}).get("values", {}),
                  **(data["course"].get("variants") or {}).get("values", {})}
        assignment, course = data["assignment"], data["course"]
        if course.get("variants"):  # each host knows its own students' variants
            course["variants"]["values"] = values
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


def run(answers: dict, course: dict, *, min_z: float = MIN_Z, min_score: float = MIN_SCORE) -> Similarity:
    """:func:`compare_class` on answers and :func:`course_code`'s output (with the class's
    variants, :func:`class_variants`, where it has them)."""
    return compare_class(answers, course["release"], course["solution"], task_text=course.get("task", ""),
                         min_z=min_z, min_score=min_score, variants=course.get("variants"))


def class_variants(spec, students, starter: dict) -> dict | None:
    """The answer cells (``starter``: grade id -> the release's code, :func:`course_code`) whose
    function has per-student parameters, with every value, and each student's values, drawn as
    the grader draws them (``spec.secret``); None where no part has variants or the course has
    no secret."""
    varied = [ps for ps in getattr(spec, "parts", ()) if getattr(ps.part, "variants", None) is not None]
    if not varied or not getattr(spec, "secret", None):
        return None
    params: dict = {}
    for ps in varied:
        cells = [gid for gid, code in starter.items() if re.search(rf"^\s*def\s+{re.escape(ps.function)}\s*\(", code, re.M)]
        for gid in cells:
            for name in ps.part.params:
                param = ps.part.variants.param(name)
                params.setdefault(gid, {})[name] = [param.default, *param.choices]
    return {"params": params, "values": {s: varied[0].part.variant(spec.secret, s) for s in students}}


# What the instructor reads.

CSV_HEADER = ["part", "group", "group_size", "unusualness", "score", "student_a", "student_b", "share_a",
              "share_b", "listed", "shared_a", "shared_b", "variants"]


def _shared_text(code: str, marks) -> str:
    """The shared passages on one line (whitespace runs become one space), `` ... `` between."""
    return " ... ".join(" ".join(code[s:e].split()) for s, e in marks)


def _csv_row(p: Pair, group: str, size: str) -> list:
    return [csv_cell(x) for x in (
        p.part, group, size, f"{p.z:.2f}", f"{p.score:.4f}", p.student_a, p.student_b, f"{p.share_a:.4f}",
        f"{p.share_b:.4f}", "yes" if p.listed else "no", _shared_text(p.code_a, p.marks_a),
        _shared_text(p.code_b, p.marks_b), p.note,
    )]


def write_csv(path: Path, result: Similarity) -> Path:
    """Every listed pair by group (groups numbered as on the page, most unusual first), then the
    pairs just below the cut; no field can start a spreadsheet formula."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(CSV_HEADER)
        for number, group in enumerate(result.groups, 1):
            for p in group.pairs:
                w.writerow(_csv_row(p, str(number), str(len(group.students))))
        for p in result.near:
            w.writerow(_csv_row(p, "", ""))
    return Path(path)


def write_report(folder: Path, result: Similarity, title: str) -> tuple[Path, Path]:
    """``similarity.html`` (the section on its own page) and ``similarity.csv`` in ``folder``."""
    from .similarity_page import page

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    csv_path = write_csv(folder / "similarity.csv", result)
    html_path = folder / "similarity.html"
    html_path.write_text(page(result, title, csv_path.name), encoding="utf-8", errors="backslashreplace")
    return html_path, csv_path


def for_class(folder: Path, assignment: str, course: dict, fresh: dict, everyone, *,
              compare: bool) -> Similarity | None:
    """The grading command's step: keep the class's answers in ``folder/answers.json`` (this
    run's ``fresh`` answers and the kept ones of unchanged students), then compare them unless
    ``compare`` is false (a ``--shard`` host: the final step compares every host's answers)."""
    answers = update_answers(folder, assignment, fresh, everyone, course)
    return run(answers, course) if compare else None


def _summary_figures(result: Similarity, csv_name: str) -> dict:
    return {
        "groups": len(result.groups),
        "pairs": len(result.pairs),
        "min_unusualness": result.min_z,
        "min_score": result.min_score,
        "csv": csv_name,
        "parts": {i.part: {"compared": i.compared, "short": len(i.short), "usual_score": round(i.center, 4),
                           "deviation": round(i.spread, 4)} for i in result.parts},
    }


def add_to_summary(out: Path, result: Similarity) -> Path:
    """Write ``out/similarity.csv``, put the section into ``out/summary.html`` (before its end)
    and the figures into ``out/summary.json``."""
    from .similarity_page import render_section

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
    data["similarity"] = _summary_figures(result, csv_path.name)
    summary.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return csv_path


def _said(result: Similarity) -> str:
    students = sum(len(g.students) for g in result.groups)
    return (f"{len(result.groups)} groups of similar answers ({students} students, {len(result.pairs)} pairs; "
            f"unusualness {result.min_z:g} or more)")


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
        variants = class_variants(spec, [r.student for r in results], course["release"])
        if variants is not None:
            course["variants"] = variants
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
        say(f"similarity: {_said(result)} (summary.html, {Path(out) / 'similarity.csv'})")
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
    p.add_argument("--min-unusualness", type=float, default=MIN_Z, dest="min_z",
                   help=f"list pairs this many deviations above their part's usual scores (default {MIN_Z:g})")
    p.add_argument("--min-score", type=float, default=MIN_SCORE,
                   help=f"... that score at least this (0 to 1, default {MIN_SCORE:g})")
    args = p.parse_args(argv)
    try:
        assignment, course, answers = load_answers(args.outs)
        result = run(answers, course, min_z=args.min_z, min_score=args.min_score)
    except (ValueError, KeyError, TypeError) as exc:
        print(f"attngrade.similarity: {exc}", file=sys.stderr)
        return 2
    html_path, csv_path = write_report(Path(args.out), result, f"Similar answers: {assignment}")
    print(f"{len(answers)} students: {_said(result)}")
    print(f"report: {html_path}\npairs: {csv_path}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
