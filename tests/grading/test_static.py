"""The static check of answer cells: honest answers pass, tricks are found."""

from __future__ import annotations

import re

import pytest

import gradingkit as gk
from attngrade.notebooks import read_answer_script
from attngrade.spec import load_cases
from attngrade.staticcheck import REFERENCE_MODULES, analyse_cell, part_dependencies, to_python


def _kinds(source: str) -> set[str]:
    return {f.kind for f in analyse_cell(source, module_names={"np", "math"}).findings}


@pytest.mark.parametrize("assignment", gk.ASSIGNMENTS)
def test_honest_answers_have_no_findings(assignment):
    sources = list(gk.solution_answers(assignment).values())
    for sample in ("alternative", "partial", "raising"):
        path = gk.SAMPLES / assignment / f"{sample}.py"
        if path.is_file():
            sources.extend(read_answer_script(path)[0].values())
    # as the grader reads them: what the assignment allows (17: torch) is no reference there
    allowed = getattr(load_cases(gk.SOLUTIONS / assignment), "ALLOWED_MODULES", ())
    reference = REFERENCE_MODULES - set(allowed)
    for source in sources:
        assert not analyse_cell(source, reference=reference, module_names={"np", "math"}).findings, source


@pytest.mark.parametrize(
    "source, kind",
    [
        ("import attnmath", "reference"),
        ("from attnmath.softmax import softmax", "reference"),
        ("import torch.nn.functional as F", "reference"),
        ("from scipy.special import softmax", "reference"),
        ("m = __import__('attn' + 'math')", "forbidden"),
        ("import importlib\nm = importlib.import_module('x')", "forbidden"),
        ("exec('import attnmath')", "review"),
        ("f = eval", "review"),
        ("g = globals()['__builtins__']", "forbidden"),
        ("x = ().__class__.__bases__[0].__subclasses__()", "forbidden"),
        ("import sys\nsys.modules['numpy'].x = 1", "forbidden"),
        ("import sys\nsys.meta_path.clear()", "forbidden"),
        ("import tracemalloc", "review"),
        ("open('/course/solutions/01_softmax/hidden_tests.py').read()", "course"),
        ("import sqlite3\nsqlite3.connect('gradebook.db')", "course"),
        ("np.allclose = lambda *a, **k: True", "tampering"),
        ("setattr(np, 'exp', abs)", "tampering"),
        ("get_ipython().input_transformers_post.append(f)", "tampering"),
        ("import ast\nclass T(ast.NodeTransformer):\n    pass", "tampering"),
        ("import os\nos.write(3, b'x')", "tampering"),
        ("from IPython import get_ipython", "tampering"),
        ("!cat ../solutions/01_softmax/hidden_tests.py", "course"),  # a shell escape runs now
    ],
)
def test_tricks_are_found(source, kind):
    assert kind in _kinds(source)


@pytest.mark.parametrize(
    "source",
    [
        "def f(x):\n    '''Unlike torch.softmax and attnmath, this is mine.'''\n    return np.exp(x)",
        "import warnings\nwarnings.warn('numerically delicate')",
        "import math\nmath.exp(1.0)",
        "print('the gradebook is not my business')",
        "x = np.einsum('i,j->ij', a, b)",
        "import sys\nprint('done', file=sys.stderr)",
        "from IPython.display import display, HTML\ndisplay(HTML('<b>p</b>'))",
    ],
)
def test_ordinary_code_is_not_flagged(source):
    assert not _kinds(source)


@pytest.mark.parametrize(
    "source",
    [
        "def f(x):\n    return globals()['np'].exp(x)",
        "vars = {'scale': 2.0}\ndef f(x):\n    return x * vars['scale']",
        "def f(x):\n    return getattr(np, 'exp')(x)",
        "def f(x):\n    return vars(x) if hasattr(x, '__dict__') else x",
        "import inspect\nprint(inspect.signature(len))",
        "def f(x):\n    return eval('x + 1')",
    ],
)
def test_ordinary_introspection_is_only_listed_for_review(source):
    findings = analyse_cell(source, module_names={"np", "math"}).findings
    assert {f.kind for f in findings} <= {"review"}
    assert all(re.search(r"\(line \d+\)$", f.message) for f in findings)


def test_findings_name_their_line():
    (finding,) = analyse_cell("x = 1\n\nimport importlib\n").findings
    assert finding.kind == "forbidden" and finding.message.endswith("(line 3)")


def test_magics_are_removed_and_cell_magic_bodies_kept():
    python, notes = to_python("%%time\nx = 1\n%timeit x\n!ls\ny = !ls\n")
    assert "x = 1" in python and "get_ipython" not in python and notes


def test_a_part_depends_on_the_cells_its_function_uses():
    cells = [
        (gid, analyse_cell(src))
        for gid, src in [
            ("a", "import torch\ndef helper(x):\n    return x"),
            ("b", "def f(x):\n    return helper(x) + np.sum(x)"),
            ("c", "def g(x):\n    return np.sum(x)"),
        ]
    ]
    assert part_dependencies("f", cells, {"np"}) == ["b", "a"]
    assert part_dependencies("g", cells, {"np"}) == ["c"]


@pytest.mark.parametrize(
    "cell, python",
    [
        ("%time x = f(1)\n", "x = f(1)"),  # %time runs its statement in the notebook's namespace
        ("y = %time f(2)\n", "y = f(2)"),  # and gives the value of its expression
        ("%%time\nz = 3\n%time w = z\n", "z = 3\nw = z"),
        ("%timeit f(1)\nv = 1\n", "pass\nv = 1"),  # timeit keeps nothing in the namespace
        ("%%writefile -a helper.py\nA = 1\n", "open('helper.py', 'a', encoding='utf-8').write('A = 1\\n')"),
        ("files = !ls\n", "files = _shell_escape('ls', True, 'sh')"),
        ("!echo {x}\n", "_shell_escape('echo {x}', False, 'sh')"),
        ("%%bash\necho hi\n", "_shell_escape('echo hi\\n', False, 'bash')"),
    ],
)
def test_ipython_runs_as_the_kernel_runs_it(cell, python):
    assert to_python(cell)[0] == python


def test_a_module_written_by_writefile_is_the_code_of_its_cell():
    writer = analyse_cell("%%writefile helper.py\nimport torch\n\ndef f(x):\n    return torch.softmax(x, 0)\n")
    assert "helper" in writer.defines and "f" not in writer.defines
    assert {f.kind for f in writer.findings} == {"reference"}, "a reference in the module is the cell's"
    cells = [("w", writer), ("a", analyse_cell("from helper import f\n\ndef g(x):\n    return f(x)\n"))]
    assert part_dependencies("g", cells, {"np"}) == ["a", "w"]
    python, notes = to_python("%%writefile\nA = 1\n")
    assert python == "pass" and "no file name; not written" in notes[0]
