"""Per-student releases: each student's own copy of the released assignments, for their variant.

``make exercises`` (``nbgrader generate_assignment``) writes the course's one release,
``exercises/<assignment>/``, with the default variant (:mod:`attngrade.variants`). This module
writes one release per student from it::

    python -m attngrade.release --roster roster.csv --out releases/ [--assignment 01_softmax ...]

giving ``releases/<student>/<assignment>/``: the released files, the notebook's statement cells
rewritten with the student's values, and ``variant.json`` (what the visible checks read). An
assignment without variants is copied as it is. The variant comes from the course secret
(``$ATTNGRADE_COURSE_SECRET`` or ``.attngrade-secret``) and the student's id, exactly as the
grader draws it, so the secret is required: without it every student would get the default.
``releases/variants.csv`` lists each student's values for the instructor (never release it).
"""

from __future__ import annotations

import argparse
import csv
import shutil
import sys
from pathlib import Path

import nbformat

from .spec import CASES_FILE, course_secret, load_cases
from .variants import VARIANT_FILE, render_notebook, variants_of

__all__ = ["release_student", "release_class", "main"]

LIST_FILE = "variants.csv"


def _check_id(student) -> str:
    if not isinstance(student, str) or not student.strip() or student in (".", "..") \
            or any(c in student for c in "/\\\0") or student != student.strip():
        raise ValueError(f"student id {student!r} cannot name a folder: fix it in the roster")
    return student


def release_student(release: Path, assignment: str, student: str, secret: str, out: Path) -> dict | None:
    """Write ``out/<student>/<assignment>/`` from the release folder ``release/<assignment>``; the
    student's variant (None for an assignment without variants)."""
    source = Path(release) / assignment
    if not source.is_dir():
        raise ValueError(f"--assignment {assignment}: no release folder {source} (run `make exercises`)")
    dest = Path(out) / _check_id(student) / assignment
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__", VARIANT_FILE))
    variants = variants_of(load_cases(source / CASES_FILE)) if (source / CASES_FILE).is_file() else None
    if variants is None:
        return None
    values = variants.draw(secret, student)
    for path in sorted(dest.glob("*.ipynb")):
        nb = nbformat.read(str(path), as_version=4)
        nbformat.write(nbformat.from_dict(render_notebook(nb, variants, values)), str(path))
    variants.write(dest, values, student)
    return values


def release_class(release: Path, assignments: list[str], students: list[str], secret: str, out: Path) -> Path:
    """Every student's releases of ``assignments``; returns the list of variants written
    (``out/variants.csv``: student, assignment, parameter, value)."""
    if not secret:
        raise ValueError("per-student releases need the course secret ($ATTNGRADE_COURSE_SECRET or "
                         ".attngrade-secret in the course root): without it every student gets the default")
    if len(set(students)) != len(students):
        raise ValueError("the roster names a student twice")
    rows = []
    for student in students:
        for assignment in assignments:
            values = release_student(release, assignment, student, secret, out)
            rows.extend([student, assignment, k, repr(v)] for k, v in sorted((values or {}).items()))
    path = Path(out) / LIST_FILE
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["student", "assignment", "parameter", "value"])
        writer.writerows(rows)
    return path


def main(argv: list[str] | None = None) -> int:
    from .export import read_roster
    from .grader import ConfigError, load_course

    p = argparse.ArgumentParser(prog="python -m attngrade.release",
                                description="Write each student's own release of the assignments, for their variant.")
    p.add_argument("--roster", required=True, help="the students: a CSV with a 'student' column (or an LMS export)")
    p.add_argument("--out", required=True, help="folder for <student>/<assignment>/ (e.g. releases/)")
    p.add_argument("--assignment", action="append", default=None,
                   help="an assignment to release (repeat it; default: every released assignment)")
    p.add_argument("--course", default=None, help="the course root (default: found from the working folder)")
    args = p.parse_args(argv)
    try:
        course = load_course(args.course)
        roster = read_roster(Path(args.roster))
        students = [person.student for person in roster.people if person.student]
        if not students:
            raise ValueError(f"--roster {args.roster}: no student ids (a 'student' column)")
        names = args.assignment or sorted(d.name for d in course.release.iterdir() if d.is_dir()
                                          and not d.name.startswith("."))
        listed = release_class(course.release, names, students, course_secret(course.root) or "", Path(args.out))
    except (ValueError, ConfigError, OSError) as exc:
        print(f"attngrade.release: {exc}", file=sys.stderr)
        return 2
    print(f"{len(students)} students x {len(names)} assignments in {args.out}; each student's values: {listed}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
