"""What the class missed: per part and per kind of hidden case, the pass rate, the common
failures and the points lost (``OUT/statistics.csv``, ``statistics.png`` and the summary's
section *What the class missed*), opening with the three ideas the class missed most.

For the instructor only; nothing here reaches a student, and nothing changes a point.

**What one part's result says.** The check stage stops at a part's first failing hidden case
(:func:`attngrade.spec.check_outputs`) and names it in the result's detail: its kind
(``Case.kind``) and the property that failed. So, for one student and one part:

* the part passed: every kind of case passed;
* it failed at case *i*: the kind of case *i* failed; a kind whose cases all come before *i*
  passed; the other kinds were *not reached* (nothing is known of them);
* it failed before any case was checked (a time limit, a crash, a function not defined, a
  reference implementation called): the failure belongs to :data:`WHOLE_PART`, and no kind
  was reached.

A kind's pass rate is over the students whose answers reached it. The points a part lost are
counted against the kind of its first failing case (or :data:`WHOLE_PART`); the three ideas the
class missed most are the kinds that lost the most points.

**The failure messages** are properties only, from a fixed vocabulary (:func:`failure_property`):
shape, dtype, values beyond the tolerance (and by how much), NaN or inf, memory, time, the name
of the exception raised. Never an input, an expected value or a check's own message.

**One class over several hosts.** Every run writes ``OUT/statistics.json``: each student's
result per part (points, verdict, detail), what the statistics are computed from.
``python -m attngrade.merge`` rebuilds the results of the whole class from the hosts' files
(:func:`results_from`), so the merged statistics are computed exactly as one host's.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import math
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .grader import PartResult, Result
from .names import csv_cell
from .running import FLAG_WORDS

__all__ = [
    "WHOLE_PART",
    "NOT_COUNTED",
    "KindStats",
    "failed_case",
    "failure_property",
    "class_statistics",
    "missed_most",
    "idea_text",
    "write_statistics",
    "records",
    "results_from",
    "CSV_HEADER",
]

#: The "kind" of a failure that no hidden case was reached for.
WHOLE_PART = "the part as a whole (no hidden case was checked)"
#: The kind of cases whose hidden test gives none.
NO_KIND = "(cases without a kind)"
#: Statuses of submissions that were not graded: they are left out of the statistics.
NOT_COUNTED = ("missing", "malformed", "ambiguous")
#: How many failure messages a row lists.
TOP_FAILURES = 3

_PART_FAILURES = {  # checking.py's worker failures (``kind: detail``) as properties
    "timeout": "time limit",
    "memory": "memory limit of the worker",
    "output": "too much output",
    "result_size": "result too large",
    "died": "the process ended (crash or exit)",
    "protocol": "interfered with the grader",
    "boot_failed": "the grader could not start",
}

_ZEROED = {  # running.py's static evidence that zeroes a part (``FLAG_WORDS``: cell ...)
    FLAG_WORDS["reference"]: "no credit: calls a reference implementation",
    FLAG_WORDS["forbidden"]: "no credit: a construct answers may not use",
    FLAG_WORDS["course"]: "no credit: reads the course's files",
}


def failed_case(cases: list, detail: str) -> int | None:
    """The index of the hidden case that a part's failure ``detail`` names
    (``"<label>: ..."`` or ``"case <i>: ..."``, :func:`attngrade.spec.check_outputs`), or None."""
    detail = detail or ""
    m = re.match(r"case (\d+): ", detail)
    if m and int(m.group(1)) < len(cases) and not cases[int(m.group(1))].label:
        return int(m.group(1))
    labelled = sorted(((i, c.label) for i, c in enumerate(cases) if c.label), key=lambda ic: -len(ic[1]))
    for index, label in labelled:
        if detail.startswith(label + ": "):
            return index
    return None


def _values_property(message: str) -> str:
    """``assert_close``'s message as its size only: just beyond the tolerance, or far."""
    err = re.search(r"max abs err ([0-9.eE+-]+|inf|nan)", message)
    tol = re.search(r"rtol=([0-9.eE+-]+)", message)
    try:
        ratio = float(err.group(1)) / float(tol.group(1))
    except (AttributeError, ValueError, ZeroDivisionError):
        return "wrong values"
    if math.isfinite(ratio) and ratio <= 10:
        return "values just beyond the tolerance (up to 10 times it)"
    return "wrong values (more than 10 times the tolerance)"


