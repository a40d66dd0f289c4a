"""LMS downloads after a round trip through an operating system, and Canvas's entries that are no upload.

* ``canvas_entry_member``: the member Canvas's ``ContentZipper#add_text_or_url`` writes for an
  online-text or website-URL submission: the prefix of an upload (``get_filename``) and
  ``_text.html`` or ``_link.html``, with no attachment id; anonymous grading writes
  ``[LATE_]anon_<anonymous id>`` for the prefix (``LATE`` first).
* ``macos_rezip``: a download unzipped and compressed again with macOS's Finder (Archive Utility):
  an enclosing folder with its directory entry, names in UTF-8 decomposed as HFS+ stores them
  (NFD) **without** the zip's UTF-8 flag (bit 11), a ``.DS_Store``, and an AppleDouble twin
  ``__MACOSX/<folder>/._<name>`` of every file (so ``._*.ipynb`` files that are no notebook).
* ``windows_rezip``: the same with Windows Explorer's "Compressed (zipped) folder": names in the
  PC's OEM code page (cp850 in Western Europe), no UTF-8 flag, made-by MS-DOS.

Public issue threads give these behaviours (README.md of this folder, and the session's
clean-room MANIFEST: zip.js#131, ZIPFoundation#63, SharpZipLib#617). Pure standard library.
"""
from __future__ import annotations

import unicodedata
import zipfile
from datetime import datetime
from pathlib import Path

from .downloads import Student, _canvas_prefix

_UTF8_FLAG = 0x800
#: The start of an AppleDouble file (magic 0x00051607, version 2): what ``._name`` twins hold.
APPLEDOUBLE = b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        " + b"\x00" * 32


def canvas_entry_member(kind: str, *, sortable_name: str | None = None, user_id: int | None = None,
                        anonymous_id: str | None = None, late: bool = False) -> str:
    """The member name of a Canvas online-text (``kind="text"``) or URL (``"link"``) entry."""
    if kind not in ("text", "link"):
        raise ValueError(f"kind must be 'text' or 'link', not {kind!r}")
    if (anonymous_id is None) == (sortable_name is None or user_id is None):
        raise ValueError("give either anonymous_id, or sortable_name and user_id")
    if anonymous_id is not None:
        prefix = ("LATE_" if late else "") + f"anon_{anonymous_id}"
    else:
        prefix = _canvas_prefix(Student("", sortable_name, user_id, "", [], late))
    return f"{prefix}_{kind}.html"


class _RawInfo(zipfile.ZipInfo):
    """A member whose name is written as the given bytes, never with the UTF-8 flag (zipfile
    itself flags every non-ASCII name it writes)."""

    def __init__(self, raw: bytes, date_time: tuple, made_by: int):
        super().__init__(raw.decode("cp437"), date_time=date_time)
        self.raw = raw
        self.create_system = made_by
        self.external_attr = (0o40755 << 16) | 0x10 if raw.endswith(b"/") else 0o100644 << 16

    def _encodeFilenameFlags(self):  # noqa: N802 - zipfile's own name
        return self.raw, self.flag_bits & ~_UTF8_FLAG


def _write_raw(path: str | Path, members: list[tuple[bytes, bytes]], stamp: datetime, made_by: int) -> None:
    """A zip of ``members`` [(raw name, data)], checked to read back as those bytes, unflagged."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for raw, data in members:
            zf.writestr(_RawInfo(raw, stamp.timetuple()[:6], made_by), data)
    with zipfile.ZipFile(path) as zf:
        got = [(i.filename.encode("cp437"), i.flag_bits & _UTF8_FLAG) for i in zf.infolist()]
    if got != [(raw, 0) for raw, _ in members]:
        raise AssertionError(f"{path}: the zip does not hold the raw names asked for: {got}")


def _check(files: dict[str, bytes], folder: str) -> None:
    for name in [folder, *files]:
        if not name or "/" in name or "\\" in name:
            raise ValueError(f"files and folder need plain non-empty names without a slash, not {name!r}")


def macos_rezip(files: dict[str, bytes], path: str | Path, *, stamp: datetime, folder: str = "submissions") -> None:
    """``files`` (member name -> bytes, as the LMS named them) as Finder compresses their folder."""
    _check(files, folder)
    top = unicodedata.normalize("NFD", folder).encode("utf-8") + b"/"
    members = [(top, b"")]
    for name, data in files.items():
        members.append((top + unicodedata.normalize("NFD", name).encode("utf-8"), data))
    members.append((top + b".DS_Store", b"\x00\x00\x00\x01Bud1" + b"\x00" * 24))
    members += [(b"__MACOSX/", b""), (b"__MACOSX/" + top, b"")]
    for raw, _ in members[1:len(files) + 1]:
        members.append((b"__MACOSX/" + top + b"._" + raw[len(top):], APPLEDOUBLE))
    _write_raw(path, members, stamp, made_by=3)


def windows_rezip(files: dict[str, bytes], path: str | Path, *, stamp: datetime, folder: str = "submissions (1)",
                  codepage: str = "cp850") -> None:
    """``files`` as Windows Explorer's "Send to > Compressed folder" zips their folder."""
    _check(files, folder)
    top = folder.encode(codepage) + b"/"
    members = [(top, b"")] + [(top + name.encode(codepage), data) for name, data in files.items()]
    _write_raw(path, members, stamp, made_by=0)
