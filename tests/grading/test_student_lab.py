"""``make lab``: the student's JupyterLab, as root or not, without nbgrader's instructor tools."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import gradingkit as gk

MAKE = ["make", "--no-print-directory", "-o", ".venv/.installed"]  # never reinstall the environment here
INSTRUCTOR_TOOLS = {"formgrader", "create-assignment", "course-list", "assignment-list"}


def test_make_lab_adds_allow_root_only_for_root():
    plan = subprocess.run([*MAKE, "-n", "lab"], cwd=gk.ROOT, capture_output=True, text=True, check=True)
    assert "JUPYTER_CONFIG_DIR=" in plan.stdout and "jupyter lab work" in plan.stdout
    assert ("--allow-root" in plan.stdout) == (os.geteuid() == 0), plan.stdout


def test_the_student_lab_config_hides_the_instructor_tools(tmp_path):
    config = tmp_path / "lab-config"
    target = config / "labconfig" / "page_config.json"
    subprocess.run([*MAKE, "-s", f"LAB_CONFIG={config}", str(target)], cwd=gk.ROOT, check=True)
    disabled = json.loads(target.read_text())["disabledExtensions"]
    assert {k.split(":", 1)[1] for k, v in disabled.items() if v} >= INSTRUCTOR_TOOLS
    assert "@jupyter/nbgrader:validate-assignment" not in disabled  # the student's own tool stays
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(config))
    jupyter = Path(sys.executable).parent / "jupyter"
    listing = subprocess.run(
        [str(jupyter), "labextension", "list"], env=env, capture_output=True, text=True, check=True
    )
    text = listing.stdout + listing.stderr
    for tool in INSTRUCTOR_TOOLS:
        assert f"@jupyter/nbgrader:{tool}" in text.split("Disabled extensions:")[-1], text
