"""How much an assignment's feedback reveals of a failing hidden case, and from when.

By default nothing: the page names the case's kind, what failed and the visible check's hint
(:mod:`attngrade.feedback`), never its inputs. An assignment may reveal more once a time has
passed, in the course's ``nbgrader_config.py``::

    c.AttnGrade.reveal = {
        "01_softmax": {"after": "2026-12-20 23:59 UTC", "what": "failing inputs"},
        "02_attention": {"after": "2027-01-10 12:00", "what": "failing inputs and expected output"},
    }

``what`` is one of :data:`LEVELS`; ``after`` is read as a deadline is (:func:`attngrade.late.read_time`:
a time without a zone is in the course's zone). The inputs are never stored anywhere new: the
grader makes the hidden cases itself (from the course secret), and the page of a part that
failed at a case gets that case's inputs (and its expected output, at the second level) only when
the page is written after ``after``, that is, at grading time. A page written before stays as
it is; to reveal to everyone after that time, grade again with ``--force`` (a re-grade keeps the
pages of unchanged submissions). The hidden cases are the same for every student, so ``after``
must come after the last extension of the assignment.

What a revealed case shows: each input's dtype, shape and values (NumPy's summary of a large
array), a download of all of them as one ``.npz`` file (exact values; left out above
:data:`MAX_DOWNLOAD` bytes) and the one line of Python that calls the answer on them.
"""

from __future__ import annotations

import base64
import html
import io
from dataclasses import dataclass
from datetime import datetime, timezone

import numpy as np

from .names import shown

__all__ = ["LEVELS", "MAX_DOWNLOAD", "Reveal", "reveal_policy", "case_inputs", "inputs_html"]

#: What an assignment may reveal of a failing hidden case once its time has passed.
LEVELS = ("nothing", "failing inputs", "failing inputs and expected output")
#: The largest ``.npz`` download written into a page (bytes).
MAX_DOWNLOAD = 2 * 2**20


@dataclass(frozen=True)
class Reveal:
    """An assignment's setting: from ``after`` (UTC; None: never), reveal ``what``."""

    after: datetime | None = None
    what: str = "nothing"

    def shown(self, now: datetime) -> bool:
        """Whether a page written at ``now`` (aware) shows the failing inputs."""
        return self.what != "nothing" and self.after is not None and now >= self.after

    @property
    def expected(self) -> bool:
        return self.what == LEVELS[2]


def reveal_policy(config, assignment: str, zone=None) -> Reveal:
    """The setting of ``assignment`` in ``c.AttnGrade.reveal`` (module docstring); ``Reveal()``
    (never) without one. ValueError naming the setting where it cannot be read."""
    from .late import course_zone, read_time

    if config is None or "AttnGrade" not in config or "reveal" not in config.AttnGrade:
        return Reveal()
    table = config.AttnGrade.reveal
    if not isinstance(table, dict):
        raise ValueError(f"c.AttnGrade.reveal must be a dict of assignment -> setting, got {table!r}")
    entry = table.get(assignment)
    if entry is None:
        return Reveal()
    where = f"c.AttnGrade.reveal[{assignment!r}]"
    if not isinstance(entry, dict) or set(entry) - {"after", "what"} or "what" not in entry:
        raise ValueError(f"{where} must be a dict with 'what' (one of {', '.join(LEVELS)}) and 'after' "
                         f"(a time), got {entry!r}")
    what = entry["what"]
    if what not in LEVELS:
        raise ValueError(f"{where}['what'] must be one of {', '.join(repr(w) for w in LEVELS)}, got {what!r}")
    if what == "nothing":
        return Reveal()
    if not isinstance(entry.get("after"), str):
        raise ValueError(f"{where}['after'] must be a time such as '2026-12-20 23:59 UTC', "
                         f"got {entry.get('after')!r}")
    try:
        after = read_time(entry["after"], zone or course_zone(config))
    except ValueError as exc:
        raise ValueError(f"{where}['after']: {exc}") from exc
    return Reveal(after.astimezone(timezone.utc), what)


# ----------------------------------------------------------------------------- the case on the page


def case_inputs(case, function: str, expected: bool = False) -> tuple[str, dict]:
    """``(call, arrays)``: the line of Python that calls ``function`` on the case's inputs, read
    from ``d = np.load(...)``, and the arrays it reads by name (the expected output's under
    ``expected`` where asked)."""
    arrays: dict = {}

    def literal(value, name: str, depth: int = 0) -> str:
        if isinstance(value, np.ndarray):
            arrays[name] = value
            return f'd["{name}"]'
        if isinstance(value, (tuple, list)) and depth < 4:
            items = [literal(v, f"{name}_{i}", depth + 1) for i, v in enumerate(value)]
            if isinstance(value, list):
                return "[" + ", ".join(items) + "]"
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        return repr(value)

    parts = [literal(v, f"arg{i}") for i, v in enumerate(case.args)]
    parts += [f"{k}={literal(v, f'kw_{k}')}" for k, v in case.kwargs.items()]
    if expected:
        literal(_as_arrays(case.expected), "expected")
    return f"{function}({', '.join(parts)})", arrays


def _as_arrays(value, depth: int = 0):
    """An expected output with its numbers as arrays (a tuple of numbers: a tuple of 0-d arrays)."""
    if isinstance(value, (tuple, list)) and depth < 4:
        return tuple(_as_arrays(v, depth + 1) for v in value)
    try:
        return np.asarray(value) if not isinstance(value, (str, bytes)) and value is not None else value
    except (TypeError, ValueError):
        return value


def _e(text) -> str:
    """Escaped printable text, line by line (its line breaks kept for a ``<pre>``)."""
    return "\n".join(html.escape(shown(line)) for line in str(text).split("\n"))


def _preview(value: np.ndarray) -> str:
    with np.printoptions(threshold=200, edgeitems=3, precision=8, linewidth=100):
        return np.array2string(value, separator=", ")


def inputs_html(case, function: str, name: str, setting: Reveal) -> str:
    """The failing case on a page written after ``setting.after`` (module docstring); ``name``:
    the download's file name (``part1_case12.npz``)."""
    call, arrays = case_inputs(case, function, setting.expected)
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    data = buf.getvalue()
    when = setting.after.strftime("%Y-%m-%d %H:%M UTC")
    out = [f"<details open class='revealed'><summary>The failing case's inputs (shown since {_e(when)}, "
           "as this assignment's settings allow)</summary>"]
    for key, value in arrays.items():
        out.append(f"<p><code>{_e(key)}</code>: {_e(value.dtype)}, shape {_e(value.shape)}</p>"
                   f"<pre class='code'>{_e(_preview(value))}</pre>")
    if len(data) <= MAX_DOWNLOAD:
        code = f'import numpy as np\nd = np.load("{name}")\nout = {call}'
        out.append(f"<p><a download='{_e(name)}' href='data:application/octet-stream;base64,"
                   f"{base64.b64encode(data).decode()}'>Download {_e(name)}</a> (the exact values), then:</p>"
                   f"<pre class='code'>{_e(code)}</pre>")
    else:
        out.append(f"<p>The arrays are too large to download from this page ({len(data) / 2**20:.1f} MiB); "
                   f"the call was <code>{_e(call)}</code>.</p>")
    out.append("</details>")
    return "\n".join(out)
