"""Feedback pages returned through the LMS: ``attngrade ... --return canvas|moodle``.

``OUT/return-<lms>.zip`` holds each student's page (``OUT/feedback/<student>.html``, which shows
its maths and code with nothing beside it: :mod:`attngrade.report`) under the name that LMS's
bulk upload of feedback reads to find the student, and ``OUT/return-<lms>.csv`` lists every
student with the name their page was given or why it could not be placed: no page is left out
without a line saying so.

* **Canvas**, *Assignment > Upload Submission Comments* (Canvas's "Re-Upload Submissions"): each
  file becomes a comment with the file attached on the student's submission. Canvas reads the
  student from the file's own name (folders play no part): the name split at ``_``, without
  ``LATE`` pieces, gives the user id and the attachment id as its first two all-digit pieces, or
  ``anon_<anonymous id>_<attachment id>`` for anonymous grading; the attachment must be a file of
  that student's current submission, else the file is ignored (canvas-lms
  ``app/models/abstract_assignment.rb``, ``infer_comment_context_from_filename`` and
  ``generate_comments_from_files``). So a page is named after the graded file's download name,
  ``<name>[_late]_<user id>_<attachment id>_feedback.html``; a student whose file has no such name
  (nbgrader's layout, a renamed file) cannot be placed. Canvas shows the attached file under the
  name of the submitted file it matched (the attachment's ``display_name``).
* **Moodle**, *Assignment > View all submissions > Upload multiple feedback files in a zip* (the
  "Feedback files" feedback type): Moodle ignores names that begin with ``.`` or ``~`` and reads
  the participant from the first path part that, split at ``_`` into at most five pieces, has at
  least four with a number second: ``<full name>_<participant id>_<plugin type>_<plugin name>``,
  the folders of Moodle's own download (``assignsubmission_file``); the rest of the path is the
  feedback file's name (moodle ``mod/assign/feedback/file/importziplib.php``,
  ``is_valid_filename_for_import``). So each page goes into its student's folder as Moodle's
  download named it, or, for a file that was not in one, a folder made the same way from the
  participant id of the file name or of the ``--roster`` worksheet (a full name's ``_`` become
  spaces, as Moodle's download does, and the trailing ``_`` of downloads before Moodle 4.1 is
  kept, which every version reads).

Blackboard, Brightspace and Gradescope are refused by name (:data:`UNSUPPORTED`): attngrade
knows no documented rule by which they match bulk-uploaded feedback files to students, so it does
not guess; their instructors return ``OUT/feedback/<student>.html`` one by one.
"""

from __future__ import annotations

import csv
import re
import sys
import zipfile
from pathlib import Path, PurePosixPath

from .export import Roster, match, read_grades
from .names import csv_cell, shown

__all__ = ["KINDS", "UNSUPPORTED", "canvas_entry", "moodle_entry", "check_kind", "place", "write_zip", "class_step"]

KINDS = ("canvas", "moodle", "blackboard", "brightspace", "gradescope")
UNSUPPORTED = {
    kind: f"--return {kind}: attngrade knows no documented rule by which {title} matches bulk-uploaded "
    "feedback files to students, so it writes no file for it; return each OUT/feedback/<student>.html "
    f"by hand (each page stands alone), or use --export {export} for the grades"
    for kind, title, export in (("blackboard", "Blackboard", "canvas|moodle"),
                                ("brightspace", "Brightspace", "canvas|moodle"),
                                ("gradescope", "Gradescope", "canvas|moodle"))
}
FEEDBACK_NAME = "feedback.html"
_DIGITS = re.compile(r"[0-9]+")  # Ruby's /^\d+$/: ASCII digits


def check_kind(kind: str | None) -> None:
    """ValueError for a ``--return`` that attngrade cannot write (named in the message)."""
    if kind is None:
        return
    if kind not in KINDS:
        raise ValueError(f"--return must be one of {', '.join(KINDS)}, got {kind!r}")
    if kind in UNSUPPORTED:
        raise ValueError(UNSUPPORTED[kind])


def canvas_entry(file: str) -> str | None:
    """The name Canvas's comment upload matches to the student of ``file`` (the graded file as
    named in Canvas's download), or None when its name carries no user and attachment id."""
    name = PurePosixPath(str(file).replace("\\", "/")).name
    if name.startswith("._"):
        return None
    pieces = name.split("_")
    if pieces[0] == "anon":  # anonymous grading: anon_<anonymous id>_<attachment id>_...
        ok = len(pieces) >= 3 and pieces[1] and _DIGITS.fullmatch(pieces[2])
        return "_".join(pieces[:3]) + "_" + FEEDBACK_NAME if ok else None
    numbers = [i for i, p in enumerate(pieces) if _DIGITS.fullmatch(p)]  # ("LATE" is no number)
    if len(numbers) < 2:
        return None
    return "_".join(pieces[: numbers[1] + 1]) + "_" + FEEDBACK_NAME


