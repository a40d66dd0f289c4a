"""Student feedback shows the task and per-part results, never the hidden tests or their inputs.

For a failed hidden case the page gives its kind, what failed and the visible check's hint in the
visible checks' own words, the visible check to run and the all-or-nothing rule
(:mod:`attngrade.feedback`); the failing inputs only where the assignment reveals them and the
time has passed (:mod:`attngrade.reveal`).
"""

from __future__ import annotations

import html
import re

import nbformat
import numpy as np
import pytest

import gradingkit as gk
from attngrade.spec import load_parts, make_cases
from attngrade import texmath
from attngrade.visible import HINT_MARK, check_part


def _hidden_lines() -> list[str]:
    text = (gk.SOLUTIONS / "01_softmax" / "hidden_tests.py").read_text()
    return [ln.strip() for ln in text.splitlines() if len(ln.strip()) > 12]


def _hidden_cases(assignment: str = "01_softmax") -> list:
    parts = load_parts(gk.SOLUTIONS / assignment / "hidden_tests.py").values()
    return [c for part in parts for c in make_cases(part)]


def _input_reprs(cases: list) -> set[str]:
    """repr/str of every hidden case input that is more than a trivial number."""
    reprs = set()
    for case in cases:
        for value in (*case.args, *case.kwargs.values()):
            if isinstance(value, np.ndarray) and value.size > 1:
                with np.printoptions(threshold=50):
                    for text in (repr(value), str(value), str(value.tolist())[:60]):
                        reprs.add(text)
                    reprs.add(repr(value.ravel()[:3].tolist())[1:-1])
    return {r for r in reprs if len(r) > 10}


def _input_decimals(cases: list) -> set[str]:
    """Every non-integer value of the cases' inputs, as a decimal of 3 or 4 places."""
    found = set()
    for case in cases:
        for value in (*case.args, *case.kwargs.values()):
            for x in np.ravel(np.asarray(value, dtype=object)):
                if isinstance(x, (float, np.floating)) and np.isfinite(x) and x != round(float(x)):
                    found |= {f"{float(x):.{n}f}" for n in (3, 4)}
    return found


def _case_blocks(page: str) -> str:
    """The text of what a page says about failed cases (the part's line and its block), as read."""
    blocks = re.findall(r"<div class='case'>.*?</div>|<td class='fail'>.*?</td>", page, flags=re.S)
    return " ".join(_plain(b) for b in blocks)


def _leaks(text: str, cases: list, reprs: set[str], decimals: set[str]) -> list[str]:
    """What of the hidden cases ``text`` (plain text a student reads) shows: inputs, labels; the
    decimals among the inputs' values only in the case blocks (:func:`_case_blocks`), tolerances aside."""
    shown = [r for r in reprs if r in text]
    shown += [c.label for c in cases if len(c.label) >= 8 and c.label in text]
    said = set(re.findall(r"-?\d+\.\d{3,}", text)) - {f"{c.tol:g}" for c in cases}
    return shown + sorted(said & decimals)


def test_feedback_never_shows_hidden_tests_inputs_or_tracebacks(corpus_run):
    lines = _hidden_lines()
    cases = _hidden_cases()
    reprs, decimals = _input_reprs(cases), _input_decimals(cases)
    assert lines and reprs and decimals
    pages = sorted((corpus_run.out / "feedback").glob("*.html"))
    assert len(pages) == sum(1 for c in corpus_run.cases if c.assignment == "01_softmax")
    for page in pages:
        text = page.read_text().replace(page.stem, "STUDENT")  # case names mention what they try
        # The student's own code is theirs to see (it may name what it tried): leave it out here.
        text = re.sub(r"<pre class='code'>.*?</pre>", "", text, flags=re.S)
        plain = html.unescape(re.sub(r"<[^>]+>", " ", text))
        for line in lines:
            assert line not in text and line not in plain and html.escape(line) not in text, (page.name, line)
        assert not _leaks(plain, cases, reprs, set()), page.name
        assert not _leaks(_case_blocks(text), cases, reprs, decimals), page.name
        for word in ("Traceback", "hidden_tests", "run_hidden_tests", "AssertionError", "float16", "/work/"):
            assert word not in plain or word in _release_text(), (page.name, word)
        # the grader's own reasons (the instructor's log) stay there: "<label>: allocated N bytes, limit M"
        log = (corpus_run.out / "logs" / f"{page.stem}.log").read_text()
        labels = {c.label for c in cases}
        for detail in re.findall(r"^test_\w+: [\d.]+/[\d.]+ (.+)$", log, flags=re.M):
            label, _, reason = detail.partition(": ")
            if label in labels and not reason.startswith("raised "):  # a name is all a page says of it
                assert reason not in plain, (page.name, reason)


