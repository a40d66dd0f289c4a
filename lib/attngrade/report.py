"""What the instructor and the students read: grades CSV, feedback pages, summary report.

Student feedback shows the task text of the released notebook and, per part, pass/fail, the
points and a short message (``failed (raised ValueError)``). It never shows hidden tests, their
inputs, expected values, case labels or tracebacks: those stay in the instructor's log.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import time
from collections import Counter
from pathlib import Path

from .grader import STATUSES, AssignmentSpec, Result
from .notebooks import cell_grade_id

__all__ = ["write_csv", "write_feedback", "write_summary", "write_log", "STATUS_TEXT"]

STATUS_TEXT = {
    "graded": "graded",
    "flagged": "graded, and flagged for your instructor to review",
    "resource_limit": "graded; some code exceeded a resource limit (memory, processes or output)",
    "timed_out": "graded; some code ran past its time limit",
    "crashed": "graded; some code ended the Python process",
    "malformed": "not graded: the notebook file could not be read",
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
"""


def _markdown(text: str) -> str:
    try:
        import mistune

        return mistune.create_markdown(escape=True, plugins=["table", "strikethrough"])(text)
    except Exception:  # noqa: BLE001 - plain text is a fine fallback
        return "<pre>" + html.escape(text) + "</pre>"


def write_csv(path: Path, spec: AssignmentSpec, results: list[Result]) -> None:
    gids = [p.grade_id for p in spec.parts]
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(
            [
                "student",
                "status",
                "score",
                "max_score",
                *gids,
                "manual_points_pending",
                "reason",
                "notes",
                "file",
                "seconds",
            ]
        )
        for r in results:
            pending = sum(spec.manual.values()) if r.notebook is not None else 0
            w.writerow(
                [
                    r.student,
                    r.status,
                    f"{r.score:g}",
                    f"{spec.max_auto:g}",
                    *[f"{r.parts[g].score:g}" if g in r.parts else "" for g in gids],
                    f"{pending:g}",
                    r.reason,
                    "; ".join(r.notes),
                    r.file,
                    f"{r.seconds:.2f}",
                ]
            )


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


def write_feedback(folder: Path, spec: AssignmentSpec, result: Result) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    e = html.escape
    manual = sum(spec.manual.values())
    out = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>Feedback: {e(spec.name)}</title>"
        f"<style>{_CSS}</style></head><body>",
        f"<h1>Feedback on {e(spec.name)} ({e(spec.notebook)}.ipynb)</h1>",
        f"<p>Student: <b>{e(result.student)}</b></p>",
        f"<p>Status: <b class='{'status-graded' if result.status == 'graded' else 'status-other'}'>"
        f"{e(STATUS_TEXT.get(result.status, result.status))}</b></p>",
        f"<p>Autograded score: <b>{result.score:g} / {spec.max_auto:g}</b>"
        + (f" (plus {manual:g} points graded by your instructor)" if manual else "")
        + "</p>",
    ]
    if result.structural and result.notebook is not None:
        out.append(
            "<p>Some cells of your notebook did not match the released notebook; your answers were "
            "graded in a fresh copy of the released notebook, so changes to test cells, metadata "
            "or points have no effect.</p>"
        )
    out.append("<h2>Parts</h2><table><tr><th>part</th><th>function</th><th>points</th><th>result</th></tr>")
    for i, ps in enumerate(spec.parts, 1):
        pr = result.parts.get(ps.grade_id)
        cls = "pass" if pr and pr.passed else "fail"
        out.append(
            f"<tr><td>{i}</td><td><code>{e(ps.function)}</code></td>"
            f"<td>{pr.score if pr else 0:g} / {ps.points:g}</td><td class='{cls}'>"
            f"{e(pr.message if pr else 'not graded')}</td></tr>"
        )
    for gid, pts in spec.manual.items():
        out.append(
            f"<tr><td>written</td><td>{e(gid)}</td><td>— / {pts:g}</td><td>graded by your instructor</td></tr>"
        )
    out.append("</table><h2>The tasks</h2>")
    index = {p.grade_id: i for i, p in enumerate(spec.parts, 1)}
    for gid, texts in _task_sections(spec):
        for text in texts:
            out.append(f"<div class='task'>{_markdown(text)}</div>")
        if gid in index:
            pr = result.parts.get(gid)
            cls = "pass" if pr and pr.passed else "fail"
            out.append(
                f"<div class='result'>Part {index[gid]} (<code>{e(spec.part(gid).function)}</code>): "
                f"<span class='{cls}'>{e(pr.message if pr else 'not graded')}</span>, "
                f"{pr.score if pr else 0:g} / {spec.part(gid).points:g} points</div>"
            )
        elif gid:
            out.append(
                f"<div class='result'>Written answer: graded by your instructor "
                f"({spec.manual[gid]:g} points)</div>"
            )
    out.append(f"<p><small>Generated {e(time.strftime('%Y-%m-%d %H:%M'))}.</small></p></body></html>")
    path = folder / f"{result.student}.html"
    path.write_text("\n".join(out), encoding="utf-8")
    return path


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
    path.write_text("\n".join(lines), encoding="utf-8")
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


