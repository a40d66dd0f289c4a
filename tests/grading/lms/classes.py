"""A realistic class of twelve for the LMS fixtures: namesakes, copies, renames, a resubmission, late work."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Callable

from .downloads import NOTEBOOK, Student, Upload

CST = timezone(timedelta(hours=-6), "CST")
DUE_AT = datetime(2024, 3, 8, 23, 59, tzinfo=CST)
DOWNLOADED_AT = DUE_AT + timedelta(days=30, hours=10, minutes=17, seconds=42)  # long after the due date

def _after(days: int = 0, hours: int = 0, minutes: int = 0, seconds: int = 0) -> timedelta:
    """An upload time relative to the due date (negative: before it)."""
    return timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)


# file names as students produce them, from the notebook's stem ("attention")
_PLAIN, _COPY = "{stem}.ipynb", "{stem}-Copy1.ipynb"
_TWICE, _RENAMED = "{Stem} (2).ipynb", "my_{stem}_final.ipynb"

# full name, sortable name, user id, login, [(file name, upload time - due), ...], late, extension
_ROSTER = [
    ("Minh Nguyen", "Nguyen, Minh", 40101, "mnguyen7", [(_PLAIN, _after(hours=-26, minutes=-3, seconds=-27))],
     False, None),
    ("Minh Nguyen", "Nguyen, Minh", 40102, "mnguyen12", [(_PLAIN, _after(minutes=-41, seconds=-9))],
     False, None),
    ("Priya Raman", "Raman, Priya", 40103, "praman", [(_COPY, _after(hours=-5, seconds=-31))], False, None),
    ("Aisha Bello", "Bello, Aisha", 40104, "abello", [(_RENAMED, _after(days=-1, hours=-2, seconds=-44))],
     False, None),
    ("Carlos Mendoza", "Mendoza, Carlos", 40105, "cmendoza",
     [(_PLAIN, _after(days=-3, hours=-4, minutes=-12, seconds=-5)),
      (_PLAIN, _after(hours=-1, minutes=-5, seconds=-17))], False, None),
    ("Emily Chen", "Chen, Emily", 40106, "echen3", [(_PLAIN, _after(minutes=7, seconds=12))], True, None),
    ("Tomás Herrera", "Herrera, Tomás", 40107, "therrera",
     [(_TWICE, _after(days=1, hours=3, minutes=1, seconds=36))], True, None),
    ("Hannah Kim", "Kim, Hannah", 40108, "hkim", [(_PLAIN, _after(days=1, hours=9, minutes=30, seconds=51))],
     False, timedelta(days=3)),
    ("Jonas Müller", "Müller, Jonas", 40109, "jmuller",
     [(_PLAIN, _after(hours=-8, minutes=-44, seconds=-19))], False, None),
    ("Lan Nguyễn", "Nguyễn, Lan", 40110, "lnguyen", [(_PLAIN, _after(hours=-2, minutes=-2, seconds=-2))],
     False, None),
    ("Seán O'Brien-Smith", "O'Brien-Smith, Seán", 40111, "sobriensmith",
     [(_PLAIN, _after(minutes=-3, seconds=-58))], False, None),
    ("Oliver Smith", "Smith, Oliver", 40112, "osmith",
     [(_PLAIN, _after(days=-6, hours=-13, minutes=-20, seconds=-33))], False, None),
]


def ordinary_class(notebook_bytes_for: Callable[[str], bytes], *, notebook: str = NOTEBOOK,
                   due_at: datetime = DUE_AT) -> list[Student]:
    """The class, with ``notebook_bytes_for(f"{user_id}-{n}")`` as the n-th upload of each student (n from 1).

    Students 40101/40102 are namesakes; 40103 handed in Jupyter's "Make a Copy"; 40104 renamed the file;
    40105 resubmitted under the same name; 40106 is late by seven minutes and 40107 by a day (a browser's
    "(2)" copy); 40108 uploaded after the due date but within an extension; 40112 handed in days early.
    """
    if not callable(notebook_bytes_for):
        raise TypeError("notebook_bytes_for must be a callable taking a key and returning bytes")
    if not notebook.endswith(".ipynb"):
        raise ValueError(f"notebook must be a .ipynb file name, got {notebook!r}")
    stem = notebook[: -len(".ipynb")]
    students = []
    for full, sortable, uid, login, files, late, extension in _ROSTER:
        uploads = []
        for n, (pattern, offset) in enumerate(files, start=1):
            name = pattern.format(stem=stem, Stem=stem.capitalize())
            content = notebook_bytes_for(f"{uid}-{n}")
            if not isinstance(content, bytes):
                kind = type(content).__name__
                raise TypeError(f"notebook_bytes_for('{uid}-{n}') returned {kind}, not bytes")
            uploads.append(Upload(name, content, due_at + offset))
        students.append(Student(full, sortable, uid, login, uploads, late,
                                extension_until=due_at + extension if extension else None))
    return students
