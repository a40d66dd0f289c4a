"""The source documents' claims that the book repeats, their verdicts and the tests that decide them.

A test that checks a claim of the source documents carries a marker::

    @pytest.mark.claim("003 §1.1", "Softmax preserves the order of the logits", "verified",
                       domain="every real vector of length 1..8, hypothesis")
    @pytest.mark.claim("003 §4.1", "Attention is permutation-invariant", "corrected",
                       correction="Self-attention is permutation-equivariant: ...",
                       domain="L = S in 1..6, D, D_v in 1..4, every permutation", box="corr-equivariant")

``source`` is the document number in ``shared/seeds`` and its section, ``text`` the claim as the
document makes it (paraphrased where needed, maths in ``$...$``), ``verdict`` one of
:data:`VERDICTS`. A claim of a published paper has the source kind :data:`PAPER`,
``"paper: <bibkey> <where>"`` (``"paper: lu2025moba §3.1"``), the key of ``book/references.bib``
followed by the section, table or equation, with the same verdicts as the five texts.

The book's own statements about data are registered the same way, with the source kind
:data:`BOOK`: a sentence, caption or alt text that describes a figure, a table or a recorded run
("sits between", "falls as ... grows", "an order of magnitude below") is checked by a test that
reads the same data (the record under ``book/data``, or the library call the figure plots)::

        @pytest.mark.claim("book: `book/data/flash_gpu.json`", "At $N \\ge 2048$ the Triton kernels ...
                       are slower than FlashAttention-2 forward and backward at $d = 128$", "verified",
                       chapter="08_flash", quote="compiled by Triton for this GPU, sit between the two at",
                       domain="every configuration of the record with $N \\ge 2048$")

``source`` is ``"book: "`` followed by the data the statement describes (a file, in backticks, or a
figure's label), ``quote`` a piece of the chapter's sentence as written (white space aside), which
the chapter must contain (``tests/test_claims.py``) and which the appendix shows; the verdict is
``verified`` or ``verified on``. The same quotation backs the absolute words it contains
(``book/_ext/attnmath_words.py``). The tests are in ``tests/book/test_data_statements.py``, or
are tests of the library that also decide a claim of the sources. The verdicts of the sources' claims are:

* ``verified``: true as stated, and the tests check it over the whole domain it states (every
  size, shape, seed or published configuration the claim speaks of, drawn by hypothesis where
  that fits); a claim about one instance (a published model, the source's own numbers) is
  checked on that instance;
* ``verified on``: true on the domain the tests span, which is narrower than the claim's (a
  memory trace at a few sizes, a statistical check at a few dimensions); the appendix shows the
  verdict as "verified on" followed by that domain, so the narrowing is never hidden;
* ``corrected``: false as stated; ``correction`` gives the right statement, which the test checks,
  and the chapter that repeats the claim says so in a Correction box (``box``, its label);
* ``clarified``: true under the source's own assumptions, but misleading without a caveat;
  ``correction`` gives the caveat, the test checks the claim together with it.

``domain`` says over which inputs the test checks the claim (shapes, dtypes, edge sizes, seeds,
configurations), so a reader can compare it with the generality of the claim; every marker has
one. A test that only illustrates a claim does not make it ``verified``: such a claim is
``clarified`` (an analogy, with what exactly holds) or ``verified on`` its narrower domain.
``chapter`` is the chapter that repeats the claim; without it the chapter named after the test's module (``test_masking.py`` ->
``04_masking``) is taken. Several markers with the same source and text are one claim decided by
all their tests. A claim the book repeats but no test here can decide is listed in
:data:`NOT_VERIFIABLE` with the reason, and with the verdict ``not verifiable here``: a verdict
needs a test. Claims whose texts are nearly the same get the same verdict
(:func:`near_identical_claims`) unless :data:`DISTINCT` says how they differ.

The book's appendix "Claims and errata" is built from :func:`collect_claims` and from the outcome
of the claim tests in the same build (:func:`run_claim_tests`), so a claim's verdict is shown
only next to the result of its tests, and a failing claim test fails the build. Parsing the
markers is static (``ast``): nothing is imported.
"""

