"""The similarity section of ``summary.html`` and ``similarity.html`` (:mod:`attngrade.similarity`).

A page an instructor reads at any class size: the groups most unusual first, the first
:data:`FIRST` open and the rest behind "show more" (:data:`STEP` at a time, at most
:data:`MAX_GROUPS` on the page, every one in ``similarity.csv``), a filter by part and by score,
each group's distinct answers side by side with the shared passages marked, each answer's first
:data:`MAX_LINES` lines, and what the students' variants say of a pair (a classmate's answer
written for another variant, :func:`attngrade.similarity.variant_note`).
"""

from __future__ import annotations

import html

from .names import shown

__all__ = ["render_section", "page", "FIRST", "STEP", "MAX_GROUPS", "MAX_LINES"]

FIRST = 10  # groups open at first
STEP = 20  # groups behind each "show more"
MAX_GROUPS = 200  # groups on the page (the CSV has them all)
MAX_ANSWERS = 4  # distinct answers of a group side by side (the others listed by name)
MAX_PAIRS = 8  # a group's pairs named under its heading
MAX_LINES = 60  # lines of an answer shown

CSS = """
.sim-group{border:1px solid #ddd;border-radius:6px;padding:.4rem 1rem;margin:.8rem 0}
.sim-group h3{font-size:1rem;margin:.3rem 0}
.sim-sbs{display:grid;grid-template-columns:repeat(auto-fit,minmax(22rem,1fr));gap:1rem}
.sim-sbs pre{background:#f6f8fa;border:1px solid #ddd;border-radius:4px;padding:.5rem;overflow-x:auto;
font-size:.8rem;margin:.3rem 0;white-space:pre;max-height:40rem}
.sim-sbs mark{background:#ffe08a;padding:0}.sim-note,.sim-pairs{color:#444;font-size:.9rem}
.sim-variant{border-left:4px solid #b00;padding-left:.5rem}
.sim-filter{background:#f3f3f3;border-radius:4px;padding:.4rem .8rem}.sim-more>summary{cursor:pointer;
color:#0645ad;margin:.6rem 0}
"""

# The filter: by part and by least score; a filter opens every "show more" and hides what does not match.
SCRIPT = """
(function(){var s=document.getElementById('similarity');if(!s)return;var f=s.querySelector('.sim-filter');
f.hidden=false;var part=f.querySelector('select'),low=f.querySelector('input'),count=f.querySelector('output');
function apply(){var p=part.value,m=parseFloat(low.value)||0,n=0,all=s.querySelectorAll('.sim-group');
var on=p!==''||m>0;s.querySelectorAll('.sim-more').forEach(function(d){if(on)d.open=true;});
all.forEach(function(g){var ok=(p===''||g.dataset.part===p)&&parseFloat(g.dataset.score)>=m;
g.hidden=!ok;if(ok)n++;});count.textContent=n+' of '+all.length+' groups';}
part.addEventListener('change',apply);low.addEventListener('input',apply);apply();})();
"""


def _e(text) -> str:
    """HTML-escaped printable text: ids and names that are not UTF-8 included."""
    return html.escape(shown(str(text)))


def _names(students, limit: int = 12) -> str:
    more = f" and {len(students) - limit} more" if len(students) > limit else ""
    return ", ".join(_e(s) for s in students[:limit]) + more


def _marked(code: str, marks) -> str:
    """The answer's first :data:`MAX_LINES` lines, escaped, the marked ranges in ``<mark>``."""
    lines = code.splitlines(keepends=True)
    end = sum(len(x) for x in lines[:MAX_LINES])
    out, at = [], 0
    for start, stop in marks:
        start, stop = min(start, end), min(stop, end)
        if stop > start >= at:
            out.append(html.escape(code[at:start]))
            out.append(f"<mark>{html.escape(code[start:stop])}</mark>")
            at = stop
    out.append(html.escape(code[at:end]))
    if len(lines) > MAX_LINES:
        out.append(f"\n… {len(lines) - MAX_LINES} more lines (in the student's notebook)")
    return "".join(out)


def _answer_note(group, students) -> str:
    """What one distinct answer of a group shares: with its closest other member, and with whom."""
    if len(group.answers) == 1:
        return f"{len(students)} students handed in this same code (after names, comments and layout)"
    mine = set(students)
    pair = next(p for p in group.pairs if (p.student_a in mine) != (p.student_b in mine))  # most unusual first
    share, other = (pair.share_a, pair.student_b) if pair.student_a in mine else (pair.share_b, pair.student_a)
    note = f"{share:.0%} of this answer's own code is in {_e(other)}'s"
    return note + (f"; {len(students)} students handed in this code" if len(students) > 1 else "")


def _answer_html(group, students, code, marks) -> str:
    return (f"<div><b>{_names(list(students))}</b> <span class='sim-note'>({_answer_note(group, students)})"
            f"</span><pre>{_marked(code, marks)}</pre></div>")


