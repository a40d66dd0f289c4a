"""Which share of the class one grading host grades: ``--shard I/N``, or ``--shard auto``, the
index and count that a batch engine gives each of its tasks.

* **Kubernetes Indexed Job** (``completionMode: Indexed``): each pod gets
  ``JOB_COMPLETION_INDEX`` (0 to ``completions - 1``), set by Kubernetes. The count is not in
  the pod's environment: the Job's manifest must pass it as ``JOB_COMPLETIONS``, equal to
  ``spec.completions`` (the README's manifest does).
* **Slurm job array** (``sbatch --array=...``): ``SLURM_ARRAY_TASK_ID``,
  ``SLURM_ARRAY_TASK_COUNT``, ``SLURM_ARRAY_TASK_MIN`` and, where the array has a step
  (``--array=1-7:2``), ``SLURM_ARRAY_TASK_STEP``. An array need not start at 0 (``--array=1-4``):
  task ``MIN + k * STEP`` grades share ``k + 1``. An array whose ids are not evenly spaced
  (``--array=1,2,7``) has no such share: it is refused.

Shares are 1 to N (:func:`attngrade.pipeline.shard_of`). An explicit ``--shard I/N`` wins over
the environment. Without ``--shard`` the whole class is graded even inside a Job or an array
(which may run one assignment per task): :func:`unused` names the variables for a warning.
Values that do not fit together are the instructor's error, a :class:`ValueError` that names
the variable.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["parse_shard", "from_engine", "unused", "KUBERNETES_INDEX", "KUBERNETES_COUNT", "SLURM_ID"]

KUBERNETES_INDEX, KUBERNETES_COUNT = "JOB_COMPLETION_INDEX", "JOB_COMPLETIONS"
SLURM_ID, SLURM_COUNT, SLURM_MIN, SLURM_MAX, SLURM_STEP = (
    "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX",
    "SLURM_ARRAY_TASK_STEP",
)
AUTO = "auto"


def parse_shard(text: str | None, environ: Mapping[str, str]) -> tuple[int, int] | None:
    """``(i, n)`` from ``--shard``'s text (``I/N`` or ``auto``), or None: the whole class."""
    if text is None:
        return None
    if text.strip().lower() == AUTO:
        return from_engine(environ)
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise ValueError(
            f"--shard {text!r}: give i/n, e.g. 1/2 (this host grades the first of two shares), or auto "
            f"(from a Kubernetes Indexed Job's {KUBERNETES_INDEX} or a Slurm array's {SLURM_ID})"
        ) from None
    if not 1 <= i <= n:
        raise ValueError(f"--shard {text!r}: i must be from 1 to n")
    return i, n


def _whole(environ: Mapping[str, str], name: str, why: str = "") -> int:
    """The variable ``name`` as a whole number; ValueError naming it when absent or not one."""
    value = environ.get(name)
    if value is None or not value.strip():
        raise ValueError(f"--shard auto: {name} is not set{why}")
    try:
        return int(value.strip())
    except ValueError:
        raise ValueError(f"--shard auto: {name}={value!r} is not a whole number") from None


def _kubernetes(environ: Mapping[str, str]) -> tuple[int, int]:
    index = _whole(environ, KUBERNETES_INDEX)
    count = _whole(environ, KUBERNETES_COUNT, (
        f" ({KUBERNETES_INDEX} is, so this is a Kubernetes Indexed Job): Kubernetes does not set it; "
        f"the Job's manifest must, equal to spec.completions (env: - name: {KUBERNETES_COUNT}, "
        f"value: \"<completions>\"; see the README)"))
    if count < 1:
        raise ValueError(f"--shard auto: {KUBERNETES_COUNT}={count} must be 1 or more")
    if not 0 <= index < count:
        raise ValueError(f"--shard auto: {KUBERNETES_INDEX}={index} is not from 0 to {KUBERNETES_COUNT} - 1 = "
                         f"{count - 1}: is {KUBERNETES_COUNT} the Job's spec.completions?")
    return index + 1, count


def _slurm(environ: Mapping[str, str]) -> tuple[int, int]:
    task = _whole(environ, SLURM_ID)
    count = _whole(environ, SLURM_COUNT, f" ({SLURM_ID} is): a Slurm too old to set it? give --shard i/n")
    first = _whole(environ, SLURM_MIN, f" ({SLURM_ID} is): a Slurm too old to set it? give --shard i/n")
    step = _whole(environ, SLURM_STEP) if environ.get(SLURM_STEP, "").strip() else 1
    if count < 1 or step < 1:
        raise ValueError(f"--shard auto: {SLURM_COUNT}={count} and {SLURM_STEP}={step} must be 1 or more")
    last = first + (count - 1) * step
    if environ.get(SLURM_MAX, "").strip() and _whole(environ, SLURM_MAX) != last:
        raise ValueError(
            f"--shard auto: the array's task ids are not evenly spaced ({SLURM_MAX}={environ[SLURM_MAX]}, "
            f"but {count} ids from {SLURM_MIN}={first} in steps of {step} end at {last}): "
            f"submit --array=0-{count - 1}, or give --shard i/n"
        )
    offset = task - first
    if offset < 0 or offset % step or offset // step >= count:
        raise ValueError(
            f"--shard auto: {SLURM_ID}={task} is not one of the {count} ids from {SLURM_MIN}={first} "
            f"in steps of {step}"
        )
    return offset // step + 1, count


def from_engine(environ: Mapping[str, str]) -> tuple[int, int]:
    """``(i, n)`` from a Kubernetes Indexed Job's or a Slurm array's variables (module docstring)."""
    kubernetes = bool(environ.get(KUBERNETES_INDEX, "").strip())
    slurm = bool(environ.get(SLURM_ID, "").strip())
    if kubernetes and slurm:
        raise ValueError(
            f"--shard auto: both {KUBERNETES_INDEX} (Kubernetes) and {SLURM_ID} (Slurm) are set, so which "
            "share is this one's? Give --shard i/n"
        )
    if kubernetes:
        return _kubernetes(environ)
    if slurm:
        return _slurm(environ)
    raise ValueError(
        f"--shard auto: neither {KUBERNETES_INDEX} (a Kubernetes Indexed Job) nor {SLURM_ID} (a Slurm job "
        "array) is set; give --shard i/n"
    )


def unused(environ: Mapping[str, str]) -> str | None:
    """Without ``--shard``: a warning naming the engine's variables when they are set, else None."""
    found = [n for n in (KUBERNETES_INDEX, SLURM_ID) if environ.get(n, "").strip()]
    if not found:
        return None
    return (f"{' and '.join(found)} {'is' if len(found) == 1 else 'are'} set but --shard is not given: this "
            "task grades the whole class; give --shard auto to grade only its share")
