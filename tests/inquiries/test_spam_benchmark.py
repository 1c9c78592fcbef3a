"""The spam checks on a labelled set (bench/spamset.py), smaller than the bench's, on both databases: the goals
are met, and the controls that ignore the content, or keep the proof-of-work as the only gate, miss one."""

from __future__ import annotations

import pytest

from bench import spamset

TRAIN, TEST = spamset.labelled(150, seed=1), spamset.labelled(400, seed=2)


def test_people_reach_the_inbox_and_spam_is_kept_out(app):
    people, kept_out = spamset.measure(app, TRAIN, TEST)
    assert people >= 0.98 and kept_out >= 0.9


@pytest.mark.parametrize("variant", ["ignores_content", "proof_of_work_only"])
def test_a_control_misses_a_goal(app, variant):
    people, kept_out = spamset.measure(app, TRAIN, TEST, variant)
    assert people < 0.98 or kept_out < 0.9


def test_the_set_has_people_without_javascript_and_spam_with_it():
    assert any(not item.javascript and not item.is_spam for item in TEST)
    assert any(item.javascript and item.is_spam for item in TEST)