def _release_text() -> str:
    return " ".join(c.source for c in gk.release("01_softmax").cells if c.cell_type == "markdown")


def test_feedback_shows_the_task_points_and_a_short_reason(corpus_run):
    page = (corpus_run.out / "feedback" / "02_loop_in_function.html").read_text()
    assert "Part 1 — A stable softmax along any axis" in page
    assert "5 / 8" in page
    assert "failed (timed out" in page and "passed" in page
    page = (corpus_run.out / "feedback" / "08_allocate_50gb.html").read_text()
    assert "raised MemoryError" in page
    page = (corpus_run.out / "feedback" / "25_calls_attnmath.html").read_text()
    # attnmath is absent from the sandbox: the import fails, or the static check names the call.
    assert re.search(r"no credit: calls a reference implementation|its cell raised (ModuleNotFound|Import)Error", page)
    page = (corpus_run.out / "feedback" / "32_truncated_json.html").read_text()
    assert "could not be read" in page
    page = (corpus_run.out / "feedback" / "06_segfault.html").read_text()
    assert "crashed" in page and "SIGSEGV" in page


GLOBAL_MAX = ("shifted = work - np.max(work, axis=axis, keepdims=True)", "shifted = work - np.max(work)")


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    """One attngrade run of three students of 01_softmax: Part 3 builds the whole Jacobian (its
    memory case fails), Part 1's cell raises, Part 1 subtracts the global maximum (the float16
    rows of ±1e4 fail); every written answer but one left alone."""
    tmp_path = tmp_path_factory.mktemp("small")
    rel = gk.release("01_softmax")
    right = gk.solution_answers("01_softmax")
    memory = dict(
        right,
        softmax_vjp="def softmax_vjp(p, g):\n"
        "    J = p[..., :, None] * (np.eye(p.shape[-1]) - p[..., None, :])  # the whole Jacobian\n"
        "    return np.einsum('...ij,...i->...j', J, g)\n",
        jacobian_proof="Differentiate $\\sum_j p_j = 1$, so $J = \\mathrm{diag}(p) - p\\,p^\\top$.",
    )
    raising = dict(right, stable_softmax="1 / 0\n\ndef stable_softmax(x, axis=-1):\n    return x\n")
    global_max = dict(right, stable_softmax=right["stable_softmax"].replace(*GLOBAL_MAX))
    folder = tmp_path / "flat"
    folder.mkdir()
    for student, answers in {"memory": memory, "raising": raising, "global_max": global_max}.items():
        nbformat.write(gk.fill_any(rel, answers), folder / f"{student}.ipynb")
    out = tmp_path / "out"
    proc = gk.run_attngrade("01_softmax", folder, "--out", out, "--no-gradebook", "--jobs", "2")
    assert proc.returncode == 0, proc.stderr[-2000:]
    return out, global_max


def _plain(page: str) -> str:
    """The text of a page as read: one space between words, none the markup put before punctuation."""
    blocks = re.sub(r"</?(p|div|td|th|tr|li|ul|ol|h\d|pre|br|table|summary|details)\b[^>]*>", " ", page)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", blocks)).split())


