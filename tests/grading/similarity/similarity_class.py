"""The planted-copy class of ``01_softmax`` Part 1, and consistent renamings of its answers.

Used by ``tests/grading/test_similarity.py`` and ``bench/bench_similarity.py``.
"""

from __future__ import annotations

import io
import json
import keyword
import tokenize
from pathlib import Path

HERE = Path(__file__).resolve().parent
PART = "stable_softmax"
PLANTED = json.loads((HERE / "planted.json").read_text())[PART]  # copy -> [original, how]
ANSWERS = {p.stem: {PART: p.read_text()} for p in sorted((HERE / PART).glob("*.py"))}
KEEP = {"stable_softmax", "axis", "np", "math", "True", "False", "None", "self"}


def rename(code: str, salt: int) -> str:
    """Every name the code binds itself (assigned, a parameter, a loop variable) gets a new name."""
    toks = list(tokenize.generate_tokens(io.StringIO(code).readline))
    bound = {
        t.string
        for i, t in enumerate(toks)
        if t.type == tokenize.NAME
        and not keyword.iskeyword(t.string)
        and i + 1 < len(toks)
        and toks[i + 1].string in ("=", ",", ")", ":")
        and (i == 0 or toks[i - 1].string != ".")
    } - KEEP
    out = [(t.type, f"{t.string}_{salt}" if t.type == tokenize.NAME and t.string in bound else t.string)
           for t in toks]
    return tokenize.untokenize(out)