def failure_property(detail: str) -> str:
    """What failed, in the fixed vocabulary of the module's docstring, from a part's detail."""
    detail = detail or ""
    head, _, what = detail.partition(": ")
    if head in _PART_FAILURES:
        return _PART_FAILURES[head]
    if head in _ZEROED:
        return _ZEROED[head]
    if detail.startswith("failed ("):  # the function is not defined, or its cell raised
        raised = re.search(r"its cell raised (\w+)", detail)
        return f"its cell raised {raised.group(1)}" if raised else "the function is not defined"
    if detail.startswith("grader error"):
        return "not graded (a grader error)"
    return _case_property(what)


def _case_property(what: str) -> str:
    """The property of one failing case's reason (the part after the case's name)."""
    if what.startswith("raised "):
        name = what[len("raised "):].strip()
        if name == "MemoryError":
            return "memory (raised MemoryError)"
        return f"raised {name}" if name.isidentifier() else "raised an exception"
    rules = [
        (what.startswith("allocated "), "memory over the case's budget"),
        (what == "changed its inputs", "changed its inputs"),
        (what == "warned", "warned"),
        ("while checking" in what, "not an array or number"),
        (what.startswith("returned None"), "returned None"),
        ("NaN" in what or " inf" in what or "not finite" in what, "NaN or inf"),
        ("dtype" in what, "dtype"),
        ("shape" in what, "shape"),
        ("entries differ" in what, None),
        ("tuple" in what or what.startswith("expected "), "not the tuple asked for"),
    ]
    for hit, prop in rules:
        if hit:
            return prop or _values_property(what)
    return "wrong values"


@dataclass
class _Verdict:
    """One student's part, read for the statistics."""

    passed: bool
    lost: float
    case: int | None  # the first failing case, where one was named
    prop: str = ""


def _verdict(cases: list, pr: PartResult) -> _Verdict:
    lost = max(0.0, float(pr.max_score) - float(pr.score))
    if pr.passed:
        return _Verdict(True, lost, None)
    return _Verdict(False, lost, failed_case(cases, pr.detail), failure_property(pr.detail))


@dataclass
class KindStats:
    """One row of the statistics: a part (``kind`` empty) or a kind of case in a part."""

    part: int  # 1-based, in notebook order
    grade_id: str
    function: str
    kind: str
    students: int = 0  # graded students whose answers reached it
    passed: int = 0
    failed: int = 0
    lost: float = 0.0
    failures: Counter = field(default_factory=Counter)

    @property
    def rate(self) -> float | None:
        decided = self.passed + self.failed
        return self.passed / decided if decided else None

    def common(self, n: int = TOP_FAILURES) -> list[tuple[str, int]]:
        return sorted(self.failures.items(), key=lambda kv: (-kv[1], kv[0]))[:n]


def _kind_order(cases: list) -> tuple[list[str], dict[str, int]]:
    """The kinds of a part's cases in the order they first come, and the last case of each."""
    last: dict[str, int] = {}
    for i, case in enumerate(cases):
        last[case.kind or NO_KIND] = i
    return list(dict.fromkeys(c.kind or NO_KIND for c in cases)), last


def _part_rows(index: int, ps, results: list[Result]) -> list[KindStats]:
    kinds, last = _kind_order(ps.cases)
    row = KindStats(index, ps.grade_id, ps.function, "")
    rows = {k: KindStats(index, ps.grade_id, ps.function, k) for k in [*kinds, WHOLE_PART]}
    for r in results:
        pr = r.parts.get(ps.grade_id)
        if pr is None:
            continue
        v = _verdict(ps.cases, pr)
        row.students += 1
        row.passed += v.passed
        row.failed += not v.passed
        row.lost += v.lost
        if v.passed:
            for k in kinds:
                rows[k].students += 1
                rows[k].passed += 1
            continue
        row.failures[v.prop] += 1
        at = (ps.cases[v.case].kind or NO_KIND) if v.case is not None else WHOLE_PART
        for k in kinds:
            if k != at and v.case is not None and last[k] < v.case:
                rows[k].students += 1
                rows[k].passed += 1
        rows[at].students += 1
        rows[at].failed += 1
        rows[at].lost += v.lost
        rows[at].failures[v.prop] += 1
    if not rows[WHOLE_PART].students:
        del rows[WHOLE_PART]
    return [row, *rows.values()]


