"""CONVERSATION_TTL_DAYS: the setting's checks, and the sweep command without a TTL."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from convrag.config import Settings


@pytest.mark.parametrize("value", ["-1", "abc", "nan", "inf", "40000"])
def test_a_bad_ttl_is_a_config_error_naming_the_setting(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONVERSATION_TTL_DAYS", value)
    with pytest.raises(ValidationError, match="CONVERSATION_TTL_DAYS must be a number of days"):
        Settings()


@pytest.mark.parametrize(("value", "days"), [("", None), ("0", None), ("30", 30.0), ("0.5", 0.5)])
def test_the_ttl_is_off_unless_a_positive_number_of_days(
    value: str, days: float | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONVERSATION_TTL_DAYS", value)
    assert Settings().conversation_ttl_days == days


def test_the_sweep_command_does_nothing_without_a_ttl_and_refuses_a_bad_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A scheduled sweep with retention off (unset or 0) succeeds, deleting nothing; a
    bad value is an error naming it."""
    import json

    from typer.testing import CliRunner

    from convrag.cli import app
    from convrag.config import get_settings

    for value in ("", "0"):
        monkeypatch.setenv("CONVERSATION_TTL_DAYS", value)
        get_settings.cache_clear()
        result = CliRunner().invoke(app, ["sweep"])
        assert result.exit_code == 0 and "kept; nothing to sweep" in result.output
        assert json.loads(result.stdout.splitlines()[-1]) == {"deleted": 0, "ttl_days": None}
    monkeypatch.setenv("CONVERSATION_TTL_DAYS", "-3")
    get_settings.cache_clear()
    result = CliRunner().invoke(app, ["sweep"])
    assert result.exit_code == 2 and "must be a number of days" in result.output
    get_settings.cache_clear()
