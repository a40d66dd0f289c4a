"""What the instructor and the students read: grades CSV, feedback pages, summary report.

Student feedback shows the task text of the released notebook (its maths rendered by a local
copy of the book's MathJax), the file graded and the files ignored, and per part pass/fail and
the points; for a failed part, the hidden case that failed (its number and *kind*, ``Case.kind``:
"float16 input"), what failed and the hint, in the visible checks' own words, the visible check
to run, how the part's points are given (all or nothing) and the student's own code
(:mod:`attngrade.feedback`). It never shows hidden tests, their inputs, expected values, case
labels or tracebacks (those stay in the instructor's log), unless the assignment reveals the
failing inputs after a time that has passed when the page is written (:mod:`attngrade.reveal`).
"""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import re
import shutil
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

from . import feedback
from .grader import STATUSES, AssignmentSpec, Result
from .leaderboard import board, board_html
from .names import csv_cell, shown
from .notebooks import cell_grade_id
from .submissions import _norm  # one notion of "unchanged" for the grader and the report
from .texmath import NOTE, Maths, book_macros, formulas_in, replace_formulas, typeset

__all__ = [
    "csv_header",
    "csv_row",
    "summary_row",
    "write_csv",
    "write_feedback",
    "write_summary",
    "write_log",
    "STATUS_TEXT",
    "copy_mathjax",
    "code_html",
    "answered_written",
]