def _group_html(number: int, group) -> str:
    students = list(group.students)
    heading = (f"{number}. <code>{_e(group.part)}</code>: {_names(students)} &middot; score {group.score:.0%} "
               f"&middot; {group.z:.1f} deviations above this part's usual")
    pairs = ""
    if len(students) > 2:
        named = ", ".join(f"{_e(p.student_a)}&ndash;{_e(p.student_b)} {p.score:.0%}"
                          for p in group.pairs[:MAX_PAIRS])
        more = f" and {len(group.pairs) - MAX_PAIRS} more (CSV)" if len(group.pairs) > MAX_PAIRS else ""
        pairs = f"<p class='sim-pairs'>{len(students)} students, {len(group.pairs)} pairs: {named}{more}</p>"
    noted = [p for p in group.pairs if p.note][:MAX_PAIRS]
    pairs += "".join(f"<p class='sim-variant'><b>Variants:</b> {_e(p.note)}</p>" for p in noted)
    shown_answers = group.answers[:MAX_ANSWERS]
    rest = [s for names, _, _ in group.answers[MAX_ANSWERS:] for s in names]
    hidden = f"<p class='sim-pairs'>Not shown: the answers of {_names(rest)}.</p>" if rest else ""
    blocks = "".join(_answer_html(group, *v) for v in shown_answers)
    return (f"<div class='sim-group' id='sim-{number}' data-part='{_e(group.part)}' "
            f"data-score='{group.score * 100:.1f}'><h3>{heading}</h3>{pairs}<div class='sim-sbs'>{blocks}</div>"
            f"{hidden}</div>")


def _groups_html(groups) -> list:
    """The first :data:`FIRST` groups, then "show more" blocks of :data:`STEP`, at most :data:`MAX_GROUPS`."""
    shown_groups = groups[:MAX_GROUPS]
    out = [_group_html(i, g) for i, g in enumerate(shown_groups[:FIRST], 1)]
    for at in range(FIRST, len(shown_groups), STEP):
        chunk = shown_groups[at:at + STEP]
        cards = "".join(_group_html(i, g) for i, g in enumerate(chunk, at + 1))
        out.append(f"<details class='sim-more'><summary>Show more: groups {at + 1}&ndash;{at + len(chunk)} "
                   f"of {len(groups)}</summary>{cards}</details>")
    if len(groups) > MAX_GROUPS:
        out.append(f"<p class='sim-note'>{len(groups) - MAX_GROUPS} less unusual groups are in the CSV only.</p>")
    return out


def _filter_html(result) -> str:
    parts = sorted({g.part for g in result.groups})
    options = "".join(f"<option value='{_e(p)}'>{_e(p)}</option>" for p in parts)
    return ("<form class='sim-filter' hidden onsubmit='return false'>Part <select><option value=''>all parts"
            f"</option>{options}</select> score at least <input type='number' min='0' max='100' step='5' "
            "value='0' size='4'> % &middot; <output></output></form>")


def _part_notes(result) -> str:
    notes = []
    for info in result.parts:
        parts = [f"{info.compared} answers compared; usual score {info.center:.0%} &plusmn; {info.spread:.0%}"]
        if info.short:
            parts.append(f"{len(info.short)} with too little code of their own to be evidence "
                         f"<small>({_names(info.short, 20)})</small>")
        if info.cut:
            parts.append(f"{len(info.cut)} longer than 64 KiB, compared by their start")
        if info.unparsed:
            parts.append(f"{len(info.unparsed)} not all valid Python, compared by their tokens where not "
                         f"<small>({_names(info.unparsed, 20)})</small>")
        notes.append(f"<li><code>{_e(info.part)}</code>: {'; '.join(parts)}</li>")
    return "<details><summary>Per part</summary><ul>" + "".join(notes) + "</ul></details>"


def render_section(result, csv_name: str = "similarity.csv") -> str:
    """The summary's section: the groups, most unusual first, each with its answers side by side."""
    students = len({(g.part, s) for g in result.groups for s in g.students})
    out = [
        f"<style>{CSS}</style><section id='similarity'><h2>Similar answers</h2>"
        "<p class='sim-note'>Evidence for you only: students never see it, and it changes no points and no "
        "status. Students whose answers to one part are alike beyond what this class usually shares, most "
        "unusual first. <b>Score</b>: the share of the smaller answer's own code found in the other, rare "
        "passages weighing more (names, comments, layout, the order of statements and the usual rewrites do "
        "not hide a copy; the starter code, the task's code and the solution's never count). "
        "<b>Deviations above usual</b>: how far the score stands above the scores of the part's other pairs. "
        f"Shared passages are <mark>marked</mark>. Every listed pair, and the pairs just below the cut, are in "
        f"<code>{_e(csv_name)}</code>.</p>",
        f"<p><b>{len(result.groups)} groups</b> ({students} answers) listed: {result.min_z:g} deviations or "
        f"more above usual and a score of {result.min_score:.0%} or more.</p>",
    ]
    if result.groups:
        out.append(_filter_html(result))
        out.extend(_groups_html(result.groups))
    else:
        out.append("<p>No pair stands out.</p>")
    out.append(_part_notes(result) + f"<script>{SCRIPT}</script></section>")
    return "".join(out)


def page(result, title: str, csv_name: str) -> str:
    """``similarity.html``: the section on a page of its own."""
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{_e(title)}</title>"
        "<style>body{font-family:system-ui,sans-serif;max-width:100rem;margin:2rem auto;padding:0 1rem}</style>"
        f"</head><body><h1>{_e(title)}</h1>{render_section(result, csv_name)}</body></html>"
    )