from __future__ import annotations

import ast
import difflib
import functools
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

VERDICTS = ("verified", "verified on", "corrected", "clarified")
#: The source kind of the book's own statements about its data (``source="book: <data>"``).
BOOK = "book"
#: The source kind of a published paper's claims (``source="paper: <bibkey> <where>"``).
PAPER = "paper"
UNVERIFIABLE = "not verifiable here"
ROOT = Path(__file__).resolve().parents[1]
#: Set for a book build by a test run that runs every claim test itself (tests/book/build.py):
#: that build does not run them a second time, and each of their outcomes reads RUN_BY_THE_SUITE.
IN_SUITE = "ATTNMATH_CLAIM_TESTS_IN_SUITE"
RUN_BY_THE_SUITE = "run by the test suite"

#: The chapter that repeats the claims of each test module, unless a marker names another.
MODULE_CHAPTER = {
    "test_softmax": "01_softmax",
    "test_attention": "02_attention",
    "test_scaling": "02_attention",
    "test_masking": "04_masking",
    "test_multihead": "05_multihead",
    "test_counting": "05_multihead",
    "test_positional": "06_positional",
    "test_linear": "07_efficiency",
    "test_sparse": "07_efficiency",
    "test_chunked": "08_flash",
    "test_flash": "08_flash",
    "test_kv_cache": "08_flash",
    "test_moe": "09_moe",
    "test_theory": "10_theory",
    "test_nn": "11_capstone",
    "test_encoder": "11_capstone",
    "test_induction": "12_induction",
    "test_serving": "13_serving",
    "test_long_context": "14_long_context",
    "test_recurrence": "15_recurrence",
    "test_programmable": "16_programmable",
}

#: Chapter titles, in reading order (the order of ``_toc.yml``).
CHAPTERS = {
    "01_softmax": "Softmax",
    "02_attention": "Scaled dot-product attention",
    "03_gradients": "Gradients",
    "04_masking": "Masking",
    "05_multihead": "Multi-head attention",
    "06_positional": "Positional information",
    "07_efficiency": "Efficient attention",
    "08_flash": "Flash attention",
    "09_moe": "Mixture of experts",
    "10_theory": "Theory",
    "11_capstone": "Capstone",
    "12_induction": "What trained heads learn",
    "13_serving": "Serving attention",
    "14_long_context": "Long context",
    "15_recurrence": "Attention as a recurrence",
    "16_programmable": "Programmable and learned-sparse attention",
}


@dataclass(frozen=True)
class Marker:
    """One ``@pytest.mark.claim`` on one test function."""

    source: str
    text: str
    verdict: str
    correction: str | None
    domain: str | None
    chapter: str | None
    box: str | None
    test: str  # tests/attnmath/test_x.py::test_name
    line: int
    quote: str | None = None  # the book's statements: the words of the chapter's sentence


@dataclass(frozen=True)
class Claim:
    """One claim of a source document, with every test that decides it."""

    source: str
    text: str
    verdict: str  # one of VERDICTS, or UNVERIFIABLE
    correction: str | None
    chapter: str
    box: str | None
    tests: tuple[tuple[str, str | None], ...]  # (test id, domain)
    reason: str | None = None  # why no test here can decide it (UNVERIFIABLE only)
    quote: str | None = None  # the book's statements: the words of the chapter's sentence

    @property
    def about_data(self) -> bool:
        """Whether this is one of the book's statements about its data (source kind :data:`BOOK`)."""
        return is_book_source(self.source)


def is_book_source(source: str | None) -> bool:
    """Whether a marker's source is the book itself (``"book: <data>"``)."""
    return bool(source) and source.partition(":")[0].strip() == BOOK


def paper_source(source: str | None) -> tuple[str, str] | None:
    """``(bibkey, where)`` of a paper's claim (``"paper: lu2025moba §3.1"``), else ``None``."""
    if not source or source.partition(":")[0].strip() != PAPER:
        return None
    key, _, where = source.partition(":")[2].strip().partition(" ")
    return key, where.strip()