def _moodle_part(part: str) -> bool:
    """Whether a path part names a participant as Moodle's importer reads it."""
    info = part.split("_", 4)
    return len(info) >= 4 and _DIGITS.fullmatch(info[1]) is not None and all(info[2:4])


def moodle_folder(name: str, participant: str) -> str:
    """A folder Moodle's feedback import reads as ``participant``'s, made as Moodle's download
    makes it (``_`` of the full name become spaces; ``/`` cannot be in a folder name)."""
    clean = re.sub(r"[\s_/\\]+", " ", shown(name)).strip(" .") or "Participant"
    return f"{clean}_{participant}_assignsubmission_file_"


def moodle_entry(file: str, person=None) -> str | None:
    """The zip path of the page of the student of ``file`` (as named in Moodle's download):
    ``<the download's folder>/feedback.html``, or a folder made from the participant id of the
    file name or of ``person`` (the roster's row); None when neither names a participant."""
    parts = [p for p in str(file).replace("\\", "/").split("/") if p]
    for i, part in enumerate(parts):
        if part.startswith((".", "~")) or not _moodle_part(part):
            continue
        info = part.split("_", 4)
        if i < len(parts) - 1:  # a folder of the download: the page goes into it as it is
            return f"{part}/{FEEDBACK_NAME}"
        return f"{moodle_folder(info[0], info[1])}/{FEEDBACK_NAME}"  # a flat file name
    if person is not None and person.lms_id and _DIGITS.fullmatch(person.lms_id):
        return f"{moodle_folder(person.name, person.lms_id)}/{FEEDBACK_NAME}"
    return None


def place(kind: str, rows: list, roster: Roster | None, *, notebook: str, assignment: str):
    """``[(student, zip path or None, why not)]``, one per ``grades.csv`` row."""
    people = {}
    if kind == "moodle" and roster is not None:
        pairs, _ = match(rows, roster.people, notebook, assignment, "moodle")
        people = {row["student"]: person for person, row in pairs if row is not None}
    placed, seen = [], {}
    for row in rows:
        student, file = row.get("student", ""), row.get("file", "")
        entry = canvas_entry(file) if kind == "canvas" else moodle_entry(file, people.get(student))
        why = ""
        if entry is None:
            why = (f"the graded file {file!r} has no Canvas user and attachment id in its name"
                   if kind == "canvas" else f"no Moodle participant id in {file!r} or the roster")
        elif entry in seen:
            why, entry = f"{entry} is already {seen[entry]}'s", None
        else:
            seen[entry] = student
        placed.append((student, entry, why))
    return placed


def write_zip(kind: str, out: Path, roster: Roster | None, *, notebook: str, assignment: str):
    """``OUT/return-<kind>.zip`` and ``OUT/return-<kind>.csv`` from ``OUT/grades.csv`` and the
    pages in ``OUT/feedback``; returns the zip's path and the ``(student, why)`` not placed."""
    out = Path(out)
    check_kind(kind)
    placed = place(kind, read_grades(out / "grades.csv"), roster, notebook=notebook, assignment=assignment)
    zip_path, missing = out / f"return-{kind}.zip", []
    with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as zf, \
            open(out / f"return-{kind}.csv", "w", newline="", encoding="utf-8-sig") as fh:
        listing = csv.writer(fh)
        listing.writerow(["student", "feedback page", "in the zip as", "not placed because"])
        for student, entry, why in placed:
            page = out / "feedback" / f"{student}.html"
            if entry is not None and not page.is_file():
                entry, why = None, "no feedback page was written"
            if entry is None:
                missing.append((student, why))
            else:
                zf.write(page, entry)
            listing.writerow([csv_cell(student), csv_cell(f"feedback/{student}.html"), csv_cell(entry or ""),
                              csv_cell(why)])
    return zip_path, missing


def class_step(kind: str, out: Path, roster: Roster | None, spec, say=print) -> Path | None:
    """The grading command's ``--return`` step, after the feedback pages and ``grades.csv``."""
    try:
        path, missing = write_zip(kind, out, roster, notebook=spec.notebook, assignment=spec.name)
    except (OSError, ValueError) as exc:
        print(f"attngrade: --return {kind}: not written ({exc}); the pages are in {Path(out) / 'feedback'}",
              file=sys.stderr)
        return None
    say(f"{kind} feedback upload: {path} (list: {path.with_suffix('.csv')})")
    for student, why in missing:
        print(f"attngrade: --return {kind}: {shown(student)}: not in the zip: {why}; "
              f"return feedback/{shown(student)}.html by hand", file=sys.stderr)
    return path