def test_feedback_names_the_failed_case_shows_the_code_and_renders_maths(small_run):
    out, _ = small_run
    page = (out / "feedback" / "memory.html").read_text()
    plain = _plain(page)
    assert "failed at hidden case 6 of 6 (memory limit on long rows)" in plain  # the table's line
    assert "Hidden case 6 of 6, a case of the kind memory limit on long rows: allocated" in plain
    assert re.search(r"allocated (more than the 8\.0 MiB this case allows|[\d.]+ MiB at once where this case "
                     r"allows 8\.0 MiB)", plain)
    assert "Hint (the visible check of this kind gives the same): do not build the (n, n) Jacobian" in plain
    assert 'Run the test cell of Part 3 in your notebook (check.run("softmax_vjp", ...))' in plain
    assert "Its case 6 of 6 is of this kind" in plain and 'self_check.inputs["Part 3"]' in plain
    assert "All or nothing: this part gives its 3 points when all 6 of its hidden cases pass, and 0" in plain
    assert "the 5 before it passed, and it was the last" in plain
    assert "np.einsum('...ij,...i->...j', J, g)" in _code_text(page)  # the student's own code
    assert page.count("Your code for part") == 1  # only for the failed part
    assert "<td>graded by your instructor</td>" in page  # an answered written part
    if texmath.typeset([("x", False)]).markup:  # Node.js typeset the task's maths into the page
        assert "<mjx-container" in page and "<script" not in page and "texnote" not in page
    else:  # verbatim TeX (no mangled "\,") for the local MathJax, loaded from beside the page
        assert "J = \\mathrm{diag}(p) - p\\,p^\\top" in page and "id='texnote'" in page
        assert "src='mathjax/tex-chtml.js'" in page and (out / "feedback" / "mathjax" / "tex-chtml.js").is_file()
    page = (out / "feedback" / "raising.html").read_text()
    assert "raised ZeroDivisionError" in page and "is not defined" not in page
    assert "No hidden case was checked, so none counts." in _plain(page)
    assert "Written answer: not answered: 0 of 2 points" in page
    assert "<td>graded by your instructor</td>" not in page and "Written answer: graded" not in page
    assert "up to" not in page  # nothing promised for an unanswered written part


class _Check:
    inputs: dict = {}

    def __init__(self, part):
        self.part, self.kind = part, ""


def test_a_failed_hidden_case_reads_as_its_visible_check_says(small_run):
    """The page's kind, verdict and hint are what the visible check of Part 1 says of the same
    answer on its own draw (numbers aside); the hidden case's values are nowhere on the page."""
    out, answers = small_run
    namespace: dict = {"np": np}
    exec(answers["stable_softmax"], namespace)  # noqa: S102 - the solution with one named mistake
    check = _Check("Part 1")
    with pytest.raises(AssertionError) as visible:
        check_part(check, "stable_softmax", namespace["stable_softmax"], gk.EXERCISES / "01_softmax")
    said, _, hint = re.sub(r" \(case \d+ of \d+;.*\)$", "", str(visible.value)).partition(HINT_MARK)
    raw = (out / "feedback" / "global_max.html").read_text()
    page = _plain(raw)
    found = re.search(r"a case of the kind (.+?): (.+?) Hint \(the visible check of this kind gives the "
                      r"same\): (.+?) Try it\.", page)
    assert found, page[:3000]
    kind, what, page_hint = found.groups()
    assert kind == check.kind == "float16 input, rows of ±1e4"
    assert re.sub(r"\d+", "N", what) == re.sub(r"\d+", "N", said) and "has NaN in" in what
    assert page_hint == hint and "subtract each row's own maximum" in hint
    cases = _hidden_cases()
    assert not _leaks(page, cases, _input_reprs(cases), set())
    assert not _leaks(_case_blocks(raw), cases, _input_reprs(cases), _input_decimals(cases))


def test_every_hidden_case_has_a_kind_that_gives_nothing_away():
    parts = 0
    for assignment in gk.ASSIGNMENTS:
        for part in load_parts(gk.SOLUTIONS / assignment / "hidden_tests.py").values():
            parts += 1
            cases = make_cases(part)
            for case in cases:
                assert case.kind.strip(), (assignment, part.grade_id, case.label)
                assert not re.search(r"[=(\[]|\d+\s*[x,]\s*\d+", case.kind), (assignment, case.kind)
            if len(cases) > 3:  # the feedback tells the kinds of a part's cases apart
                assert len({c.kind for c in cases}) > 1, (assignment, part.grade_id)
    assert parts >= 4 * len(gk.ASSIGNMENTS)


# ---- unit level: one page written from a hand-made result (no grading run) --------------------

import mathjax_node  # noqa: E402

from attngrade import report  # noqa: E402
from attngrade.grader import PartResult, Result, load_assignment, load_course  # noqa: E402