#: Claims the book repeats that no test on this machine can decide, with the reason.
NOT_VERIFIABLE = (
    Claim("002 §6.1", "Flash attention gives a 2-4x speedup for free (same result, fewer memory "
          "round trips)", UNVERIFIABLE, None, "08_flash", "corr-speedup", (),
          reason="a speed-up is a property of a GPU kernel on a GPU: the CPU reference here "
                 "checks that the result is the same (exactly the same maths) and that no "
                 "$L \\times S$ array is allocated, not the time; bench/ measures the Triton "
                 "kernel where a GPU is present, and the chapter shows the figures it recorded "
                 "on an NVIDIA H100 (`book/data/flash_gpu.json`), read from that file, which no "
                 "test on a machine without a GPU can measure again."),
)


#: Claims whose texts are nearly the same but which say different things, so their verdicts may
#: differ: (the start of one text, the start of the other, what separates them).
DISTINCT = (
    (r"Self-attention: $Q = K = V = X$, $\mathrm{attn}", "Self-attention: $Q = K = V = X$",
     "the first adds that the weights are the similarity of the tokens themselves, which is "
     "wrong; the second is right as the arguments of the projections"),
    ("Learned patterns: different layers learn", "Early layers attend locally",
     "the first states the layer order as a general insight, which is wrong; the second "
     "reports it as an observation about trained models"),
    ("Linear attention: $O(nd^2)$ instead", "Linear attention: two products",
     "the first counts $O(nd^2)$, which is right; the second concludes $O(nd)$, which is not"),
    ("Memory: $O(n^2)$ for the attention matrix", "The $O(n^2)$ attention matrix is the main",
     "the first states the size of the stored matrix, which is right; the second ranks it the "
     "main memory cost, which decoding contradicts"),
)

#: How alike two claim texts must be to count as one claim: the ratio of
#: :class:`difflib.SequenceMatcher` and the share of common words, both at least this.
NEAR_IDENTICAL = 0.42


def _words(text: str) -> str:
    """The words and numbers of a claim text, lower case; TeX commands and one-letter symbols,
    which every formula shares, dropped."""
    return " ".join(re.findall(r"[a-z0-9]{2,}", re.sub(r"\\[A-Za-z]+", " ", text).lower()))


def _declared_distinct(a: str, b: str, distinct) -> bool:
    return any((a.startswith(x) and b.startswith(y)) or (a.startswith(y) and b.startswith(x))
               for x, y, _ in distinct)


def near_identical_claims(claims: list[Claim], distinct=DISTINCT) -> list[tuple[Claim, Claim]]:
    """Pairs of claims whose texts say nearly the same, except the pairs ``distinct`` names."""
    words = [_words(c.text) for c in claims]
    sets = [set(w.split()) for w in words]
    pairs = []
    for i, a in enumerate(claims):
        for j in range(i + 1, len(claims)):
            union = sets[i] | sets[j]
            common = len(sets[i] & sets[j]) / len(union) if union else 0.0
            if common < NEAR_IDENTICAL:  # the cheap measure first: both must reach the threshold
                continue
            ratio = difflib.SequenceMatcher(None, words[i], words[j]).ratio()
            if ratio >= NEAR_IDENTICAL and not _declared_distinct(a.text, claims[j].text, distinct):
                pairs.append((a, claims[j]))
    return pairs


