"""The late policy: started days after the deadline, a fraction per day, capped."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from traitlets.config import Config

from attngrade.late import LatePolicy, late_policy, parse_time


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
