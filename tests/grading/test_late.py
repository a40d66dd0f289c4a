"""The late policy (started days after the deadline, a fraction per day, capped), the times it
reads (offsets and zones honoured, the course's zone otherwise) and the deadlines file."""

from __future__ import annotations

from datetime import timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from traitlets.config import Config

from attngrade.late import (
    LatePolicy,
    assign_deadlines,
    course_zone,
    late_policy,
    load_policy,
    parse_time,
    read_deadlines,
    read_time,
    utc_text,
)
from attngrade.submissions import Submission


def _config(entry):
    c = Config()
    c.AttnGrade.late_policy = {"01_softmax": entry}
    return c


@settings(deadline=None)  # the first call imports nbgrader
@given(
    seconds=st.integers(-10 * 86400, 40 * 86400),
    per_day=st.floats(0, 1),
    cap=st.floats(0, 1),
)
def test_the_penalty_counts_started_days_and_stops_at_the_cap(seconds, per_day, cap):
    deadline = parse_time("2026-12-01 12:00:00 UTC")
    policy = LatePolicy(deadline, per_day, cap)
    when = deadline + timedelta(seconds=seconds)
    got = policy.lateness(when.strftime("%Y-%m-%d %H:%M:%S UTC"))
    days = -(-seconds // 86400) if seconds > 0 else 0
    assert got.late == (seconds > 0) and got.days == days
    assert got.fraction == (min(cap, days * per_day) if seconds > 0 else 0.0)
    assert 0 <= got.fraction <= cap


def test_the_policy_is_read_from_the_course_config():
    policy = late_policy(_config({"deadline": "2026-12-01 12:00 UTC", "penalty_per_day": 0.1}), "01_softmax")
    assert policy.deadline == parse_time("2026-12-01 12:00:00 UTC") and policy.max_penalty == 1.0
    assert late_policy(_config({"deadline": "2026-12-01 12:00 UTC"}), "02_attention") is None
    assert late_policy(Config(), "01_softmax") is None
    assert policy.lateness(None).text.startswith("no submission time")


@pytest.mark.parametrize(
    "entry, words",
    [
        ({"penalty_per_day": 0.1}, "'deadline'"),
        ({"deadline": "someday"}, "unreadable deadline"),
        ({"deadline": "2026-12-01 12:00 UTC", "penalty_per_day": 2}, "penalty_per_day"),
        ({"deadline": "2026-12-01 12:00 UTC", "max_penalty": -0.1}, "max_penalty"),
        ({"deadline": "2026-12-01 12:00 UTC", "penalty": 0.1}, "unknown keys"),
    ],
)
def test_a_bad_policy_is_a_clear_error(entry, words):
    with pytest.raises(ValueError, match=words):
        late_policy(_config(entry), "01_softmax")


# ------------------------------------------------------------------ times, zones and deadlines

BERLIN, NEW_YORK = ZoneInfo("Europe/Berlin"), ZoneInfo("America/New_York")


@pytest.mark.parametrize(
    "text, zone, utc",
    [
        ("2026-12-01 10:00:00.000000 UTC", BERLIN, "2026-12-01 10:00:00"),  # nbgrader's own format
        ("2026-12-01 10:00:00 +0100", timezone.utc, "2026-12-01 09:00:00"),  # an offset (nbgrader: seconds)
        ("2026-12-01T10:00:00-05:00", BERLIN, "2026-12-01 15:00:00"),
        ("2026-12-01 10:00:00.000000 CET", BERLIN, "2026-12-01 09:00:00"),  # the exchange's zone, winter
        ("2026-07-01 10:00:00.000000 CEST", BERLIN, "2026-07-01 08:00:00"),  # summer: no fixed offset
        ("2026-07-01 10:00:00.000000 EDT", NEW_YORK, "2026-07-01 14:00:00"),
        ("2026-12-01 10:00", BERLIN, "2026-12-01 09:00:00"),  # no zone stated: the course's
        ("2026-12-01 10:00 Europe/Berlin", timezone.utc, "2026-12-01 09:00:00"),
        ("Tuesday, 1 December 2026, 10:00 AM", NEW_YORK, "2026-12-01 15:00:00"),  # Moodle's worksheet
    ],
)
def test_times_keep_their_stated_offset_or_zone_else_the_courses(text, zone, utc):
    assert utc_text(read_time(text, zone)) == utc + ".000000 UTC"


def test_an_abbreviation_that_is_not_the_courses_is_refused_not_guessed():
    with pytest.raises(ValueError, match="unknown time zone 'CST'"):
        read_time("2026-12-01 10:00 CST", BERLIN)  # US Central, China or Cuba
    with pytest.raises(ValueError, match="unreadable time"):
        read_time("someday", BERLIN)


def test_the_course_zone_comes_from_the_option_the_config_or_nbgraders_exchange():
    c = Config()
    assert course_zone(c) == timezone.utc
    c.Exchange.timezone = "America/New_York"
    assert course_zone(c) == NEW_YORK
    c.AttnGrade.timezone = "Europe/Berlin"
    assert course_zone(c) == BERLIN and course_zone(c, "UTC") == timezone.utc
    c.AttnGrade.timezone = "Mars/Olympus"
    with pytest.raises(ValueError, match="c.AttnGrade.timezone: unknown time zone 'Mars/Olympus'"):
        course_zone(c)


def test_a_deadline_without_a_zone_is_the_courses():
    c = _config({"deadline": "2026-12-01 23:59"})
    c.AttnGrade.timezone = "Europe/Berlin"
    assert utc_text(late_policy(c, "01_softmax").deadline) == "2026-12-01 22:59:00.000000 UTC"


def test_the_lms_marker_alone_decides_the_verdict_but_counts_no_days():
    policy = LatePolicy(parse_time("2026-12-01 12:00 UTC"), 0.1)
    late = policy.lateness(None, True)
    assert late.late and late.fraction == 0 and "no submission time" in late.text
    on_time = policy.lateness(None, False)
    assert not on_time.late and "on time by the LMS's marker" in on_time.text
    assert not policy.lateness(None).late and policy.lateness(None).text.startswith("no submission time")


def test_a_students_own_deadline_replaces_everyones():
    policy = LatePolicy(parse_time("2026-12-01 12:00 UTC"), 0.1)
    stamp = "2026-12-02 13:00:00.000000 UTC"
    assert policy.lateness(stamp).days == 2
    extended = policy.lateness(stamp, due="2026-12-03 12:00:00.000000 UTC")
    assert not extended.late and "own deadline 2026-12-03 12:00 UTC" in extended.text
    assert LatePolicy(None).lateness(stamp).text == "no deadline for this student"


def _deadlines_csv(tmp_path, text):
    path = tmp_path / "deadlines.csv"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_deadlines_file_gives_everyones_and_each_students_deadline(tmp_path):
    path = _deadlines_csv(tmp_path, "assignment,student,due\n01_softmax,,2026-12-01 23:59\n"
                                    "01_softmax,2036,2026-12-04 23:59\n02_attention,2036,2027-01-01 00:00\n"
                                    "01_softmax,alice,2026-12-02 12:00 +00:00\n01_softmax,ghost,2026-12-05 00:00\n")
    table = read_deadlines(path, "01_softmax", BERLIN)
    assert utc_text(table.default) == "2026-12-01 22:59:00.000000 UTC"
    assert sorted(table.students) == ["2036", "alice", "ghost"]
    subs = [Submission("nguyenminh_2036", None, "canvas", lms_id="2036"), Submission("alice", None, "nbgrader"),
            Submission("bob", None, "nbgrader")]
    warnings = assign_deadlines(subs, table)
    assert [s.due for s in subs] == ["2026-12-04 22:59:00.000000 UTC", "2026-12-02 12:00:00.000000 UTC", None]
    assert len(warnings) == 1 and "'ghost' matches no submission" in warnings[0]


@pytest.mark.parametrize(
    "text, words",
    [
        ("who,when\nalice,2026-12-01\n", "no student column"),
        ("student,due\nalice,soon\n", "line 2: unreadable time"),
        ("student,due\nalice,2026-12-01\nalice,2026-12-02\n", "line 3: a second deadline for 'alice'"),
        ("student,due\n,2026-12-01\n*,2026-12-02\n", "line 3: a second deadline for everyone"),
    ],
)
def test_a_bad_deadlines_file_names_the_file_and_line(tmp_path, text, words):
    with pytest.raises(ValueError, match=words):
        read_deadlines(_deadlines_csv(tmp_path, text), "01_softmax")


def test_a_deadlines_file_without_a_policy_reports_lateness_without_penalty(tmp_path):
    path = _deadlines_csv(tmp_path, "student,due\n,2026-12-01 12:00\n")
    policy, table = load_policy(Config(), "01_softmax", deadlines=str(path), zone=timezone.utc)
    assert policy.deadline == parse_time("2026-12-01 12:00 UTC") and policy.penalty_per_day == 0
    late = policy.lateness("2026-12-03 12:00:00 UTC")
    assert late.late and late.days == 2 and late.fraction == 0
    config = _config({"deadline": "2026-11-01 12:00 UTC", "penalty_per_day": 0.25})
    policy, _ = load_policy(config, "01_softmax", deadlines=str(path), zone=timezone.utc)
    assert policy.deadline == parse_time("2026-12-01 12:00 UTC") and policy.penalty_per_day == 0.25


def test_the_time_options_reach_the_pipeline(monkeypatch):
    from attngrade import cli

    seen = []
    monkeypatch.setattr(cli, "grade_class", lambda opts: seen.append(opts) or 0)
    assert cli.main(["02_attention", "dl.zip", "--timezone", "America/Chicago", "--deadlines", "d.csv",
                     "--submission-times", "worksheet.csv"]) == 0
    (opts,) = seen
    assert (opts.timezone, opts.deadlines, opts.submission_times) == ("America/Chicago", "d.csv", "worksheet.csv")