def _asserts(node: ast.AST, helpers: dict[str, ast.FunctionDef], seen: set[str]) -> bool:
    """Whether ``node`` asserts: an ``assert``, a call of ``assert*`` or ``pytest.raises``, or a
    call of a helper of the same module that does."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Assert):
            return True
        if isinstance(sub, ast.Call):
            f = sub.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if name.startswith(("assert", "check_gradient")) or name in ("raises", "warns"):
                return True
            if name in helpers and name not in seen:
                seen.add(name)
                if _asserts(helpers[name], helpers, seen):
                    return True
    return False


def draws_with_hypothesis(test: str, root: str | Path = ROOT) -> bool:
    """Whether the test ``tests/...py::name`` draws its inputs with hypothesis (``@given``)."""
    path, _, name = test.partition("::")
    file = Path(root) / path
    stat = file.stat()
    found = _hypothesis_tests(file, stat.st_mtime_ns, stat.st_size)
    if name not in found:
        raise LookupError(test)
    return found[name]


@functools.lru_cache(maxsize=256)
def _hypothesis_tests(path: Path, mtime_ns: int, size: int) -> dict[str, bool]:
    """Each top-level function of the file ``path`` (as of its modification time and size):
    whether it draws with hypothesis (``@given``). A file is parsed once, not once per test."""
    found: dict[str, bool] = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef):
            found.setdefault(node.name, any(isinstance(d, ast.Call) and getattr(d.func, "id", None) == "given"
                                            for d in node.decorator_list))
    return found


def claim_tests_without_assertions(tests_dir: str | Path | None = None) -> list[str]:
    """The claim tests whose body (or a helper it calls) asserts nothing."""
    tests_dir = Path(tests_dir) if tests_dir else Path(__file__).resolve().parent
    missing = []
    for path in sorted({m.test.partition("::")[0] for m in collect_markers(tests_dir)}):
        tree = ast.parse((tests_dir.parent / path).read_text())
        helpers = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        for m in collect_markers(tests_dir):
            name = m.test.partition("::")[2]
            if m.test.startswith(path + "::") and not _asserts(helpers[name], helpers, {name}):
                missing.append(m.test)
    return sorted(set(missing))


def _const(node):
    return node.value if isinstance(node, ast.Constant) else None


def _claim_markers(decorators):
    for dec in decorators:
        if not isinstance(dec, ast.Call):
            continue
        f = dec.func
        if isinstance(f, ast.Attribute) and f.attr == "claim" and isinstance(f.value, ast.Attribute) \
                and f.value.attr == "mark":
            names = ["source", "text", "verdict", "correction"]
            values = dict(zip(names, (_const(a) for a in dec.args)))
            values.update({k.arg: _const(k.value) for k in dec.keywords})
            yield dec.lineno, values


def collect_markers(tests_dir: str | Path | None = None) -> list[Marker]:
    """Every ``claim`` marker under ``tests_dir`` (default: this folder), in file order."""
    tests_dir = Path(tests_dir) if tests_dir else Path(__file__).resolve().parent
    markers = []
    for path in sorted(tests_dir.rglob("test_*.py")):
        stat = path.stat()  # a file is parsed again only when it changed (a book build asks often)
        markers += _file_markers(path, tests_dir.parent, stat.st_mtime_ns, stat.st_size)
    return sorted(markers, key=lambda m: (m.test.partition("::")[0], m.line))


@functools.lru_cache(maxsize=1024)
def _file_markers(path: Path, root: Path, mtime_ns: int, size: int) -> tuple[Marker, ...]:
    """The claim markers of one test file (as of its modification time and size)."""
    text = path.read_text()
    if "claim" not in text:  # no marker: no need to parse it
        return ()
    markers = []
    for node in ast.walk(ast.parse(text, filename=str(path))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            for line, v in _claim_markers(node.decorator_list):
                chapter = v.get("chapter") or MODULE_CHAPTER.get(path.stem)
                markers.append(Marker(v.get("source"), v.get("text"), v.get("verdict"),
                                      v.get("correction"), v.get("domain"), chapter, v.get("box"),
                                      f"{path.relative_to(root).as_posix()}::{node.name}", line,
                                      v.get("quote")))
    return tuple(markers)


def _source_key(source: str):
    doc, _, section = (source or "").partition(" ")
    digits = "".join(ch if ch.isdigit() or ch == "." else " " for ch in section).split()
    numbers = tuple(int(p) for p in digits[0].split(".") if p) if digits else ()
    return doc, (0, numbers) if section.startswith("§") else (1, ()), section


def collect_claims(tests_dir: str | Path | None = None, *, with_unverifiable: bool = True) -> list[Claim]:
    """The claims, one per (source, text), in chapter order and, within a chapter, source order."""
    groups: dict[tuple[str, str], list[Marker]] = {}
    for m in collect_markers(tests_dir):
        groups.setdefault((m.source, m.text), []).append(m)
    claims = []
    for (source, text), ms in groups.items():
        first = ms[0]
        claims.append(Claim(source, text, first.verdict, first.correction, first.chapter,
                            next((m.box for m in ms if m.box), None),
                            tuple((m.test, m.domain) for m in ms),
                            quote=next((m.quote for m in ms if m.quote), None)))
    if with_unverifiable:
        claims.extend(NOT_VERIFIABLE)
    order = list(CHAPTERS)
    return sorted(claims, key=lambda c: (order.index(c.chapter) if c.chapter in order else len(order),
                                         _source_key(c.source), c.text))


def inconsistent_groups(tests_dir: str | Path | None = None) -> list[str]:
    """Markers of one claim (same source and text) that disagree on verdict, correction or chapter."""
    groups: dict[tuple[str, str], list[Marker]] = {}
    for m in collect_markers(tests_dir):
        groups.setdefault((m.source, m.text), []).append(m)
    problems = []
    for (source, text), ms in groups.items():
        for field in ("verdict", "correction", "chapter", "quote"):
            if len({getattr(m, field) for m in ms}) > 1:
                problems.append(f"{source} {text!r}: the markers on {[m.test for m in ms]} disagree on {field}")
    return problems


def runs_every_claim_test(test_ids, tests_dir: str | Path | None = None) -> bool:
    """Whether the test ids ``test_ids`` (pytest node ids, ``[...]`` of a parametrised case
    allowed) hold every test that carries a claim marker under ``tests_dir``."""
    if isinstance(test_ids, (str, bytes)):
        raise TypeError("test_ids must be a collection of test ids, not one string")
    selected = {str(test_id).partition("[")[0] for test_id in test_ids}
    return all(m.test in selected for m in collect_markers(tests_dir))


def run_claim_tests(root: str | Path = ROOT, *, timeout: float = 300, only=None) -> dict[str, str]:
    """Run every test that carries a claim marker (or those of them whose ids ``only`` lists);
    return ``{test id: outcome}``.

    The outcome of a parametrised test is ``passed`` only when every case passed; otherwise it
    is the first of ``failed``, ``error``, ``skipped`` found. pytest runs in a subprocess with
    ``-m claim -p no:cacheprovider`` on the files that hold claim markers (or on the tests of
    ``only``), and its JUnit XML report is read back; a test id that does not appear in the
    report is ``not run``.
    """
    root = Path(root)
    markers = collect_markers(root / "tests")
    if only is not None:
        wanted = set(only)
        markers = [m for m in markers if m.test in wanted]
    if not markers:
        return {}
    files = sorted({m.test if only is not None else m.test.partition("::")[0] for m in markers})
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "claims.xml"
        cmd = [sys.executable, "-m", "pytest", *files, "-m", "claim", "-q", "-p", "no:cacheprovider",
               "--junitxml", str(report), "-o", "junit_family=xunit2"]
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=timeout, env=env)
        if not report.exists():
            raise RuntimeError(f"pytest wrote no report (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        tree = ET.parse(report)
    rank = {"passed": 0, "skipped": 1, "error": 2, "failed": 3}
    outcomes: dict[str, str] = {}
    for case in tree.iter("testcase"):
        module = case.get("classname", "").replace(".", "/") + ".py"
        test = f"{module}::{case.get('name', '').partition('[')[0]}"
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed"}.get(child.tag, child.tag)
        if rank[outcome] >= rank.get(outcomes.get(test, "passed"), 0):
            outcomes[test] = outcome
    return {m.test: outcomes.get(m.test, "not run") for m in markers}