needs_node = pytest.mark.skipif(not mathjax_node.renderer_available(),
                                reason="needs Node.js and node_modules/mathjax-full (make book installs them)")


def _code_text(page: str) -> str:
    """The text of a page's code blocks, as the student reads it."""
    blocks = re.findall(r"<pre class='code'>(.*?)</pre>", page, flags=re.S)
    return "\n".join(html.unescape(re.sub(r"<[^>]+>", "", b)) for b in blocks)


@pytest.fixture(scope="module")
def softmax_spec():
    return load_assignment(load_course(gk.ROOT), "01_softmax")


def _page(spec, folder, code: str):
    """A page of a student whose first part failed, with ``code`` as its answer."""
    first = spec.parts[0]
    answer = report._answer_cell_of(spec, first.grade_id)
    result = Result("ana", "graded", file="ana_12_34_softmax.ipynb",
                    notebook=gk.fill_any(gk.release(spec.name), {answer: code}))
    for p in spec.parts:
        ok = p is not first
        result.parts[p.grade_id] = PartResult(p.points if ok else 0.0, p.points, ok,
                                              "passed" if ok else "failed (wrong values)", "case 0: x")
    return report.write_feedback(folder, spec, result).read_text(encoding="utf-8")


def test_code_shows_its_own_line_breaks_and_escapes_only_other_controls(tmp_path, softmax_spec):
    code = "def stable_softmax(x, axis=-1):\r\n\tm = x.max()  # \x1b[31m\u202e\n    return x - m\n"
    page = _page(softmax_spec, tmp_path, code)
    shown = _code_text(page)
    assert shown.splitlines() == ["def stable_softmax(x, axis=-1):", "    m = x.max()  # \\x1b[31m\\u202e",
                                  "    return x - m"]
    assert "\\x0a" not in page and "\\x0d" not in page and "\x1b" not in page and "\u202e" not in page
    block = report.code_html("s = '</pre><script>alert(1)</script>'\n")
    assert "<script" not in block and block.count("</pre>") == 1  # the code is text, never markup


def test_long_code_is_cut_with_a_note(tmp_path):
    block = report.code_html("x = 1\n" * 5000)
    assert _code_text(block).count("x = 1") == report.MAX_CODE_CHARS // 6
    assert f"({5000 * 6 - report.MAX_CODE_CHARS} more characters not shown)" in block


def _without_node(monkeypatch):
    monkeypatch.setattr(mathjax_node, "renderer_available", lambda: False)


def test_without_node_the_maths_stays_tex_and_the_page_says_so(tmp_path, softmax_spec, monkeypatch):
    _without_node(monkeypatch)
    page = _page(softmax_spec, tmp_path / "alone", "def stable_softmax(x, axis=-1):\n    return x\n")
    assert "id='texnote'" in page and html.escape(texmath.NOTE) in page
    assert html.escape("$$\nJ_{ij} = \\frac{\\partial p_i}{\\partial z_j}") in page
    assert "<mjx-container" not in page and "<script" not in page  # no MathJax beside it: none loaded
    (tmp_path / "served" / "mathjax").mkdir(parents=True)
    (tmp_path / "served" / "mathjax" / "tex-chtml.js").write_text("")
    page = _page(softmax_spec, tmp_path / "served", "def stable_softmax(x, axis=-1):\n    return x\n")
    assert "src='mathjax/tex-chtml.js'" in page and "getElementById('texnote')" in page


