"""The student's lab: untouched copies of the release get the local kernel's notebook metadata.

JupyterLab fills in a notebook's ``kernelspec`` and ``language_info`` from the running kernel
when it opens the notebook; where they differ from what the file holds (the release is generated
on one Python, a student may run another), it marks the untouched notebook as modified and asks
"Save changes?" on closing. ``make lab-work`` runs this after copying the release into ``work/``:

    python -m attngrade.lab exercises work

Every notebook under ``work/`` whose bytes are still those of its release copy gets the local
interpreter's two entries; nothing else in it changes. A notebook that differs from the release
(the student's own work, saved by JupyterLab) is never touched.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat


def local_metadata() -> dict:
    """The ``kernelspec`` and ``language_info`` that this interpreter's ipykernel reports."""
    from ipykernel.ipkernel import IPythonKernel
    from ipykernel.kernelspec import KERNEL_NAME, get_kernel_dict

    spec = get_kernel_dict()
    return {
        "kernelspec": {
            "display_name": spec["display_name"], "language": spec["language"], "name": KERNEL_NAME,
        },
        "language_info": dict(IPythonKernel.language_info),
    }


def localise(release: Path, work: Path) -> list[Path]:
    """Rewrite the metadata of each notebook in ``work`` that is byte for byte its ``release`` copy;
    return the notebooks rewritten."""
    if not release.is_dir():
        raise ValueError(f"release: {release} is not a folder")
    if not work.is_dir():
        raise ValueError(f"work: {work} is not a folder")
    wanted = local_metadata()
    changed = []
    for source in sorted(release.rglob("*.ipynb")):
        copy = work / source.relative_to(release)
        if ".ipynb_checkpoints" in copy.parts or not copy.is_file():
            continue
        if copy.read_bytes() != source.read_bytes():  # the student's own work: never touched
            continue
        nb = nbformat.read(copy, as_version=4)
        if all(nb.metadata.get(key) == value for key, value in wanted.items()):
            continue
        nb.metadata.update(wanted)
        nbformat.write(nb, copy)
        changed.append(copy)
    return changed


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m attngrade.lab RELEASE_DIR WORK_DIR", file=sys.stderr)
        return 2
    localise(Path(argv[0]), Path(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
