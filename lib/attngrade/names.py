"""Text that students control (file and folder names, ids), made safe to show, store and export.

* :func:`shown`: any name as printable text. Bytes that are not UTF-8 (a folder unpacked from a
  Windows zip) appear as ``\\xff``, control characters and bidirectional overrides as ``\\u202e``;
  writing it to a UTF-8 file, a terminal or HTML never fails.
* :func:`student_ids`: the ids of a class's names. An id keeps every letter, combining mark and
  digit of the name (Unicode NFC: ``मीना`` and ``मोना`` stay two students), runs of whitespace
  become ``_`` and other characters ``_``; it is at most :data:`MAX_ID_BYTES` bytes of UTF-8,
  because ids become file names. Two different names never give one id: where two names would
  (``Anna Müller`` and ``Anna_Müller``) or a name is cut to fit, the id ends with ``~`` and a hash
  of the name, and ``~`` is a character that no plain id holds.
* :func:`csv_cell`: OWASP's rule for CSV from untrusted input: a field that begins with
  ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a leading ``'`` so that no
  spreadsheet reads it as a formula; :func:`csv_cell_text` reads such a field back.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable

__all__ = [
    "shown", "base_id", "student_ids", "distinct_ids", "csv_cell", "csv_cell_text", "clip_bytes", "MAX_ID_BYTES",
]

#: The longest id in bytes of UTF-8 (file names hold 255; the id gets ``.html``, ``.json``...).
MAX_ID_BYTES = 120
_HASH_CHARS = 12
_KEEP = frozenset("_.@+-")
_FORMULA = ("=", "+", "-", "@", "\t", "\r")
_BIDI = frozenset("\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _raw_bytes(text: str) -> bytes:
    """The bytes a name stood for (undecodable bytes come back as they were)."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def shown(text: str) -> str:
    """``text`` as printable UTF-8: undecodable bytes and control characters escaped."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    if any("\ud800" <= ch <= "\udfff" for ch in text):
        text = _raw_bytes(text).decode("utf-8", "backslashreplace")
    out = []
    for ch in text:
        cat = unicodedata.category(ch)
        if cat in ("Cc", "Zl", "Zp", "Cs") or ch in _BIDI:
            out.append(f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


def clip_bytes(text: str, limit: int) -> str:
    """The longest prefix of ``text`` that is at most ``limit`` bytes of UTF-8."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", "ignore")


def base_id(name: str) -> str:
    """The plain id of one name (before :func:`student_ids` makes a class's ids distinct)."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, not {type(name).__name__}")
    text = re.sub(r"\s+", "_", unicodedata.normalize("NFC", shown(name)).strip())
    kept = "".join(ch if unicodedata.category(ch)[0] in "LMN" or ch in _KEEP else "_" for ch in text)
    return kept.strip("._")


def _identity(name: str) -> str:
    return unicodedata.normalize("NFC", name)


def _hashed(base: str, identity: str) -> str:
    digest = hashlib.sha256(_raw_bytes(identity)).hexdigest()[:_HASH_CHARS]
    return f"{clip_bytes(base or 'unnamed', MAX_ID_BYTES - _HASH_CHARS - 1)}~{digest}"


def distinct_ids(labels: dict) -> dict:
    """Each key's id from its label (``{key: label}``); different keys always get different ids.

    A key is a name (str) or a tuple such as ``("canvas", "2036")`` (an LMS user); the id is the
    label's :func:`base_id`, or where two keys' labels give one id (or the id is too long), that
    id cut to fit with ``~`` and a hash of the key (of the name itself for a str key)."""
    bases = {key: base_id(label) for key, label in labels.items()}
    count = Counter(bases.values())
    ids = {}
    for key, base in bases.items():
        plain = base and count[base] == 1 and len(base.encode("utf-8")) <= MAX_ID_BYTES
        identity = _identity(key) if isinstance(key, str) else "\x00".join(map(str, key))
        ids[key] = base if plain else _hashed(base, identity)
    return ids


def student_ids(names: Iterable[str]) -> dict[str, str]:
    """Each name's id (keys: the names in NFC); different names always get different ids."""
    names = list(dict.fromkeys(_identity(n) for n in names))
    return distinct_ids({n: n for n in names})


def csv_cell(text: str) -> str:
    """A CSV field from untrusted text that no spreadsheet turns into a formula (OWASP)."""
    text = str(text)
    return ("'" if text.startswith(_FORMULA) else "") + shown(text)


def csv_cell_text(field: str) -> str:
    """A field as :func:`csv_cell` wrote it, read back: without the ``'`` put before a formula
    character (a text that itself began with ``'`` and such a character loses its quote too)."""
    if not isinstance(field, str):
        raise TypeError(f"field must be a str, not {type(field).__name__}")
    return field[1:] if field.startswith("'") and field[1:].startswith(_FORMULA) else field
