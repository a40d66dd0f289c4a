"""Shares of a class from a batch engine (``--shard auto``: ``attngrade.shards``) and the checks
of the merge step (``attngrade.merge``) on hosts' outputs made by hand. The run of four indexed
workers and the merge is in test_postgres.py (it needs a PostgreSQL server)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attngrade.cli import main as attngrade_main
from attngrade.merge import Host, check_shares
from attngrade.merge import main as merge_main
from attngrade.shards import parse_shard, unused

K8S = {"JOB_COMPLETION_INDEX": "2", "JOB_COMPLETIONS": "4"}


def slurm(task: int, first: int, count: int, step: int | None = None, last: int | None = None) -> dict:
    env = {"SLURM_ARRAY_TASK_ID": str(task), "SLURM_ARRAY_TASK_COUNT": str(count), "SLURM_ARRAY_TASK_MIN": str(first)}
    if step is not None:
        env["SLURM_ARRAY_TASK_STEP"] = str(step)
    if last is not None:
        env["SLURM_ARRAY_TASK_MAX"] = str(last)
    return env


@pytest.mark.parametrize("text, env, share", [
    ("auto", {"JOB_COMPLETION_INDEX": "0", "JOB_COMPLETIONS": "4"}, (1, 4)),
    ("auto", K8S, (3, 4)),
    ("AUTO", {"JOB_COMPLETION_INDEX": "0", "JOB_COMPLETIONS": "1"}, (1, 1)),
    ("auto", slurm(0, 0, 4, 1, 3), (1, 4)),  # --array=0-3
    ("auto", slurm(1, 1, 4), (1, 4)),  # --array=1-4: task 1 is the first share
    ("auto", slurm(4, 1, 4, 1, 4), (4, 4)),
    ("auto", slurm(8, 0, 4, 4, 12), (3, 4)),  # --array=0-12:4
    ("auto", slurm(7, 1, 4, 2, 7), (4, 4)),  # --array=1-7:2
    ("2/3", K8S, (2, 3)),  # an explicit share wins over the environment
    (None, K8S, None),  # no --shard: the whole class
])
def test_the_share_comes_from_the_option_or_the_engine(text, env, share):
    assert parse_shard(text, env) == share


@pytest.mark.parametrize("env, named", [
    ({"JOB_COMPLETION_INDEX": "1"}, ["JOB_COMPLETIONS is not set", "manifest", "spec.completions"]),
    ({"JOB_COMPLETION_INDEX": "4", "JOB_COMPLETIONS": "4"}, ["JOB_COMPLETION_INDEX=4", "JOB_COMPLETIONS"]),
    ({"JOB_COMPLETION_INDEX": "one", "JOB_COMPLETIONS": "4"}, ["JOB_COMPLETION_INDEX='one'"]),
    ({"JOB_COMPLETION_INDEX": "0", "JOB_COMPLETIONS": "0"}, ["JOB_COMPLETIONS=0"]),
    ({"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MIN": "0"}, ["SLURM_ARRAY_TASK_COUNT is not set"]),
    ({"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "4"}, ["SLURM_ARRAY_TASK_MIN is not set"]),
    (slurm(7, 1, 3, 1, 7), ["not evenly spaced", "SLURM_ARRAY_TASK_MAX=7"]),  # --array=1,2,7
    (slurm(9, 1, 4), ["SLURM_ARRAY_TASK_ID=9"]),
    (slurm(0, 1, 4), ["SLURM_ARRAY_TASK_ID=0"]),
    (slurm(2, 0, 4, 4, 12), ["SLURM_ARRAY_TASK_ID=2"]),
    ({**K8S, **slurm(1, 1, 4)}, ["JOB_COMPLETION_INDEX", "SLURM_ARRAY_TASK_ID", "--shard i/n"]),
    ({}, ["neither JOB_COMPLETION_INDEX", "SLURM_ARRAY_TASK_ID"]),
])
def test_values_that_do_not_fit_name_the_variable(env, named):
    with pytest.raises(ValueError) as info:
        parse_shard("auto", env)
    assert all(word in str(info.value) for word in named), str(info.value)


def test_without_shard_the_engines_variables_are_named_in_a_warning():
    assert unused({}) is None
    assert "JOB_COMPLETION_INDEX is set" in unused(K8S) and "--shard auto" in unused(K8S)
    assert "SLURM_ARRAY_TASK_ID" in unused(slurm(1, 1, 2))


def test_the_command_refuses_auto_outside_an_engine_before_writing(tmp_path, monkeypatch, capsys):
    for name in ("JOB_COMPLETION_INDEX", "SLURM_ARRAY_TASK_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("JOB_COMPLETION_INDEX", "3")
    monkeypatch.setenv("JOB_COMPLETIONS", "2")
    folder = tmp_path / "subs"
    folder.mkdir()
    code = attngrade_main(["01_softmax", str(folder), "--out", str(tmp_path / "out"), "--shard", "auto", "-q"])
    assert code == 2 and "JOB_COMPLETION_INDEX=3" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ the merge step's checks


def host(out: str, share: str, students: list[str], assignment: str = "01_softmax") -> Host:
    rows = {s: [s] for s in students}
    return Host(Path(out), {"assignment": assignment, "shard": share}, [], ["student"], rows)


def test_every_share_once_and_every_student_once():
    a = host("a", "share 1/2 of 3", ["x", "y"])
    b = host("b", "share 2/2 of 3", ["z"])
    assert check_shares([a, b]) == ("01_softmax", 2)
    cases = [
        ([a], "missing 2"),
        ([a, host("c", "share 1/2 of 3", ["z"])], "given twice 1"),
        ([a, host("c", "share 2/2 of 3", ["y"])], "y was graded by two hosts"),
        ([a, host("c", "share 2/3 of 3", ["z"])], "different numbers of shares"),
        ([a, host("c", "share 2/2 of 3", ["z"], "02_attention")], "holds 02_attention"),
        ([a, host("c", "share 2/2 of 4", ["z"])], "different classes"),
        ([a, host("c", "share 2/2 of 3", [])], "graded 2 students of a class of 3"),
    ]
    for hosts, message in cases:
        with pytest.raises(ValueError, match=message):
            check_shares(hosts)
    with pytest.raises(ValueError, match="not graded with --shard"):
        check_shares([host("d", "", ["x"])])


def _fake_out(folder: Path, share: str, students: list[str]) -> Path:
    folder.mkdir()
    rows = [{"student": s} for s in students]
    (folder / "summary.json").write_text(json.dumps({"assignment": "01_softmax", "shard": share, "results": rows}))
    records = [{"student": s, "status": "graded", "parts": {}} for s in students]
    (folder / "statistics.json").write_text(json.dumps({"assignment": "01_softmax", "results": records}))
    (folder / "grades.csv").write_text("student\n" + "".join(f"{s}\n" for s in students), encoding="utf-8-sig")
    return folder


def test_the_merge_command_refuses_a_missing_share_and_writes_nothing(tmp_path, capsys):
    one = _fake_out(tmp_path / "out-1", "share 1/3 of 3", ["x"])
    three = _fake_out(tmp_path / "out-3", "share 3/3 of 3", ["z"])
    assert merge_main([str(one), str(three), "--out", str(tmp_path / "class")]) == 2
    assert "missing 2" in capsys.readouterr().err and not (tmp_path / "class").exists()
    assert merge_main([str(one), str(tmp_path / "nowhere"), "--out", str(tmp_path / "class")]) == 2
    assert "nowhere is not a folder" in capsys.readouterr().err


# ------------------------------------------------------------------ the README's Job manifest


def test_the_readmes_indexed_job_passes_its_count_and_options_attngrade_knows():
    import shlex

    import yaml

    import gradingkit as gk
    from attngrade.cli import _parser

    readme = (gk.ROOT / "README.md").read_text(encoding="utf-8")
    text = readme[readme.index("**A Kubernetes Indexed Job**"):]
    job = yaml.safe_load(text[text.index("```yaml") + 7:text.index("```", text.index("```yaml") + 7)])
    spec = job["spec"]
    container, = spec["template"]["spec"]["containers"]
    env = {e["name"]: e for e in container["env"]}
    assert job["kind"] == "Job" and spec["completionMode"] == "Indexed"
    assert int(env["JOB_COMPLETIONS"]["value"]) == spec["completions"]
    assert "secretKeyRef" in env["ATTNGRADE_COURSE_SECRET"]["valueFrom"]
    words = shlex.split(container["args"][0].replace("$JOB_COMPLETION_INDEX", "0"))
    assert container["command"] == ["sh", "-c"] and words[:2] == ["exec", "attngrade"]
    args = _parser().parse_args(words[2:])
    assert (args.shard, args.isolation, args.out) == ("auto", "namespaces", "/data/out/share-0")
    assert (gk.ROOT / "docs" / "grading-host" / "Dockerfile").is_file()