def write_summary(
    folder: Path,
    spec: AssignmentSpec,
    results: list[Result],
    *,
    isolation: dict,
    seconds: float,
    jobs: int,
    db_url: str,
    gradebook_errors: dict,
) -> tuple[Path, Path]:
    counts = Counter(r.status for r in results)
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
    flagged = [
        {"student": r.student, "status": r.status, "reason": r.reason, "file": r.file}
        for r in results
        if r.status != "graded"
    ]
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
        "parts": parts,
        "flagged": flagged,
        "isolation": isolation,
        "gradebook": db_url.split("@")[-1] if "@" in db_url else db_url,
        "gradebook_errors": gradebook_errors,
        "results": [
            {
                "student": r.student,
                "status": r.status,
                "score": r.score,
                "reason": r.reason,
                "parts": {g: p.score for g, p in r.parts.items()},
                "notes": r.notes,
                "file": r.file,
                "seconds": round(r.seconds, 3),
            }
            for r in results
        ],
    }
    json_path = folder / "summary.json"
    json_path.write_text(json.dumps(summary, indent=1), encoding="utf-8")

    e = html.escape
    png = _plot(spec, results) if results else ""
    out = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>Grading summary: {e(spec.name)}</title>"
        f"<style>{_CSS}</style></head><body><h1>Grading summary: {e(spec.name)}</h1>",
        f"<p>{len(results)} submissions in {seconds:.1f} s with {jobs} parallel jobs; "
        f"isolation: <b>{e(str(isolation.get('mode')))}</b>; gradebook: <code>{e(summary['gradebook'])}</code></p>",
        "<h2>Statuses</h2><table><tr>"
        + "".join(f"<th>{s}</th>" for s in STATUSES)
        + "</tr><tr>"
        + "".join(f"<td>{counts.get(s, 0)}</td>" for s in STATUSES)
        + "</tr></table>",
        "<h2>Scores per part</h2><table><tr><th>part</th><th>function</th><th>points</th><th>passed</th>"
        "<th>mean</th><th>distribution (points: submissions)</th></tr>",
    ]
    for i, p in enumerate(parts, 1):
        dist = ", ".join(f"{k}: {v}" for k, v in p["distribution"].items())
        out.append(
            f"<tr><td>{i}</td><td><code>{e(p['function'])}</code></td><td>{p['points']:g}</td>"
            f"<td>{p['passed']} / {p['graded']}</td><td>{p['mean']:.2f}</td><td>{e(dist)}</td></tr>"
        )
    out.append("</table>")
    if png:
        out.append(f"<img alt='score distribution per part' src='data:image/png;base64,{png}'>")
    out.append(f"<h2>Flagged and failed submissions ({len(flagged)})</h2>")
    if flagged:
        out.append("<table><tr><th>student</th><th>status</th><th>reason</th><th>file</th></tr>")
        for f in flagged:
            out.append(
                f"<tr><td>{e(f['student'])}</td><td>{e(f['status'])}</td><td>{e(f['reason'])}</td>"
                f"<td>{e(f['file'])}</td></tr>"
            )
        out.append("</table>")
    else:
        out.append("<p>None.</p>")
    if gradebook_errors:
        out.append(
            "<h2>Gradebook errors</h2><ul>"
            + "".join(f"<li>{e(k)}: {e(v)}</li>" for k, v in gradebook_errors.items())
            + "</ul>"
        )
    out.append(
        "<h2>All submissions</h2><table><tr><th>student</th><th>status</th><th>score</th>"
        + "".join(f"<th>{e(p['function'])}</th>" for p in parts)
        + "<th>seconds</th></tr>"
    )
    for r in results:
        out.append(
            f"<tr><td>{e(r.student)}</td><td>{e(r.status)}</td><td>{r.score:g} / {spec.max_auto:g}</td>"
            + "".join(
                f"<td>{r.parts[p['grade_id']].score:g}</td>" if p["grade_id"] in r.parts else "<td></td>"
                for p in parts
            )
            + f"<td>{r.seconds:.2f}</td></tr>"
        )
    out.append("</table><h2>Isolation</h2><table>")
    for k, v in isolation.items():
        out.append(f"<tr><td>{e(str(k))}</td><td>{e(str(v))}</td></tr>")
    out.append("</table></body></html>")
    html_path = folder / "summary.html"
    html_path.write_text("\n".join(out), encoding="utf-8")
    return html_path, json_path
