"""Settings: embedded defaults, environment overrides, masked secrets."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest


def test_a_dotenv_file_in_the_checkout_is_kept_out_of_git() -> None:
    """The settings are read from .env in the working directory, which for scripts/run.sh
    and the CLI is the checkout: its OPENAI_API_KEY must not be committed by accident."""
    root = Path(__file__).resolve().parents[1]
    if shutil.which("git") is None or not (root / ".git").exists():
        pytest.skip("not a git checkout")
    ignored = subprocess.run(["git", "check-ignore", "-q", ".env"], cwd=root, check=False)
    assert ignored.returncode == 0