STATUS_TEXT = {
    "graded": "graded",
    "flagged": "graded, and flagged for your instructor to review",
    "resource_limit": "graded; some code exceeded a resource limit (memory, processes or output)",
    "timed_out": "graded; some code ran past its time limit",
    "crashed": "graded; some code ended the Python process",
    "malformed": "not graded: the notebook file could not be read as this assignment's",
    "ambiguous": "not graded yet: your instructor must decide which of your files to grade",
    "missing": "not graded: no notebook was found",
}

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:60rem;margin:2rem auto;
padding:0 1rem;line-height:1.5;color:#1d1d1f}
table{border-collapse:collapse;margin:1rem 0}td,th{border:1px solid #ccc;padding:.3rem .6rem;text-align:left}
th{background:#f3f3f3}.pass{color:#176b2c;font-weight:600}.fail{color:#a0181c;font-weight:600}
.part{border:1px solid #ddd;border-radius:6px;padding:.5rem 1rem;margin:1rem 0}
.result{background:#f6f6f6;border-radius:4px;padding:.4rem .8rem}.task{color:#333}
.status-graded{color:#176b2c}.status-other{color:#a0181c}code{background:#f3f3f3;padding:0 .2rem}
pre.code{background:#f6f8fa;border:1px solid #ddd;border-radius:4px;padding:.5rem;overflow-x:auto;
font-size:.85rem;white-space:pre;tab-size:4}.note{background:#fff8e1;border-left:4px solid #e0b000;
padding:.3rem .8rem}.case{border-left:4px solid #a0181c;padding:.1rem .8rem;margin:.4rem 0 .8rem}
.case p{margin:.35rem 0}
pre.written{white-space:pre-wrap;background:#fbfbf8;border:1px solid #ddd;padding:.5rem;
font-family:inherit}img.attachment{max-width:100%;border:1px solid #ddd;margin:.3rem 0}
"""


def _markdown(text: str, maths: Maths) -> str:
    """Markdown to HTML, each formula (``$...$``, ``$$...$$``) typeset by ``maths`` or kept as TeX."""
    kept: list[str] = []

    def keep(source):
        kept.append(source)
        return f"MATHSPAN{len(kept) - 1}X"

    protected = replace_formulas(text, keep)
    try:
        import mistune

        rendered = mistune.create_markdown(escape=True, plugins=["table", "strikethrough"])(protected)
    except Exception:  # noqa: BLE001 - plain text is a fine fallback
        rendered = "<pre>" + html.escape(protected) + "</pre>"
    return re.sub(r"MATHSPAN(\d+)X", lambda m: maths.formula(kept[int(m.group(1))]), rendered)


def _mathjax_head(prefix: str) -> str:
    """The book's MathJax (same macros), loaded from a local copy beside the page, for formulas
    left as TeX; once it runs, the page's note on TeX (:data:`attngrade.texmath.NOTE`) goes."""
    macros = json.dumps(book_macros())
    return (
        f"<script>window.MathJax={{tex:{{inlineMath:[['$','$'],['\\\\(','\\\\)']],macros:{macros}}},"
        "startup:{pageReady(){const n=document.getElementById('texnote');if(n)n.remove();"
        "return MathJax.startup.defaultPageReady();}}};</script>"
        f"<script defer src='{prefix}mathjax/tex-chtml.js'></script>"
    )


def copy_mathjax(folder: Path) -> bool:
    """Copy the book's MathJax (``book/_static/mathjax``) into ``folder`` once; False if absent."""
    source = Path(__file__).resolve().parents[2] / "book" / "_static" / "mathjax"
    target = folder / "mathjax"
    if (target / "tex-chtml.js").is_file():
        return True
    if not (source / "tex-chtml.js").is_file():
        return False
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copytree(source, target, dirs_exist_ok=True)
    return True


def answered_written(spec: AssignmentSpec, result: Result) -> dict[str, bool]:
    """Per written (manually graded) part: whether the student wrote something of their own."""
    release = {cell_grade_id(c): c.source for c in spec.release.cells}
    written = result.written or {}
    return {gid: gid in written and _norm(written[gid]) != _norm(release.get(gid)) for gid in spec.manual}


def _answer_cell_of(spec: AssignmentSpec, gid: str) -> str | None:
    """The answer cell a test cell grades: the last code answer cell before it in the release."""
    last = None
    for cell in spec.release.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell_grade_id(cell) == gid:
            return last
        if cell.cell_type == "code" and meta.get("solution") and not meta.get("grade"):
            last = cell_grade_id(cell)
    return None


def _late(result: Result):
    return getattr(result, "lateness", None)


def _late_text(result: Result) -> str:
    lateness = _late(result)
    if lateness is not None:
        return lateness.text
    return "marked late by the LMS" if getattr(result, "lms_late", False) else ""


def _penalty(result: Result) -> float:
    return float(getattr(result, "late_penalty", 0.0) or 0.0)


def _manual(result: Result) -> dict | None:
    return getattr(result, "manual", None)


def _totals(spec: AssignmentSpec, result: Result) -> tuple[float | None, float, float]:
    """``(manual, pending, total)``: from the gradebook when it was written, else from the answers."""
    gbk = _manual(result)
    if gbk is not None:
        return gbk["manual"], gbk["pending"], gbk["total"] - _penalty(result)
    pending = (
        sum(spec.manual[g] for g, yes in answered_written(spec, result).items() if yes)
        if result.notebook is not None or result.written
        else 0.0
    )
    return None, float(pending), result.score - _penalty(result)


def csv_header(spec: AssignmentSpec) -> list[str]:
    return [
        "student", "status", "score", "max_score", "late_penalty", "manual", "manual_pending", "total",
        "total_max", *[p.grade_id for p in spec.parts], "reason", "notes", "file", "ignored_files",
        "timestamp", "late", "seconds",
    ]


def csv_row(spec: AssignmentSpec, r: Result) -> list[str]:
    """One student's row of ``grades.csv``: every text a student controls passes :func:`csv_cell`."""
    manual, pending, total = _totals(spec, r)
    return [
        csv_cell(r.student),
        r.status,
        f"{r.score:g}",
        f"{spec.max_auto:g}",
        f"{_penalty(r):g}",
        "" if manual is None else f"{manual:g}",
        f"{pending:g}",
        f"{total:g}",
        f"{spec.max_auto + sum(spec.manual.values()):g}",
        *[f"{r.parts[p.grade_id].score:g}" if p.grade_id in r.parts else "" for p in spec.parts],
        csv_cell(r.reason),
        csv_cell("; ".join(r.notes)),
        csv_cell(r.file),
        csv_cell("; ".join(f"{f} ({why})" for f, why in getattr(r, "ignored", []))),
        csv_cell(r.timestamp or ""),
        csv_cell(_late_text(r)),
        f"{r.seconds:.2f}",
    ]


def write_csv(path: Path, spec: AssignmentSpec, rows: list[list[str]]) -> None:
    """``grades.csv``: one row per student, as :func:`csv_row` made it.

    UTF-8 with a byte-order mark: Excel opens a CSV without one in the system's ANSI code page
    (``Anna MÃ¼ller``) and with one as UTF-8. Read it back as ``utf-8-sig``
    (:func:`attngrade.export.read_grades`): read as plain UTF-8, the first header is
    ``\ufeffstudent``. The mark goes before the header, so the CSV-injection rule
    (:func:`attngrade.names.csv_cell`) is untouched.
    """
    with open(path, "w", newline="", encoding="utf-8-sig", errors="backslashreplace") as fh:
        w = csv.writer(fh)
        w.writerow(csv_header(spec))
        w.writerows(rows)


def _task_sections(spec: AssignmentSpec) -> list[tuple[str, list[str]]]:
    """The release's markdown, grouped by the test cell that follows it ("" for the rest)."""
    sections, pending = [], []
    part_ids = {p.grade_id for p in spec.parts}
    for cell in spec.release.cells:
        gid = cell_grade_id(cell)
        if cell.cell_type == "markdown" and not cell.metadata.get("nbgrader", {}).get("solution"):
            pending.append(cell.source)
        elif gid in part_ids or gid in spec.manual:
            sections.append((gid, pending))
            pending = []
    sections.append(("", pending))
    return sections


def _part_message(spec: AssignmentSpec, gid: str, pr) -> str:
    """The part's result in a line: "passed", or the hidden case that failed and its kind
    (:func:`attngrade.feedback.short_text`), or why no case was checked."""
    if pr is None:
        return "not graded"
    if pr.passed:
        return pr.message
    return feedback.short_text(feedback.case_feedback(spec.part(gid), pr), pr.message)


#: The most of a student's code a feedback page shows per part.
MAX_CODE_CHARS = 20000


def write_feedback(folder: Path, spec: AssignmentSpec, result: Result, now: datetime | None = None) -> Path:
    """``folder/<student>.html``: the file graded, the files ignored, lateness, and per part the
    result, the failed hidden case (:func:`attngrade.feedback.part_html`) and the student's own
    code, beside the task text; ``now`` (default: the time of writing) decides whether the
    assignment's reveal setting shows the failing inputs (:mod:`attngrade.reveal`)."""
    folder.mkdir(parents=True, exist_ok=True)
    now = now or datetime.now(timezone.utc)
    sections = _task_sections(spec)
    maths = typeset(formulas_in(t for _, texts in sections for t in texts))
    out = _feedback_head(folder, spec, result, maths, sections)
    out.append("<h2>Parts</h2><table><tr><th>part</th><th>function</th><th>points</th><th>result</th></tr>")
    answered = answered_written(spec, result)
    for i, ps in enumerate(spec.parts, 1):
        pr = result.parts.get(ps.grade_id)
        cls = "pass" if pr and pr.passed else "fail"
        out.append(
            f"<tr><td>{i}</td><td><code>{_e(ps.function)}</code></td>"
            f"<td>{pr.score if pr else 0:g} / {ps.points:g}</td><td class='{cls}'>"
            f"{_e(_part_message(spec, ps.grade_id, pr))}</td></tr>"
        )
    for gid, pts in spec.manual.items():
        what = "graded by your instructor" if answered[gid] else "not answered: 0 points"
        out.append(f"<tr><td>written</td><td>{_e(gid)}</td><td>— / {pts:g}</td><td>{what}</td></tr>")
    out.append("</table><h2>The tasks</h2>")
    out.extend(_feedback_tasks(spec, result, answered, maths, sections, now))
    out.append(f"<p><small>Generated {_e(time.strftime('%Y-%m-%d %H:%M'))}.</small></p></body></html>")
    path = folder / f"{result.student}.html"
    path.write_text("\n".join(out), encoding="utf-8", errors="backslashreplace")
    return path


def _e(text) -> str:
    """HTML-escaped printable text (names that are not UTF-8 included)."""
    return html.escape(shown(str(text)))


def _maths_head(folder: Path, maths: Maths, sections) -> tuple[str, str]:
    """``(head, note)``: the typeset formulas' stylesheet, and where a formula is left as TeX the
    local MathJax (when copied beside the page) and the note that says so."""
    left = not maths.complete(formulas_in(t for _, texts in sections for t in texts))
    head = f"<style>{maths.css}</style>" if maths.css else ""
    if left and (folder / "mathjax" / "tex-chtml.js").is_file():
        head += _mathjax_head("")
    return head, (f"<p class='note' id='texnote'>{_e(NOTE)}</p>" if left else "")


def _feedback_head(folder: Path, spec: AssignmentSpec, result: Result, maths: Maths, sections) -> list[str]:
    e = _e
    head, note = _maths_head(folder, maths, sections)
    status_class = "status-graded" if result.status == "graded" else "status-other"
    out = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>Feedback: {e(spec.name)}</title>"
        f"<style>{_CSS}</style>{head}</head><body>{note}",
        f"<h1>Feedback on {e(spec.name)} ({e(spec.notebook)}.ipynb)</h1>",
        f"<p>Student: <b>{e(result.student)}</b></p>",
        f"<p>Status: <b class='{status_class}'>{e(STATUS_TEXT.get(result.status, result.status))}</b></p>",
    ]
    when = f", submitted {e(result.timestamp)}" if result.timestamp else ""
    evidence = getattr(result, "evidence", "")
    out.append(
        f"<p>File graded: <code>{e(result.file or '(none)')}</code>{when}"
        + (f" (time from {e(evidence)})" if when and evidence else "") + "</p>"
    )
    ignored = getattr(result, "ignored", [])
    if ignored:
        items = "".join(f"<li><code>{e(f)}</code> ({e(why)})</li>" for f, why in ignored)
        out.append(f"<p>Files not graded:</p><ul>{items}</ul>")
    lateness, penalty = _late(result), _penalty(result)
    if lateness is not None:
        out.append(f"<p>Deadline: {e(lateness.text)}</p>")
    elif getattr(result, "lms_late", False):
        out.append("<p>The course's LMS marked this submission late.</p>")
    score = f"<p>Autograded score: <b>{result.score:g} / {spec.max_auto:g}</b>"
    if penalty:
        score += f", after the late penalty <b>{result.score - penalty:g}</b>"
    pending = sum(spec.manual[g] for g, yes in answered_written(spec, result).items() if yes)
    if pending:
        score += f" (and up to {pending:g} points for written answers, graded by your instructor)"
    out.append(score + "</p>")
    if result.structural and result.notebook is not None:
        out.append(
            "<p>Some cells of your notebook did not match the released notebook; your answers were "
            "graded in a fresh copy of the released notebook, so changes to test cells, metadata "
            "or points have no effect.</p>"
        )
    return out


def code_html(source: str) -> str:
    """A student's code as a ``<pre class='code'>`` block: its own line breaks and indentation
    (tabs as 4 spaces), every other control character and undecodable byte shown escaped
    (:func:`attngrade.names.shown`, line by line), highlighted as Python when Pygments is
    installed, and at most :data:`MAX_CODE_CHARS` characters, with a note of what is left out."""
    clipped = source[:MAX_CODE_CHARS]
    text = "\n".join(shown(line.expandtabs(4)) for line in re.split(r"\r\n|\r|\n", clipped))
    try:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import PythonLexer

        body = highlight(text, PythonLexer(stripnl=False, ensurenl=False), HtmlFormatter(nowrap=True, noclasses=True))
    except ImportError:
        body = html.escape(text)
    more = len(source) - len(clipped)
    tail = f"<p><small>({more} more characters not shown)</small></p>" if more else ""
    return f"<pre class='code'>{body}</pre>{tail}"


def _feedback_tasks(spec: AssignmentSpec, result: Result, answered: dict, maths: Maths, sections,
                    now: datetime) -> list[str]:
    """The release's task text with each part's result and, where it failed, what failed
    (:func:`attngrade.feedback.part_html`) and the student's code."""
    out = []
    index = {p.grade_id: i for i, p in enumerate(spec.parts, 1)}
    cells = result.notebook.cells if result.notebook is not None else []
    sources = {cell_grade_id(c): c.source for c in cells}
    for gid, texts in sections:
        out.extend(f"<div class='task'>{_markdown(text, maths)}</div>" for text in texts)
        if gid in index:
            pr = result.parts.get(gid)
            cls = "pass" if pr and pr.passed else "fail"
            out.append(
                f"<div class='result'>Part {index[gid]} (<code>{_e(spec.part(gid).function)}</code>): "
                f"<span class='{cls}'>{_e(_part_message(spec, gid, pr))}</span>, "
                f"{pr.score if pr else 0:g} / {spec.part(gid).points:g} points</div>"
            )
            if pr is not None and not pr.passed:
                shown_inputs = _revealed(spec, gid, pr, index[gid], now)
                out.extend(feedback.part_html(spec, spec.part(gid), pr, shown_inputs))
            cell = _answer_cell_of(spec, gid)
            if pr is not None and not pr.passed and cell in sources:
                out.append(
                    f"<details open><summary>Your code for part {index[gid]}</summary>"
                    f"{code_html(sources[cell])}</details>"
                )
        elif gid:
            text = (
                f"graded by your instructor ({spec.manual[gid]:g} points)"
                if answered[gid]
                else f"not answered: 0 of {spec.manual[gid]:g} points"
            )
            out.append(f"<div class='result'>Written answer: {text}</div>")
            if answered[gid]:
                out.extend(_written_html(next((c for c in cells if cell_grade_id(c) == gid), None)))
    return out


def _revealed(spec: AssignmentSpec, gid: str, pr, number: int, now: datetime) -> str:
    """The failing hidden case's inputs where the assignment reveals them at ``now``, else ""."""
    from .reveal import inputs_html, reveal_policy
    from .statistics import failed_case

    course = getattr(spec, "course", None)
    setting = reveal_policy(getattr(course, "config", None), spec.name)
    if not setting.shown(now):
        return ""
    ps = spec.part(gid)
    index = failed_case(ps.cases, pr.detail)
    if index is None:
        return ""
    return inputs_html(ps.cases[index], ps.function, f"part{number}_case{index + 1}.npz", setting)


_IMAGES = ("image/png", "image/jpeg", "image/gif")


def _written_html(cell) -> list[str]:
    """What the student wrote for a written part, as text (never as HTML of theirs), and the
    images attached to it (a photo of a handwritten proof), so the page shows what is graded."""
    if cell is None:
        return []
    out = [f"<details open><summary>What you wrote</summary><pre class='written'>{_e(cell.get('source', ''))}</pre>"]
    for name, bundle in sorted((cell.get("attachments") or {}).items()):
        for mime in _IMAGES:
            data = (bundle or {}).get(mime) if isinstance(bundle, dict) else None
            if isinstance(data, str) and re.fullmatch(r"[A-Za-z0-9+/=\s]*", data):
                out.append(f"<img class='attachment' alt='{_e(name)}' src='data:{mime};base64,{''.join(data.split())}'>")
                break
    out.append("</details>")
    return out


def write_log(folder: Path, result: Result) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{result.student}.log"
    lines = [
        f"student: {result.student}",
        f"file: {result.file}",
        f"status: {result.status}",
        f"reason: {result.reason}",
        f"flags: {result.flags}",
        f"notes: {result.notes}",
        f"cell errors: {result.cell_errors}",
        f"seconds: {result.seconds:.2f}",
        "",
    ]
    for gid, pr in result.parts.items():
        lines.append(f"{gid}: {pr.score:g}/{pr.max_score:g} {pr.detail}")
    lines += [""] + result.log
    path.write_text("\n".join(lines), encoding="utf-8", errors="backslashreplace")
    return path


def _plot(spec: AssignmentSpec, results: list[Result]) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    graded = [r for r in results if r.status not in ("missing", "malformed")]
    n = len(spec.parts)
    fig, axes = plt.subplots(1, n + 1, figsize=(2.6 * (n + 1), 2.6), dpi=100)
    for ax, ps in zip(axes, spec.parts):
        scores = Counter(r.parts[ps.grade_id].score for r in graded if ps.grade_id in r.parts)
        xs = sorted({0.0, ps.points} | set(scores))
        ax.bar(
            [f"{x:g}" for x in xs],
            [scores.get(x, 0) for x in xs],
            color=["#c44" if x == 0 else "#4a4" for x in xs],
        )
        ax.set_title(ps.function, fontsize=8)
        ax.set_xlabel("points", fontsize=8)
        ax.tick_params(labelsize=7)
    totals = [r.score for r in results]
    ax = axes[-1]
    ax.hist(totals, bins=max(int(spec.max_auto) + 1, 1), range=(-0.5, spec.max_auto + 0.5), color="#46a")
    ax.set_title("total (all submissions)", fontsize=8)
    ax.set_xlabel("points", fontsize=8)
    ax.tick_params(labelsize=7)
    axes[0].set_ylabel("submissions", fontsize=8)
    from matplotlib.ticker import MaxNLocator

    for ax in axes:
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def summary_row(spec: AssignmentSpec, r: Result) -> dict:
    """One student's entry in ``summary.json`` (and the summary page's table)."""
    manual, pending, total = _totals(spec, r)
    return {
        "student": r.student,
        "status": r.status,
        "score": r.score,
        "late_penalty": _penalty(r),
        "manual": manual,
        "manual_pending": pending,
        "total": total,
        "reason": shown(r.reason),
        "parts": {g: p.score for g, p in r.parts.items()},
        "notes": [shown(n) for n in r.notes],
        "file": shown(r.file),
        "ignored": [[shown(f), shown(why)] for f, why in getattr(r, "ignored", [])],
        "timestamp": r.timestamp,
        "late": _late_text(r),
        "seconds": round(r.seconds, 3),
    }


def _part_stats(spec: AssignmentSpec, results: list[Result]) -> list[dict]:
    parts = []
    graded = [r for r in results if r.status not in ("missing", "malformed")]
    for ps in spec.parts:
        scores = [r.parts[ps.grade_id].score for r in graded if ps.grade_id in r.parts]
        dist = Counter(f"{s:g}" for s in scores)
        parts.append(
            {
                "grade_id": ps.grade_id,
                "function": ps.function,
                "points": ps.points,
                "passed": sum(1 for r in graded if r.parts.get(ps.grade_id) and r.parts[ps.grade_id].passed),
                "graded": len(scores),
                "mean": (sum(scores) / len(scores)) if scores else 0.0,
                "distribution": dict(sorted(dist.items(), key=lambda kv: float(kv[0]))),
            }
        )
    return parts


def write_summary(
    folder: Path, spec: AssignmentSpec, results: list[Result], rows: list[dict], *, isolation: dict,
    seconds: float, jobs: int, db_url: str, gradebook_errors: dict, regraded: int | None = None,
    shard: str = "", policy=None, warnings: list | None = None,
) -> tuple[Path, Path]:
    """``summary.json`` and ``summary.html`` of the class; ``rows``: :func:`summary_row` of each result."""
    counts = Counter(r.status for r in results)
    summary = {
        "assignment": spec.name,
        "notebook": spec.notebook,
        "generated": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "submissions": len(results),
        "seconds": round(seconds, 2),
        "jobs": jobs,
        "throughput_per_s": round(len(results) / seconds, 3) if seconds > 0 else None,
        "max_score": spec.max_auto,
        "manual_points": sum(spec.manual.values()),
        "statuses": {s: counts.get(s, 0) for s in STATUSES},
        "parts": _part_stats(spec, results),
        "flagged": [
            {k: row[k] for k in ("student", "status", "reason", "file")} for row in rows if row["status"] != "graded"
        ],
        "isolation": isolation,
        "gradebook": db_url.split("@")[-1] if "@" in db_url else db_url,
        "gradebook_errors": gradebook_errors,
        "graded_now": len(results) if regraded is None else regraded,
        "unchanged": 0 if regraded is None else len(results) - regraded,
        "shard": shard,
        "warnings": list(warnings or []),
        "late_policy": (
            {"deadline": str(policy.deadline), "penalty_per_day": policy.penalty_per_day,
             "max_penalty": policy.max_penalty}
            if policy is not None
            else None
        ),
        "results": rows,
        "leaderboard": board(spec, results, _board_salt(spec)),  # a speed part's times, anonymous ids
    }
    from .statistics import write_statistics

    summary["statistics"], missed = write_statistics(folder, spec, results)
    json_path = folder / "summary.json"
    json_path.write_text(json.dumps(summary, indent=1), encoding="utf-8")
    html_path = folder / "summary.html"
    page = _summary_html(spec, results, summary, policy, missed)
    html_path.write_text(page, encoding="utf-8", errors="backslashreplace")
    return html_path, json_path


def _summary_html(spec: AssignmentSpec, results: list[Result], summary: dict, policy, missed: list[str]) -> str:
    e, shard, isolation = _e, summary["shard"], summary["isolation"]
    counts = summary["statuses"]
    out = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>Grading summary: {e(spec.name)}</title>"
        f"<style>{_CSS}body{{max-width:100rem}}td,th{{font-size:.85rem}}</style></head><body>"
        f"<h1>Grading summary: {e(spec.name)}</h1>",
        f"<p>{len(results)} submissions{' (' + e(shard) + ')' if shard else ''}, "
        f"{summary['graded_now']} graded now and {summary['unchanged']} unchanged since the last run, "
        f"in {summary['seconds']:.1f} s with {summary['jobs']} parallel jobs; "
        f"isolation: <b>{e(str(isolation.get('mode')))}</b>; "
        f"gradebook: <code>{e(summary['gradebook'])}</code></p>",
        *_warnings_html(summary["warnings"]),
        "<h2>Statuses</h2><table><tr>" + "".join(f"<th>{s}</th>" for s in STATUSES) + "</tr><tr>"
        + "".join(f"<td>{counts.get(s, 0)}</td>" for s in STATUSES) + "</tr></table>",
        "<h2>Scores per part</h2><table><tr><th>part</th><th>function</th><th>points</th><th>passed</th>"
        "<th>mean</th><th>distribution (points: submissions)</th></tr>",
    ]
    for i, p in enumerate(summary["parts"], 1):
        dist = ", ".join(f"{k}: {v}" for k, v in p["distribution"].items())
        out.append(
            f"<tr><td>{i}</td><td><code>{e(p['function'])}</code></td><td>{p['points']:g}</td>"
            f"<td>{p['passed']} / {p['graded']}</td><td>{p['mean']:.2f}</td><td>{e(dist)}</td></tr>"
        )
    out.append("</table>")
    png = _plot(spec, results) if results else ""
    if png:
        out.append(f"<img alt='score distribution per part' src='data:image/png;base64,{png}'>")
    out.extend(missed)  # attngrade.statistics: what the class missed
    out.extend(_flagged_html(summary))
    if policy is not None:
        out.append(
            f"<p>Late policy: deadline {e(str(policy.deadline))}, {policy.penalty_per_day:.0%} of the "
            f"autograded score per started day late, at most {policy.max_penalty:.0%}.</p>"
        )
    out.extend(_results_html(spec, summary))
    out.extend(board_html(spec, results, _board_salt(spec)))
    out.append("<h2>Isolation</h2><table>")
    out.extend(f"<tr><td>{e(str(k))}</td><td>{e(str(v))}</td></tr>" for k, v in isolation.items())
    out.append("</table></body></html>")
    return "\n".join(out)


def _board_salt(spec: AssignmentSpec) -> str:
    """What the leaderboard's anonymous ids are drawn with: the course secret where there is one."""
    return getattr(spec, "secret", None) or spec.name


def _warnings_html(warnings: list) -> list[str]:
    """What the instructor must read before trusting the grades (times, deadlines, layouts)."""
    if not warnings:
        return []
    items = "".join(f"<li>{_e(w)}</li>" for w in warnings)
    return [f"<h2>Read first ({len(warnings)})</h2><ul class='warnings'>{items}</ul>"]


def _flagged_html(summary: dict) -> list[str]:
    e, flagged = _e, summary["flagged"]
    out = [f"<h2>Flagged and failed submissions ({len(flagged)})</h2>"]
    if flagged:
        out.append("<table><tr><th>student</th><th>status</th><th>reason</th><th>file</th></tr>")
        out.extend(
            f"<tr><td>{e(f['student'])}</td><td>{e(f['status'])}</td><td>{e(f['reason'])}</td>"
            f"<td>{e(f['file'])}</td></tr>"
            for f in flagged
        )
        out.append("</table>")
    else:
        out.append("<p>None.</p>")
    if summary["gradebook_errors"]:
        items = "".join(f"<li>{e(k)}: {e(v)}</li>" for k, v in summary["gradebook_errors"].items())
        out.append(f"<h2>Gradebook errors</h2><ul>{items}</ul>")
    return out


def _results_html(spec: AssignmentSpec, summary: dict) -> list[str]:
    e, parts = _e, summary["parts"]
    out = [
        "<h2>All submissions</h2><table><tr><th>student</th><th>status</th><th>autograded</th>"
        + "".join(f"<th>{e(p['function'])}</th>" for p in parts)
        + "<th>late</th><th>manual (pending)</th><th>total</th><th>file graded</th><th>files ignored</th>"
        "<th>seconds</th></tr>"
    ]
    for row in summary["results"]:
        manual = "" if row["manual"] is None else f"{row['manual']:g}"
        pending = f" ({row['manual_pending']:g})" if row["manual_pending"] else ""
        penalty = f" (−{row['late_penalty']:g})" if row["late_penalty"] else ""
        scores = row["parts"]
        out.append(
            f"<tr><td>{e(row['student'])}</td><td>{e(row['status'])}</td>"
            f"<td>{row['score']:g} / {spec.max_auto:g}</td>"
            + "".join(f"<td>{scores[p['grade_id']]:g}</td>" if p["grade_id"] in scores else "<td></td>" for p in parts)
            + f"<td>{e(row['late'])}{penalty}</td><td>{manual}{pending}</td><td>{row['total']:g}</td>"
            + f"<td><code>{e(row['file'])}</code><br><small>{e(row['timestamp'] or '')}</small></td>"
            + "<td>" + "<br>".join(f"<code>{e(f)}</code> ({e(w)})" for f, w in row["ignored"]) + "</td>"
            + f"<td>{row['seconds']:.2f}</td></tr>"
        )
    out.append("</table>")
    return out
