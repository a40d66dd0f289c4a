"""Probe: how attnmath answers bad input, counted over its whole public surface.

Usage::

    python bench/probe_bad_input.py            # counts, then one line per call that was not clear
    python bench/probe_bad_input.py --quiet    # counts only

The calls are those of ``tests/attnmath/test_bad_input.py`` (the surface is read from the
package: every public function, constructor and method that takes an argument; for each, bad
values derived from one valid call argument by argument, plus bad calls listed by hand;
``attnmath.flash_triton`` is probed in a child process when Triton is installed). Each
call is classified by that file's ``outcome``: *clear* (a ``TypeError``/``ValueError`` raised
inside attnmath naming the argument), *obscure* (an error from deep inside NumPy or torch, another
exception type, or a message not naming the argument), *silent* (a result) and *unannounced
NaN* (a result holding NaN). Writes ``bench/results/bad_input.json``.

This is a measurement, not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import warnings
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _load_cases():
    path = ROOT / "tests" / "attnmath" / "test_bad_input.py"
    spec = importlib.util.spec_from_file_location("bad_input_cases", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quiet", action="store_true", help="print the counts only")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "bad_input.json")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    cases = _load_cases()
    rows = []
    for case in cases.CASES:
        kind, message = cases.outcome(case)
        rows.append({"call": cases._label(case), "outcome": kind, "message": message[:200]})
    surface = cases.public_surface()
    if importlib.util.find_spec("triton") is not None:  # flash_triton, in a child process
        proc = cases.start_triton_child()
        try:
            triton_surface, _, triton_rows = cases.triton_outcomes(proc)
        finally:
            proc.close()
        surface |= triton_surface
        rows += [{"call": label, "outcome": kind, "message": message[:200]}
                 for label, kind, message in triton_rows]
    counts = Counter(r["outcome"] for r in rows)
    callables = {r["call"].split("[")[0] for r in rows}
    summary = {"public callables": len(surface), "callables probed": len(callables),
               "calls": len(rows), **{k: counts.get(k, 0) for k in
                                      ("clear", "obscure", "silent", "unannounced NaN")}}
    print(json.dumps(summary, indent=1))
    if not args.quiet:
        for r in rows:
            if r["outcome"] != "clear":
                print(f"{r['outcome']:16} {r['call']}: {r['message']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"summary": summary, "not clear": [r for r in rows if r["outcome"] != "clear"]},
                                   indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
