"""SNS subjects: under 100 characters, UTF-8, no line breaks or control characters (SNS Publish docs)."""

from __future__ import annotations

from trainguard.domain.messages import SUBJECT_LIMIT, fit_subject


def test_a_job_name_at_its_limit_fits_whole() -> None:
    subject = fit_subject("[trainguard] relaunched {job}", "j" * 63, "internal")
    assert len(subject) < SUBJECT_LIMIT and subject.endswith("j" * 63)


def test_a_long_name_is_cut_to_fit() -> None:  # quota names stand where job names do in quota messages
    subject = fit_subject("[trainguard] quota request approved: {job}", "q" * 150, "quota")
    assert len(subject) < SUBJECT_LIMIT and subject.endswith("...")


def test_unicode_is_kept_and_control_characters_are_replaced() -> None:
    subject = fit_subject("[trainguard] {job} ended: {category}", "modèle-日本", "data\nbad\x07")
    assert "modèle-日本" in subject and "\n" not in subject and "\x07" not in subject
    assert all(ch.isprintable() for ch in subject)
