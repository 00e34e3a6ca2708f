"""The HTTP service's upload-name checks, without a server."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("filename", "stored"),
    [
        ("C:\\Users\\me\\report.txt", "report.txt"),
        ("notes/../../../plan.md", "plan.md"),
        ("\u00e9" * 125 + ".txt", "\u00e9" * 125 + ".txt"),  # 254 bytes of UTF-8
    ],
)
def test_upload_names_keep_only_the_basename(filename: str, stored: str) -> None:
    from convrag.api.routers.documents import upload_name

    assert upload_name(filename) == stored


@pytest.mark.parametrize(
    ("filename", "problem"),
    [
        ("bad\x00name.txt", "control characters"),
        ("line\nbreak.txt", "control characters"),
        ("\u00e9" * 126 + ".txt", "256 bytes long"),
        ("bad\udcffname.txt", "not valid UTF-8"),
        ("uploads/..", "a filename is required"),
        ("", "a filename is required"),
    ],
)
def test_bad_upload_names_get_422_naming_the_problem(filename: str, problem: str) -> None:
    from fastapi import HTTPException

    from convrag.api.routers.documents import upload_name

    with pytest.raises(HTTPException) as info:
        upload_name(filename)
    assert info.value.status_code == 422 and problem in str(info.value.detail)