@needs_node
def test_with_node_the_page_carries_its_typeset_maths_and_fonts(tmp_path, softmax_spec, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(texmath, "_MEMORY", {})
    page = _page(softmax_spec, tmp_path / "a", "def stable_softmax(x, axis=-1):\n    return x\n")
    formulas = texmath.formulas_in(t for _, ts in report._task_sections(softmax_spec) for t in ts)
    assert page.count("<mjx-container") >= len(formulas) > 10
    assert "texnote" not in page and "<script" not in page
    prose = re.sub(r"<pre class='code'>.*?</pre>|<code>.*?</code>|<style>.*?</style>", "", page, flags=re.S)
    assert "$" not in prose  # every formula typeset, none left as TeX
    # Self-contained: every font the maths uses is inside the page, nothing is fetched.
    assert "data:font/woff;base64," in page and "MathJax_Math-Italic" not in page
    assert not re.search(r"url\((?!\"?data:)|\bsrc=|<link", page)
    # Node.js ran once for the assignment: the next page (another process: the disk cache) needs none.
    monkeypatch.setattr(texmath, "_MEMORY", {})
    monkeypatch.setattr(mathjax_node, "run_mathjax", lambda *a, **k: pytest.fail("MathJax ran again"))
    assert _page(softmax_spec, tmp_path / "b", "pass\n").count("<mjx-container") == page.count("<mjx-container")


@needs_node
def test_a_formula_mathjax_refuses_stays_tex_with_the_note(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    formulas = texmath.formulas_in(["$x \\in \\R^n$ and $\\notamacro{x}$ but `$code$`"])
    assert formulas == [("\\notamacro{x}", False), ("x \\in \\R^n", False)]  # code spans are no maths
    maths = texmath.typeset(formulas)
    assert list(maths.markup) == [("x \\in \\R^n", False)] and not maths.complete(formulas)
    assert maths.formula("$\\notamacro{x}$") == "$\\notamacro{x}$"


# ---- what a failed hidden case shows, decided in the grader's process (no grading run) -------

import base64  # noqa: E402
import contextlib  # noqa: E402
import functools  # noqa: E402
import io  # noqa: E402
from datetime import datetime, timedelta, timezone  # noqa: E402

from traitlets.config import Config  # noqa: E402

from attngrade import reveal  # noqa: E402
from attngrade.feedback import FAILED, hidden_message  # noqa: E402
from attngrade.notebooks import cell_grade_id  # noqa: E402
from attngrade.spec import Case, Part, check_outputs, compute_outputs, run_case  # noqa: E402
from attngrade.statistics import failed_case  # noqa: E402
from kind_mistakes import collect_kind_mistakes  # noqa: E402


@functools.lru_cache(maxsize=None)
def _code_cells(assignment: str) -> tuple:
    """The release's setup and answer cells as (grade id, source): test cells left out."""
    def test_cell(c) -> bool:
        meta = c.metadata.get("nbgrader", {})
        return bool(meta.get("grade")) and not meta.get("solution")

    return tuple((cell_grade_id(c), c.source) for c in gk.release(assignment).cells
                 if c.cell_type == "code" and not test_cell(c))


def _answers_namespace(assignment: str, answers: dict[str, str]) -> dict:
    """The release's setup and answer cells run with ``answers`` (by grade id)."""
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        for gid, source in _code_cells(assignment):
            exec(answers.get(gid, source), namespace)  # noqa: S102 - our own notebooks
    return namespace


@functools.lru_cache(maxsize=None)
def _made(assignment: str) -> dict:
    """Test cell -> (its part, its hidden cases), made once."""
    parts = load_parts(gk.SOLUTIONS / assignment / "hidden_tests.py")
    return {gid: (part, make_cases(part)) for gid, part in parts.items()}


def _first_failure(part, cases: list, fn) -> tuple[list, str] | None:
    """The outcomes up to the first failing hidden case and the reason, as the grader has them."""
    outcomes = []
    for case in cases:
        outcomes.append(run_case(fn, case)[0])
        passed, reason = check_outputs(part, [case], outcomes[-1:])
        if not passed:
            return outcomes, reason
    return None


def _failed_result(spec, answers: dict[str, str]):
    """A result whose Part 1 failed a hidden case, its message made as the check stage makes it."""
    first = spec.parts[0]
    fn = _answers_namespace(spec.name, answers)[first.function]
    outs = compute_outputs(fn, first.cases)
    passed, reason = check_outputs(first.part, first.cases, outs)
    assert not passed
    result = Result("ana", "graded", file="ana.ipynb", notebook=gk.release(spec.name))
    for p in spec.parts:
        ok = p is not first
        message = "passed" if ok else hidden_message(p.part, p.cases, outs, reason)
        detail = "passed" if ok else reason
        result.parts[p.grade_id] = PartResult(p.points if ok else 0.0, p.points, ok, message, detail)
    return result, first.cases[failed_case(first.cases, reason)]


def _reveal(spec, monkeypatch, what: str | None, after: str = "2026-12-20 23:59 UTC", zone: str = ""):
    config = Config()
    if what is not None:
        config.AttnGrade.reveal = {spec.name: {"after": after, "what": what}}
    if zone:
        config.AttnGrade.timezone = zone
    monkeypatch.setattr(spec.course, "config", config)


def _download(page: str) -> dict:
    found = re.search(r"href='data:application/octet-stream;base64,([^']+)'", page)
    if not found:
        return {}
    with np.load(io.BytesIO(base64.b64decode(found.group(1)))) as data:
        return {k: data[k] for k in data.files}


def test_the_failing_inputs_show_only_where_the_assignment_reveals_them_after_its_time(
        tmp_path, softmax_spec, monkeypatch):
    answers = gk.solution_answers("01_softmax")
    answers["stable_softmax"] = answers["stable_softmax"].replace(*GLOBAL_MAX)
    result, case = _failed_result(softmax_spec, answers)
    cases = _hidden_cases()
    reprs = _input_reprs(cases)
    due = datetime(2026, 12, 20, 23, 59, tzinfo=timezone.utc)

    def page(name: str, now: datetime) -> str:
        path = report.write_feedback(tmp_path / name, softmax_spec, result, now=now)
        return path.read_text(encoding="utf-8")

    for what in (None, "nothing"):  # no setting, or nothing to reveal: never, however late
        _reveal(softmax_spec, monkeypatch, what)
        text = page(f"never-{what}", due + timedelta(days=3650))
        assert "Hidden case 11 of 14" in _plain(text) and "failing case's inputs" not in text
        assert not _download(text) and not _leaks(_plain(text), cases, reprs, set())
    _reveal(softmax_spec, monkeypatch, "failing inputs")
    before = page("before", due - timedelta(seconds=1))
    assert "Hidden case 11 of 14" in _plain(before) and "failing case's inputs" not in before
    assert not _download(before) and not _leaks(_plain(before), cases, reprs, set())
    after = page("after", due)
    arrays = _download(after)
    assert list(arrays) == ["arg0"] and arrays["arg0"].dtype == case.args[0].dtype
    assert np.array_equal(arrays["arg0"], case.args[0])  # the exact values of the case that failed
    assert 'out = stable_softmax(d["arg0"], axis=-1)' in html.unescape(after)
    assert "shown since 2026-12-20 23:59 UTC" in _plain(after)
    both = "failing inputs and expected output"
    _reveal(softmax_spec, monkeypatch, both, "2026-12-21 00:30", "Europe/Berlin")
    assert not _download(page("zone", due - timedelta(minutes=30)))  # 00:30 in Berlin is 23:30 UTC
    arrays = _download(page("expected", due - timedelta(minutes=14)))  # 23:45 UTC: after it, in Berlin's zone
    assert sorted(arrays) == ["arg0", "expected"] and np.array_equal(arrays["expected"], case.expected)


@pytest.mark.parametrize("entry, words", [
    ({"after": "2026-12-20", "what": "everything"}, "['what'] must be one of"),
    ({"what": "failing inputs"}, "['after'] must be a time"),
    ({"after": "in a week", "what": "failing inputs"}, "['after']"),
    ({"after": "2026-12-20", "what": "failing inputs", "when": "now"}, "must be a dict with 'what'"),
    ("failing inputs", "must be a dict with 'what'"),
])
def test_a_reveal_setting_that_cannot_be_read_is_refused_by_name(entry, words):
    config = Config()
    config.AttnGrade.reveal = {"01_softmax": entry}
    with pytest.raises(ValueError, match=re.escape("c.AttnGrade.reveal['01_softmax']")) as refused:
        reveal.reveal_policy(config, "01_softmax")
    assert words in str(refused.value)
    assert reveal.reveal_policy(config, "02_attention") == reveal.Reveal()  # another assignment: never


def _toy_cases(rng):
    return [Case((rng.normal(size=(3, 4)),), {}, "toy", np.zeros((3, 4)), 1e-6, kind="a toy kind")]


def test_a_sentence_that_would_show_a_hidden_value_gives_way_to_the_kinds_hint():
    def telling(case, out):
        return f"the first entry is {case.args[0][0, 0]:.4f}"

    def value_check(case, out):
        assert np.array_equal(out, case.expected), f"the first entry is {out[0, 0] / 1e-9:.5f} nano"

    hints = {"a toy kind": "the kind's own hint"}
    part = Part("test_toy", "toy", _toy_cases, hints=hints, diagnose=telling)
    cases = make_cases(part)
    outs, reason = _first_failure(part, cases, lambda x: x)
    message = hidden_message(part, cases, outs, reason)
    assert message.startswith(FAILED) and message.endswith("Hint: the kind's own hint.")
    assert f"{cases[0].args[0][0, 0]:.4f}" not in message
    plain = Part("test_toy", "toy", _toy_cases, hints=hints, diagnose=lambda case, out: "a plain word on 3 rows")
    assert hidden_message(plain, cases, outs, reason).endswith("Hint: a plain word on 3 rows.")  # 3: a dimension
    part = Part("test_toy", "toy", _toy_cases, check=value_check)  # the values agree with no check of ours
    outs, reason = _first_failure(part, cases, lambda x: np.zeros((3, 4)) + 1e-9 * x)
    refused = FAILED + "the output is not what this part's check accepts."
    assert hidden_message(part, cases, outs, reason) == refused


def test_an_exception_class_made_at_run_time_is_not_named_in_the_feedback():
    """A clean-room red team named an exception class after the hidden inputs' bytes
    (``LEAK_<hex>``) and read them in its feedback: only Python's own exceptions, a library's and
    the grader's own outcomes are named; any other is "an exception"."""
    part = Part("test_toy", "toy", _toy_cases)
    cases = make_cases(part)

    def leaking(x):
        raise type("LEAK_" + x.tobytes()[:8].hex(), (ValueError,), {})("no")

    outs, reason = _first_failure(part, cases, leaking)
    message = hidden_message(part, cases, outs, reason)
    assert "LEAK_" not in message and cases[0].args[0].tobytes()[:8].hex() not in message, message
    assert "an exception" in message, message

    def plain(x):
        raise ZeroDivisionError("no")

    outs, reason = _first_failure(part, cases, plain)
    assert "ZeroDivisionError" in hidden_message(part, cases, outs, reason)


def test_no_named_mistake_reads_a_hidden_value_and_its_diagnosis_shows():
    """01–03's named mistakes on their hidden cases: every message is the visible checks' kind of
    message without a value of the case that failed, and the diagnoses get through."""
    diagnosed = 0
    for assignment in ("01_softmax", "02_attention", "03_gradients"):
        mistakes, _ = collect_kind_mistakes([assignment])
        right = gk.solution_answers(assignment)
        for _, name, gid, change in mistakes:
            answers = dict(right)
            for answer, edits in change.items():
                for old, new in [edits] if isinstance(edits, tuple) else edits:
                    answers[answer] = answers[answer].replace(old, new)
            part, cases = _made(assignment)[gid]
            failed = _first_failure(part, cases, _answers_namespace(assignment, answers)[part.function])
            assert failed is not None, name
            message = hidden_message(part, cases, *failed)
            case = cases[len(failed[0]) - 1]
            assert message.startswith(FAILED) and not _leaks(message, cases, _input_reprs([case]),
                                                              _input_decimals([case])), (name, message)
            diagnosed += part.diagnose is not None and part.hints.get(case.kind, "") not in message
    assert diagnosed >= 5


def test_a_reveal_setting_that_cannot_be_read_stops_the_run_before_any_grading(tmp_path):
    from attngrade import pipeline

    (tmp_path / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        f"c.CourseDirectory.root = {str(tmp_path)!r}\n"
        f"c.CourseDirectory.source_directory = {str(gk.SOLUTIONS)!r}\n"
        f"c.CourseDirectory.release_directory = {str(gk.EXERCISES)!r}\n"
        "c.AttnGrade.reveal = {'01_softmax': {'after': '2026-12-20 23:59', 'what': 'all of it'}}\n")
    opts = pipeline.Options("01_softmax", str(tmp_path), tmp_path / "out", course=str(tmp_path))
    with pytest.raises(pipeline.InstructorError, match=re.escape("c.AttnGrade.reveal['01_softmax']['what']")):
        pipeline._course(opts)
    assert not (tmp_path / "out").exists()
