"""TeX typeset by MathJax's own server-side package in one run of Node.js.

One mechanism for the two places that typeset mathematics ahead of the reader's browser: the
book's build (``book/_ext/attnmath_mathjax.py``) and attngrade's feedback pages
(:mod:`attngrade.texmath`). :func:`run_mathjax` hands a list of formulas to
``typeset_math.cjs`` (beside this file), which uses npm ``mathjax-full`` at the version of
``package.json``, installed into the repository's ``node_modules/`` by ``make book`` (or the
folder ``ATTNMATH_NODE_MODULES`` names). Without Node.js or that package
:func:`renderer_available` is False and callers keep their TeX for MathJax in the browser.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

__all__ = ["ROOT", "SCRIPT", "node_modules", "renderer_available", "renderer_digest", "run_mathjax"]

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).resolve().parent / "typeset_math.cjs"


def node_modules() -> Path:
    """Where ``mathjax-full`` is installed: ``$ATTNMATH_NODE_MODULES`` or ``<repository>/node_modules``."""
    return Path(os.environ.get("ATTNMATH_NODE_MODULES", ROOT / "node_modules"))


def renderer_available() -> bool:
    """Whether Node.js and the MathJax package are here to typeset now."""
    return shutil.which("node") is not None and (node_modules() / "mathjax-full").is_dir()


def renderer_digest() -> hashlib._Hash:
    """A digest of what every formula's markup depends on besides its TeX: the script and the
    installed MathJax's version (callers add their macros and font address)."""
    package = node_modules() / "mathjax-full" / "package.json"
    digest = hashlib.sha256(SCRIPT.read_bytes())
    digest.update(package.read_bytes() if package.is_file() else b"")
    return digest


def run_mathjax(formulas: list[tuple[str, bool]], macros: dict, font_url: str, timeout: float = 600) -> dict:
    """Typeset ``formulas`` (``(TeX, displayed)`` pairs) with MathJax in Node.js.

    Returns ``{"html": [markup or None], "errors": [message or None], "css": stylesheet}``, one
    entry per formula; the stylesheet's ``@font-face`` rules load MathJax's fonts from
    ``font_url``. RuntimeError when Node.js fails.
    """
    request = {"macros": macros, "fontURL": font_url, "formulas": [list(f) for f in formulas]}
    env = {**os.environ, "NODE_PATH": str(node_modules())}
    done = subprocess.run(["node", str(SCRIPT)], input=json.dumps(request), capture_output=True,
                          text=True, env=env, check=False, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"MathJax (node {SCRIPT.name}) failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout)
