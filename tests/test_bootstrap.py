"""``scripts/bootstrap.sh`` (which ``scripts/run.sh`` runs first) with stand-ins for Python
and pip, so that nothing is installed: a ``.venv`` moved or copied along with the
checkout is made again, and one in its place, or a link to another, is left alone."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# The interpreter the script is given (PYTHON): it logs each call, and `-m venv` makes a
# fresh .venv whose python answers for the checkout it is in.
SYSTEM_PYTHON = """#!/bin/sh
echo "python $*" >> "$LOG"
if [ "$1" = -m ] && [ "$2" = venv ]; then
  rm -rf .venv && mkdir -p .venv/bin
  printf '#!/bin/sh\\necho "venv-python $*" >> "$LOG"\\n' > .venv/bin/python
  printf '[ "$1 $2" = "-I -c" ] && echo "%s/src/convrag/__init__.py"\\nexit 0\\n' "$(pwd -P)" \\
    >> .venv/bin/python
  chmod +x .venv/bin/python
fi
exit 0
"""


def _venv(where: Path, imports_from: str | None) -> None:
    """An installed .venv at ``where`` whose convrag is ``imports_from`` (None: it does
    not import, as when the directory it was installed for is gone)."""
    (where / "bin").mkdir(parents=True)
    answer = f'echo "{imports_from}"; exit 0' if imports_from else "exit 1"
    python = where / "bin" / "python"
    python.write_text(
        f'#!/bin/sh\necho "venv-python $*" >> "$LOG"\n'
        f'[ "$1 $2" = "-I -c" ] && {{ {answer}; }}\nexit 0\n'
    )
    python.chmod(0o755)
    (where / ".convrag-installed-base").touch()


def _bootstrap(tmp_path: Path, venv: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    repo = (tmp_path / "repo").resolve()
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "bootstrap.sh", repo / "scripts")
    (repo / "src" / "convrag").mkdir(parents=True)
    (repo / "src" / "convrag" / "__init__.py").touch()
    (repo / "pyproject.toml").touch()
    os.utime(repo / "pyproject.toml", (1_000_000, 1_000_000))  # older than the install
    elsewhere = "/an/old/place/src/convrag/__init__.py"
    if venv == "in place":
        _venv(repo / ".venv", str(repo / "src" / "convrag" / "__init__.py"))
    elif venv == "copied":
        _venv(repo / ".venv", elsewhere)
    elif venv == "moved":
        _venv(repo / ".venv", None)
    else:  # a link to another checkout's environment
        _venv(tmp_path / "other-venv", elsewhere)
        (repo / ".venv").symlink_to(tmp_path / "other-venv")
    python = tmp_path / "python3"
    python.write_text(SYSTEM_PYTHON)
    python.chmod(0o755)
    log = tmp_path / "calls.log"
    log.touch()
    env = {**os.environ, "PYTHON": str(python), "LOG": str(log)}
    done = subprocess.run(
        ["bash", str(repo / "scripts" / "bootstrap.sh")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    return done, log.read_text().splitlines()


@pytest.mark.parametrize("venv", ["moved", "copied"])
def test_a_venv_moved_or_copied_with_the_checkout_is_made_again_for_it(
    tmp_path: Path, venv: str
) -> None:
    """Its scripts' #! lines and its editable install name the old directory: run.sh
    failed with "cannot execute: required file not found", or ran the other checkout."""
    done, calls = _bootstrap(tmp_path, venv)
    assert done.returncode == 0, done.stderr
    assert "python -m venv --clear .venv" in calls
    assert any(c.startswith("venv-python -m pip install") and c.endswith("-e .") for c in calls)
    assert done.stderr.startswith("note: .venv was installed for ")
    assert f"making it again for {(tmp_path / 'repo').resolve()}" in done.stderr
    # It says what it does and how long that took, as run.sh's first minutes pass.
    assert "installing convrag and its dependencies into .venv" in done.stdout
    assert "installed in " in done.stdout


@pytest.mark.parametrize("venv", ["in place", "linked"])
def test_a_venv_installed_for_this_checkout_or_linked_to_another_is_left_alone(
    tmp_path: Path, venv: str
) -> None:
    done, calls = _bootstrap(tmp_path, venv)
    assert done.returncode == 0, done.stderr
    assert not [c for c in calls if c.startswith("python -m venv")]
    assert not [c for c in calls if "pip install" in c]
    assert done.stderr == ""