def class_statistics(spec, results: list[Result]) -> list[KindStats]:
    """Per part a row (``kind`` empty), then a row per kind of its hidden cases in their order
    (and :data:`WHOLE_PART` where a failure reached no case), over the graded submissions."""
    graded = [r for r in results if r.status not in NOT_COUNTED]
    return [row for i, ps in enumerate(spec.parts, 1) for row in _part_rows(i, ps, graded)]


def missed_most(rows: list[KindStats], n: int = 3) -> list[KindStats]:
    """The kinds that lost the class the most points (then the most students), at most ``n``."""
    kinds = [r for r in rows if r.kind and r.failed]
    return sorted(kinds, key=lambda r: (-r.lost, -r.failed, r.part))[:n]


def _percent(rate: float | None) -> str:
    return "—" if rate is None else f"{100 * rate:.0f} %"


def _failures_text(row: KindStats) -> str:
    return ", ".join(f"{prop} ({count})" for prop, count in row.common())


def _idea(row: KindStats, part_points: float) -> tuple[str, str]:
    """One idea the class missed: what (the kind of case and its part) and how it went."""
    where = f"part {row.part}, {row.function}"
    head = (f"{row.function} got to none of its hidden cases ({where})" if row.kind == WHOLE_PART
            else f"{row.kind} ({where})")
    reached = "" if row.kind == WHOLE_PART else " who got that far"
    return head, (
        f"{row.failed} of the {row.students} students{reached} failed it, losing {row.lost:g} points "
        f"in all ({part_points:g} each); what failed: {_failures_text(row)}"
    )


def idea_text(row: KindStats, part_points: float) -> str:
    """One idea the class missed, as a teacher reads it (plain text)."""
    head, rest = _idea(row, part_points)
    return f"{head}: {rest}"


CSV_HEADER = ["part", "grade_id", "function", "kind", "students", "passed", "failed", "not_reached",
              "pass_rate", "points_lost", "common_failures"]


def write_csv(path: Path, rows: list[KindStats], graded: dict[str, int]) -> Path:
    """``statistics.csv``: a part's row (``kind`` empty) and then its kinds' rows; ``graded``:
    the graded students per part, of whom ``not_reached`` never got to the kind."""
    with open(path, "w", newline="", encoding="utf-8-sig") as fh:
        w = csv.writer(fh)
        w.writerow(CSV_HEADER)
        for r in rows:
            rate = "" if r.rate is None else f"{r.rate:.4f}"
            w.writerow([
                r.part, csv_cell(r.grade_id), csv_cell(r.function), csv_cell(r.kind), r.students, r.passed,
                r.failed, graded[r.grade_id] - r.students, rate, f"{r.lost:g}",
                csv_cell("; ".join(f"{p}: {c}" for p, c in r.common(len(r.failures)))),
            ])
    return Path(path)


def plot_png(rows: list[KindStats], most: int = 12) -> bytes | None:
    """The kinds that lost points, most first (at most ``most``): points lost and pass rate."""
    failed = sorted((r for r in rows if r.kind and r.failed), key=lambda r: (-r.lost, -r.failed, r.part))[:most]
    if not failed:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # a kind is plain text: a "$" must not start matplotlib's mathtext
    labels = [f"P{r.part} {r.kind if r.kind != WHOLE_PART else 'no case reached'}".replace("$", r"\$")
              for r in failed][::-1]
    colours = [plt.get_cmap("tab10")((r.part - 1) % 10) for r in failed][::-1]
    fig, (lost, rate) = plt.subplots(1, 2, figsize=(10, 0.9 + 0.34 * len(failed)), dpi=100, sharey=True,
                                     gridspec_kw={"width_ratios": [3, 2]})
    lost.barh(labels, [r.lost for r in failed][::-1], color=colours)
    lost.set_xlabel("points lost by the class", fontsize=8)
    rate.barh(labels, [100 * (r.rate or 0.0) for r in failed][::-1], color=colours)
    rate.set_xlim(0, 100)
    rate.set_xlabel("pass rate of the students who got that far (%)", fontsize=8)
    for ax in (lost, rate):
        ax.tick_params(labelsize=7)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def _e(text) -> str:
    import html

    from .names import shown

    return html.escape(shown(str(text)))


def _table_html(rows: list[KindStats], graded: dict[str, int]) -> list[str]:
    out = ["<table class='statistics'><tr><th>part</th><th>kind of case</th><th>passed / got that far</th>"
           "<th>pass rate</th><th>not reached</th><th>points lost</th><th>what failed most often</th></tr>"]
    for r in rows:
        name = f"<b>{r.part}. <code>{_e(r.function)}</code> (all its cases)</b>" if not r.kind else _e(r.kind)
        out.append(
            f"<tr><td>{r.part}</td><td>{name}</td><td>{r.passed} / {r.students}</td><td>{_percent(r.rate)}</td>"
            f"<td>{graded[r.grade_id] - r.students if r.kind else ''}</td><td>{r.lost:g}</td>"
            f"<td>{_e(_failures_text(r))}</td></tr>"
        )
    out.append("</table>")
    return out


def section_html(spec, rows: list[KindStats], graded: dict[str, int], png: bytes | None) -> list[str]:
    """The summary's section: the three ideas missed most, the plot, the table per part and kind."""
    out = ["<h2 id='missed'>What the class missed</h2>"]
    if not any(graded.values()):
        return out + ["<p>No graded submission.</p>"]
    top = missed_most(rows)
    if top:
        points = {ps.grade_id: ps.points for ps in spec.parts}
        items = "".join(
            "<li><b>{}</b>: {}</li>".format(*map(_e, _idea(r, points[r.grade_id]))) for r in top
        )
        out.append(f"<p>The ideas that cost the class the most points:</p><ol class='missed'>{items}</ol>")
    else:
        out.append("<p>Every graded submission passed every hidden case.</p>")
    if png:
        out.append(f"<img alt='points lost and pass rate per kind of case' "
                   f"src='data:image/png;base64,{base64.b64encode(png).decode()}'>")
    out.append(
        "<p><small>A part stops at its first failing hidden case: its points count against that case's kind, "
        "the kinds before it passed, the kinds after it were not reached. A kind's pass rate is over the "
        "students who got that far. The same figures: <code>statistics.csv</code>.</small></p>"
    )
    return out + _table_html(rows, graded)


def records(results: list[Result]) -> list[dict]:
    """What the statistics are computed from, per student: status and each part's result."""
    return [
        {"student": r.student, "status": r.status, "parts": {g: asdict(p) for g, p in r.parts.items()}}
        for r in sorted(results, key=lambda r: r.student)
    ]


def results_from(data: list[dict]) -> list[Result]:
    """The results :func:`records` wrote (status and parts: what the class reports count)."""
    return [
        Result(d["student"], d["status"], parts={g: PartResult(**p) for g, p in d["parts"].items()})
        for d in data
    ]


def write_statistics(folder: Path, spec, results: list[Result]) -> tuple[dict, list[str]]:
    """``statistics.csv``, ``statistics.png`` and ``statistics.json`` in ``folder``; returns the
    figures for ``summary.json`` and the summary's section (:func:`section_html`)."""
    folder = Path(folder)
    rows = class_statistics(spec, results)
    graded = {ps.grade_id: next(r.students for r in rows if r.grade_id == ps.grade_id and not r.kind)
              for ps in spec.parts}
    write_csv(folder / "statistics.csv", rows, graded)
    png = plot_png(rows)
    if png:
        (folder / "statistics.png").write_bytes(png)
    else:  # nothing was missed: no plot, and none left from an earlier run
        (folder / "statistics.png").unlink(missing_ok=True)
    data = {"assignment": spec.name, "results": records(results)}
    tmp = folder / "statistics.json.tmp"
    tmp.write_text(json.dumps(data, indent=0, sort_keys=True), encoding="utf-8")
    tmp.replace(folder / "statistics.json")
    points = {ps.grade_id: ps.points for ps in spec.parts}
    figures = {
        "csv": "statistics.csv",
        "missed_most": [
            {"part": r.part, "grade_id": r.grade_id, "function": r.function, "kind": r.kind, "failed": r.failed,
             "students": r.students, "points_lost": r.lost, "failures": dict(r.common(len(r.failures))),
             "text": idea_text(r, points[r.grade_id])}
            for r in missed_most(rows)
        ],
    }
    return figures, section_html(spec, rows, graded, png)
