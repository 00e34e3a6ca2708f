"""The console script, run as a user would, on its own data directory."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from convrag.service_record import RECORD_NAME, ServiceRecord, read_record, write_record
from tests.serving import Server, free_port, scratch_dir, spawn

EXE = str(Path(sys.executable).with_name("convrag"))


def _run(
    args: list[str], data_dir: Path | None, cwd: Path | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """``convrag ARGS`` on ``data_dir`` (None: CONVRAG_DATA_DIR unset, found as a user's
    command finds it)."""
    environ = {**os.environ, **env}
    environ.pop("CONVRAG_DATA_DIR", None)
    if data_dir is not None:
        environ["CONVRAG_DATA_DIR"] = str(data_dir)
    return subprocess.run(
        [EXE, *args], capture_output=True, text=True, env=environ, timeout=300, check=False, cwd=cwd
    )


def _ingest_leave_policy(tmp_path: Path, workspace: str, data_dir: Path) -> None:
    """One short leave policy ingested into ``workspace``."""
    doc = tmp_path / "leave.md"
    doc.write_text("Every employee gets 25 days of paid annual leave per year.")
    ingested = _run(["ingest", str(doc), "-w", workspace, "-q"], data_dir)
    assert ingested.returncode == 0, ingested.stderr


@pytest.fixture(scope="module", autouse=True)
def user_dirs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The per-user directories (data, and the list of stores used) of this module's
    commands: a temporary home's, not the user's who runs the tests."""
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_DATA_HOME", str(home / "data"))
        patch.setenv("XDG_STATE_HOME", str(home / "state"))
        yield home


@pytest.fixture(scope="module")
def cli_service() -> Iterator[Server]:
    """``convrag serve`` on the module's data directory: the commands on it ask the
    service (documents list, keys, ask) instead of starting the stores, as a user's do
    beside a running service, and answer at once."""
    with scratch_dir("cli") as path:
        env = {**os.environ, "CONVRAG_DATA_DIR": str(path)}
        server = spawn("cli service", free_port(), path / "test-serve.log", env)
        try:
            server.wait_ready()
            yield server
        finally:
            server.stop()


@pytest.fixture(scope="module")
def cli_data(cli_service: Server) -> Path:
    """The module's data directory, with its service running."""
    return cli_service.log.parent


def test_config_masks_secrets(cli_data: Path) -> None:
    out = _run(["config", "--json"], cli_data, OPENAI_API_KEY="sk-very-secret")
    data = json.loads(out.stdout)
    assert data["openai_api_key"] == "****" and "sk-very-secret" not in out.stdout
    assert data["data_dir"] == str(cli_data)


def test_a_bad_setting_exits_2_with_one_line_naming_it_not_a_traceback(cli_data: Path) -> None:
    out = _run(["config"], cli_data, CHUNK_SIZE="-5", RATE_LIMIT_PER_MINUTE="lots")
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 2 and "Traceback" not in out.stderr
    assert lines[0].startswith("error: CHUNK_SIZE='-5': input should be greater than or equal")
    assert lines[1].startswith("error: RATE_LIMIT_PER_MINUTE='lots': input should be a valid")


def test_an_unreachable_database_url_exits_2_at_once_naming_the_reason(cli_data: Path) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    refused = _run(
        ["documents", "list", "-w", "x"],
        cli_data,
        DATABASE_URL=f"postgresql://convrag:s3cret@127.0.0.1:{port}/convrag",
    )
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert refused.stderr.startswith("error: cannot connect to the database (DATABASE_URL)")
    assert "Connection refused" in refused.stderr and len(refused.stderr.splitlines()) == 1
    malformed = _run(
        ["documents", "list", "-w", "x"], cli_data, DATABASE_URL="mysql://u:s3cret@h/d"
    )
    assert malformed.returncode == 2 and "s3cret" not in malformed.stderr


def test_a_bad_setting_says_whether_the_environment_or_dotenv_set_it(tmp_path: Path) -> None:
    """The line names where to fix it, and the name it was set under when that is another
    of the setting's names."""
    (tmp_path / ".env").write_text("chunk_size=5\n")
    out = _run(["config"], tmp_path / ".convrag", cwd=tmp_path, CONVRAG_EMBED_THREADS="abc")
    assert out.returncode == 2
    lines = sorted(out.stderr.strip().splitlines())
    assert lines[0].startswith("error: CHUNK_SIZE='5': ")
    assert lines[0].endswith("(set in .env)")
    assert lines[1].startswith("error: EMBEDDING_THREADS='abc': ")
    assert lines[1].endswith("(set in the environment, as CONVRAG_EMBED_THREADS)")


def test_config_shows_a_long_data_dir_whole_on_a_narrow_terminal(tmp_path: Path) -> None:
    deep = tmp_path.joinpath(*["a-deep-directory"] * 8, ".convrag")
    out = _run(["config"], deep, COLUMNS="80")
    assert out.returncode == 0, out.stderr
    assert "…" not in out.stdout
    value, in_row = "", False
    for line in out.stdout.splitlines():
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if len(cells) != 3:
            continue
        if cells[0]:
            in_row = cells[0] == "data_dir"
        if in_row:
            value += cells[1]
    assert value == str(deep)


def test_config_help_names_every_source_its_table_shows() -> None:
    out = subprocess.run([EXE, "config", "--help"], capture_output=True, text=True, check=True)
    said = " ".join(out.stdout.split())
    for source in ("environment", ".env", "default", "derived"):
        assert source in said


def test_config_refuses_an_embedding_model_the_service_cannot_load(cli_data: Path) -> None:
    out = _run(["config"], cli_data, EMBEDDING_MODEL="bogus")
    assert out.returncode == 2 and "unknown EMBEDDING_MODEL 'bogus'" in out.stderr
    assert "local:all-MiniLM-L6-v2-int8" in out.stderr


def test_ingest_then_search_json_and_idempotent_reingest(cli_data: Path, tmp_path: Path) -> None:
    doc = tmp_path / "leave.md"
    doc.write_text("Every employee gets 25 days of paid annual leave per year.")
    first = _run(["ingest", str(doc), "-w", "cli", "-q"], cli_data)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["added"] == 1
    again = _run(["ingest", str(doc), "-w", "cli", "-q"], cli_data)
    assert json.loads(again.stdout) == {
        "added": 0,
        "updated": 0,
        "unchanged": 1,
        "moved": 0,
        "chunks_written": 0,
        "skipped": 0,
    }
    found = _run(["search", "annual leave days", "-w", "cli", "--json"], cli_data)
    hits = json.loads(found.stdout)
    assert set(hits[0]) == {"chunk_id", "document_id", "text", "score", "dense_score", "bm25_score"}
    assert "25 days" in hits[0]["text"]
    other = _run(["search", "annual leave days", "-w", "other", "--json"], cli_data)
    assert json.loads(other.stdout) == []
    reindexed = _run(["reindex", "-w", "cli", "-q"], cli_data)
    assert reindexed.returncode == 0, reindexed.stderr
    assert json.loads(reindexed.stdout) == {
        "workspace": "cli",
        "chunks": 1,
        "model": "local:all-MiniLM-L6-v2-int8",
    }


def test_ask_lists_numbered_sources_under_an_answer_and_none_under_not_found(
    cli_data: Path, tmp_path: Path
) -> None:
    _ingest_leave_policy(tmp_path, "ask", cli_data)
    answered = _run(["ask", "How many days of annual leave do we get?", "-w", "ask"], cli_data)
    assert answered.returncode == 0, answered.stderr
    assert "25 days" in answered.stdout and "[1]" in answered.stdout
    assert "[1] leave" in answered.stderr
    refused = _run(["ask", "What is the capital of France?", "-w", "ask"], cli_data)
    assert refused.returncode == 0, refused.stderr
    assert "could not find" in refused.stdout
    assert "[1]" not in refused.stderr
    assert "closest sources, none of which answers: leave" in refused.stderr


def test_a_workspace_without_documents_is_named_with_those_that_have_some(
    cli_data: Path, tmp_path: Path
) -> None:
    _ingest_leave_policy(tmp_path, "typo-real", cli_data)
    for args in (["ask", "How many days of leave?"], ["search", "leave"], ["documents", "list"]):
        out = _run([*args, "-w", "typo-rael"], cli_data)
        assert out.returncode == 0, out.stderr
        assert "workspace 'typo-rael' has no documents" in out.stderr
        assert "typo-real" in out.stderr.split("workspaces with documents:")[1]
    empty = _run(["ask", "   ", "-w", "typo-real"], cli_data)
    assert empty.returncode == 2 and "the question is empty" in empty.stderr


def test_ingest_into_a_log_prints_progress_lines_not_a_bar(cli_data: Path, tmp_path: Path) -> None:
    for i in range(3):
        (tmp_path / f"policy-{i}.md").write_text(f"Policy {i}: staff may work from home.")
    out = _run(["ingest", str(tmp_path), "-w", "cli-log"], cli_data)
    assert out.returncode == 0, out.stderr
    lines = out.stderr.splitlines()
    assert lines[-1].startswith("documents stored: 3/3 (100%)")
    assert lines[0].startswith("reading: 0/3 files (0%)")
    assert any(line.startswith("chunks embedded: 3/3 (100%)") for line in lines), lines
    assert "\x1b[" not in out.stderr  # no terminal control codes in a log


def test_bad_input_exits_2_with_the_problem_named(cli_data: Path, tmp_path: Path) -> None:
    bad = tmp_path / "slides.pptx"
    bad.write_bytes(b"PK")
    out = _run(["ingest", str(bad), "-w", "cli"], cli_data)
    assert out.returncode == 2 and "unsupported format '.pptx'" in out.stderr
    missing = _run(["ingest", str(tmp_path / "nope.txt"), "-w", "cli"], cli_data)
    assert missing.returncode == 2 and "no such file" in missing.stderr


def test_error_messages_are_one_line_whatever_the_path_length(
    cli_data: Path, tmp_path: Path
) -> None:
    deep = tmp_path.joinpath(*(["a-rather-long-directory-name"] * 8))
    deep.mkdir(parents=True)
    missing = deep / "[not] here.txt"
    out = _run(["ingest", str(missing), "-w", "cli"], cli_data, COLUMNS="40")
    assert out.returncode == 2
    lines = [line for line in out.stderr.splitlines() if "error:" in line]
    assert len(lines) == 1 and str(missing) in lines[0] and "no such file" in lines[0]


def test_eval_refuses_an_unknown_or_bad_knob_before_any_work(cli_data: Path) -> None:
    for knob, problem in [
        ("feedbackweight=0.2", "--set feedbackweight: not a context knob"),
        ("feedback_weight=9", "feedback_weight must be within [0, 2]"),
    ]:
        out = _run(["eval", "mtrag", "--data", "/nonexistent", "--set", knob], cli_data)
        assert out.returncode == 2 and problem in out.stderr


def test_keys_create_prints_the_key_alone_and_notes_a_workspace_without_documents(
    cli_data: Path,
) -> None:
    out = _run(["keys", "create", "-w", "cli-keys-first"], cli_data)
    assert out.returncode == 0 and out.stdout.strip().startswith("crk_")
    assert len(out.stdout.strip().splitlines()) == 1
    assert "note: workspace 'cli-keys-first' has no documents" in out.stderr


def test_version_prints_the_package_version(cli_data: Path) -> None:
    from convrag import __version__

    out = _run(["--version"], cli_data)
    assert out.returncode == 0 and out.stdout.strip() == f"convrag {__version__}"


def test_ingesting_a_directory_names_every_file_it_skipped(cli_data: Path, tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("The office opens at eight every weekday morning.")
    (tmp_path / "deck.pptx").write_bytes(b"PK")
    (tmp_path / ".DS_Store").write_bytes(b"\0")
    (tmp_path / "gone.md").symlink_to(tmp_path / "moved-away.md")
    out = _run(["ingest", str(tmp_path), "-w", "cli-skip", "-q"], cli_data)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["added"] == 1
    assert "skipped" in out.stderr and "deck.pptx" in out.stderr and ".pptx" in out.stderr
    assert ".DS_Store" not in out.stderr
    assert "gone.md: a link to" in out.stderr and "which does not exist" in out.stderr


def test_a_command_on_a_directory_without_a_store_says_it_creates_a_new_one(
    tmp_path: Path,
) -> None:
    """CONVRAG_DATA_DIR names the directory: the command creates the store there and says
    so, once. A record that a killed service left there is ignored, and removed."""
    fresh = tmp_path / "elsewhere" / ".convrag"
    first = _run(["documents", "list", "-w", "cli"], fresh)
    assert first.returncode == 0, first.stderr
    assert f"no convrag store in {fresh}; creating a new, empty one" in first.stderr
    gone = subprocess.Popen(["true"])
    gone.wait()
    write_record(fresh, ServiceRecord(gone.pid, "http://127.0.0.1:9", "token", "settings"))
    again = _run(["documents", "list", "-w", "cli"], fresh)
    assert again.returncode == 0, again.stderr
    assert "no convrag store" not in again.stderr
    assert not (fresh / RECORD_NAME).exists()


def test_commands_beside_a_running_service_are_answered_by_it(
    cli_service: Server, cli_data: Path, tmp_path: Path
) -> None:
    """documents list, keys create and ask go to the service on the data directory (its
    access log shows them), which answers from the stores it holds open."""
    _ingest_leave_policy(tmp_path, "beside", cli_data)
    listed = _run(["documents", "list", "-w", "beside"], cli_data)
    assert [json.loads(line)["title"] for line in listed.stdout.splitlines()] == ["leave"]
    key = _run(["keys", "create", "-w", "beside"], cli_data)
    assert key.returncode == 0 and key.stdout.startswith("crk_"), key.stderr
    asked = _run(["ask", "How many days of annual leave do we get?", "-w", "beside"], cli_data)
    assert asked.returncode == 0 and "25 days" in asked.stdout, asked.stderr
    log = cli_service.log.read_text()
    for name in ("documents-list", "keys-create", "ask"):
        assert f'"POST /admin/v1/{name} HTTP/1.1" 200' in log


def test_a_command_from_another_directory_finds_the_store_or_names_where_it_is(
    cli_data: Path, tmp_path: Path, user_dirs: Path
) -> None:
    """Without CONVRAG_DATA_DIR: the nearest .convrag holding a store, from anywhere below
    it; from a directory with none (and no per-user store), exit 2 naming the stores this
    user has used, how to point at one, and --new, creating nothing."""
    from convrag.data_dirs import holds_store

    assert _run(["keys", "list", "-w", "cli"], cli_data).returncode == 0  # a store used
    project = tmp_path / "project"
    (project / "src" / "deep").mkdir(parents=True)
    (project / ".convrag").symlink_to(cli_data)
    inside = _run(["documents", "list", "-w", "typo"], None, cwd=project / "src" / "deep")
    assert inside.returncode == 0, inside.stderr
    assert "workspace 'typo' has no documents (workspaces with documents:" in inside.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    lost = _run(["documents", "list", "-w", "cli"], None, cwd=elsewhere)
    assert lost.returncode == 2, lost.stderr
    [line] = lost.stderr.splitlines()
    assert line.startswith("error: no convrag store found: CONVRAG_DATA_DIR is unset")
    assert f"Your convrag stores: {cli_data} (CONVRAG_DATA_DIR={cli_data})" in line
    assert "CONVRAG_DATA_DIR=DIR, or cd into the folder that holds its .convrag" in line
    assert "--new" in line and not holds_store(user_dirs / "data" / "convrag")


def test_ingesting_a_manual_skips_its_navigation_pages_and_fails_only_on_a_corrupt_file(
    tmp_path: Path,
) -> None:
    """Pages of navigation alone are a note, not a failure (exit 0); a corrupt PDF beside
    them fails the command (exit 1) naming it, the rest still ingested. The command says
    at once that it starts the stores."""
    manual = tmp_path / "manual"
    manual.mkdir()
    (manual / "index.html").write_text(
        "<html><head><title>Top</title></head><body><div class='header'>Next: "
        "<a href='using.html'>Using it</a></div><nav><a href='using.html'>1 Using it</a>"
        "</nav></body></html>"
    )
    (manual / "using.html").write_text(
        "<html><head><title>Using it</title></head><body><h2>Using it</h2><p>Prepare a "
        "call interface first, then call the function through it.</p></body></html>"
    )
    data = tmp_path / "data"
    done = _run(["ingest", str(manual), "-w", "manual"], data)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["added"] == 1 and json.loads(done.stdout)["skipped"] == 1
    assert f"skipped {manual / 'index.html'}: navigation only, no text to index" in done.stderr
    assert f"starting the stores in {data} ..." in done.stderr
    (manual / "broken.pdf").write_bytes(b"%PDF-1.4 \x00\x01 not a pdf" * 40)
    failed = _run(["ingest", str(manual), "-w", "manual", "-q"], data)
    assert failed.returncode == 1
    assert f"not ingested: {manual / 'broken.pdf'}: not a readable PDF" in failed.stderr
    assert json.loads(failed.stdout)["unchanged"] == 1


def test_serve_detach_runs_in_the_background_until_convrag_stop(tmp_path: Path) -> None:
    """In a per-user store made with --new: serve --detach returns once the service
    answers, logging to serve.log; the commands ask it; a second serve is refused; stop
    stops it, and says so when none runs."""
    from convrag.stores.embedded import pid_alive

    with scratch_dir("home") as home:
        env = {"XDG_DATA_HOME": str(home / "data"), "XDG_STATE_HOME": str(home / "state")}
        store, port = home / "data" / "convrag", free_port()
        refused = _run(["serve", "--detach", "--port", str(port)], None, cwd=tmp_path, **env)
        assert refused.returncode == 2 and "--new" in refused.stderr
        try:
            started = _run(
                ["--new", "serve", "--detach", "--port", str(port)], None, cwd=tmp_path, **env
            )
            assert started.returncode == 0, started.stderr
            url = f"http://127.0.0.1:{port}"
            assert f"convrag serving at {url}" in started.stdout
            assert f"log: {store / 'serve.log'}" in started.stdout
            record = read_record(store)
            assert record is not None and record.url == url
            assert stat.S_IMODE((store / RECORD_NAME).stat().st_mode) == 0o600
            twice = _run(["serve", "--port", str(free_port())], None, cwd=tmp_path, **env)
            assert twice.returncode == 2 and f"already runs on {store} at {url}" in twice.stderr
            key = _run(["keys", "create", "-w", "bg"], None, cwd=tmp_path, **env)
            assert key.returncode == 0 and key.stdout.startswith("crk_"), key.stderr
            log = (store / "serve.log").read_text()
            assert '"POST /admin/v1/keys-create HTTP/1.1" 200' in log
        finally:
            stopped = _run(["stop"], None, cwd=tmp_path, **env)
        assert stopped.returncode == 0, stopped.stderr
        assert stopped.stdout.strip() == f"stopped the convrag service at {url} (pid {record.pid})"
        assert not pid_alive(record.pid) and not (store / RECORD_NAME).exists()
        none = _run(["stop"], None, cwd=tmp_path, **env)
        assert none.returncode == 1 and f"no convrag service runs on {store}" in none.stderr


def test_help_shows_flags_without_a_type_and_names_every_format(cli_data: Path) -> None:
    top = _run(["--help"], cli_data)
    ingest = _run(["ingest", "--help"], cli_data)
    assert top.returncode == 0 and ingest.returncode == 0
    assert "<bool>" not in top.stdout + ingest.stdout
    assert "--quiet" in ingest.stdout and ".docx" in ingest.stdout
    assert "-w, --workspace WORKSPACE" in ingest.stdout and "{PATH}..." in ingest.stdout
    commands = top.stdout.split("Commands:")[1]
    assert commands.index("ingest") < commands.index("ask") < commands.index("serve")


def test_keys_list_shows_each_key_by_fingerprint_and_revocation_never_the_key(
    cli_data: Path,
) -> None:
    import hashlib

    kept = _run(["keys", "create", "-w", "cli-keys"], cli_data).stdout.strip()
    revoked = _run(["keys", "create", "-w", "cli-keys"], cli_data).stdout.strip()
    assert _run(["keys", "revoke", revoked], cli_data).returncode == 0
    out = _run(["keys", "list", "-w", "cli-keys"], cli_data)
    assert out.returncode == 0, out.stderr
    assert kept not in out.stdout and revoked not in out.stdout
    listed = [json.loads(line) for line in out.stdout.splitlines()]
    assert [k["fingerprint"] for k in listed] == [
        hashlib.sha256(k.encode()).hexdigest()[:12] for k in (kept, revoked)
    ]
    assert [k["revoked"] for k in listed] == [False, True]
    assert [k["prefix"] for k in listed] == [kept[:8], revoked[:8]]
    assert listed[0]["revoked_at"] is None and listed[1]["revoked_at"]
    assert set(listed[0]) == {"id", "prefix", "fingerprint", "created_at", "revoked", "revoked_at"}
    bad = _run(["keys", "list", "-w", "no spaces"], cli_data)
    assert bad.returncode == 2 and "invalid workspace id" in bad.stderr


def test_keys_revoke_takes_the_id_prefix_or_fingerprint_that_keys_list_shows(
    cli_data: Path,
) -> None:
    workspace = "cli-revoke"
    keys = [_run(["keys", "create", "-w", workspace], cli_data).stdout.strip() for _ in range(4)]
    listed = [
        json.loads(line)
        for line in _run(["keys", "list", "-w", workspace], cli_data).stdout.splitlines()
    ]
    by_id, by_start, by_prefix, by_fingerprint = listed

    refs = (by_id["id"], by_start["id"][:8], by_prefix["prefix"], by_fingerprint["fingerprint"])
    for ref in refs:
        done = _run(["keys", "revoke", ref, "-w", workspace], cli_data)
        assert done.returncode == 0, done.stderr
    after = [
        json.loads(line)
        for line in _run(["keys", "list", "-w", workspace], cli_data).stdout.splitlines()
    ]
    assert [k["revoked"] for k in after] == [True] * 4
    assert json.loads(done.stdout)["revoked"] == by_fingerprint["id"]

    again = _run(["keys", "revoke", by_id["id"]], cli_data)
    assert again.returncode == 1 and "already revoked" in again.stderr
    assert keys[0] not in again.stderr


def test_keys_revoke_refuses_a_name_that_matches_no_key_or_is_too_short(cli_data: Path) -> None:
    workspace = "cli-revoke-unknown"
    _run(["keys", "create", "-w", workspace], cli_data)
    none = _run(["keys", "revoke", "ffffffff-0000", "-w", workspace], cli_data)
    assert none.returncode == 1 and "no key in workspace cli-revoke-unknown" in none.stderr
    assert "convrag keys list" in none.stderr
    short = _run(["keys", "revoke", "ab", "-w", workspace], cli_data)
    assert short.returncode == 2 and "too short" in short.stderr
    still = _run(["keys", "list", "-w", workspace], cli_data).stdout.splitlines()
    assert [json.loads(line)["revoked"] for line in still] == [False]


def test_a_bad_workspace_id_exits_2_naming_the_rule_before_any_work(cli_data: Path) -> None:
    for args in (["keys", "create"], ["documents", "list"]):
        out = _run([*args, "-w", "../x"], cli_data)
        assert out.returncode == 2, out.stderr
        assert "invalid workspace id" in out.stderr and "Traceback" not in out.stderr


def test_ask_in_an_unknown_or_foreign_conversation_exits_2_without_a_new_one(
    cli_data: Path, tmp_path: Path
) -> None:
    _ingest_leave_policy(tmp_path, "mine", cli_data)
    first = _run(["ask", "How many days of leave?", "-w", "mine", "--json"], cli_data)
    conv = json.loads(first.stdout)["conversation_id"]
    for workspace, conversation in (
        ("other", conv),
        ("mine", "00000000-0000-0000-0000-000000000000"),
    ):
        out = _run(["ask", "And sick leave?", "-w", workspace, "-c", conversation], cli_data)
        assert out.returncode == 2, out.stderr
        assert f"no conversation '{conversation}' in workspace '{workspace}'" in out.stderr
        assert "Traceback" not in out.stderr


def test_ingest_of_a_directory_stores_the_readable_files_and_names_the_others(
    cli_data: Path, tmp_path: Path
) -> None:
    (tmp_path / "good.md").write_text("Staff may work from home two days a week.")
    (tmp_path / "empty.txt").write_text("")
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    out = _run(["ingest", str(tmp_path), "-w", "partial"], cli_data)
    assert out.returncode == 1, out.stderr
    assert json.loads(out.stdout)["added"] == 1
    assert "empty.txt: empty file, no text to index" in out.stderr  # a note, not a failure
    assert "broken.pdf: not a readable PDF" in out.stderr
    assert "EOF marker" not in out.stderr and "Traceback" not in out.stderr
    listed = _run(["documents", "list", "-w", "partial"], cli_data)
    assert "good" in listed.stdout


def test_serve_on_a_port_in_use_exits_2_before_starting_the_stores(cli_data: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = _run(["serve", "--port", str(port)], cli_data)
    assert out.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in out.stderr and "--port" in out.stderr


def test_ingest_prune_deletes_the_documents_whose_files_left_the_directory(
    cli_data: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "policies"
    folder.mkdir()
    (folder / "parking.md").write_text("Staff park in lot B behind the warehouse.")
    (folder / "lunch.md").write_text("Lunch is served in the canteen at noon.")
    first = _run(["ingest", str(folder), "-w", "pruning", "-q"], cli_data)
    assert json.loads(first.stdout)["added"] == 2, first.stderr
    (folder / "parking.md").unlink()
    kept = _run(["ingest", str(folder), "-w", "pruning", "-q"], cli_data)
    assert "pruned" not in json.loads(kept.stdout)
    # Still answered from: the ingest says so, and how to remove it.
    assert "1 document(s) of workspace pruning were read from files that no longer" in kept.stderr
    assert str((folder / "parking.md").resolve()) in kept.stderr and "--prune" in kept.stderr
    pruned = _run(["ingest", str(folder), "-w", "pruning", "-q", "--prune"], cli_data)
    assert json.loads(pruned.stdout)["pruned"] == [str((folder / "parking.md").resolve())]
    assert "no longer exist" not in pruned.stderr
    listed = _run(["documents", "list", "-w", "pruning"], cli_data)
    assert [json.loads(line)["title"] for line in listed.stdout.splitlines()] == ["lunch"]
    (folder / "lunch.md").unlink()
    emptied = _run(["ingest", str(folder), "-w", "pruning", "-q", "--prune"], cli_data)
    assert json.loads(emptied.stdout)["pruned"] == [str((folder / "lunch.md").resolve())]


def test_ingest_prune_without_a_directory_exits_2_saying_it_needs_one(
    cli_data: Path, tmp_path: Path
) -> None:
    doc = tmp_path / "one.md"
    doc.write_text("One fact.")
    out = _run(["ingest", str(doc), "-w", "pruning", "--prune"], cli_data)
    assert out.returncode == 2 and "--prune needs a directory" in out.stderr


def test_keys_revoke_in_the_wrong_workspace_never_prints_the_key(cli_data: Path) -> None:
    key = _run(["keys", "create", "-w", "cli-revoke-secret"], cli_data).stdout.strip()
    out = _run(["keys", "revoke", key, "-w", "cli-revoke-elsewhere"], cli_data)
    assert out.returncode == 1 and "no key in workspace cli-revoke-elsewhere" in out.stderr
    assert key not in out.stderr and f"{key[:8]}…" in out.stderr


def test_ask_says_when_the_llm_failed_and_the_answer_is_quoted_instead(
    cli_data: Path, tmp_path: Path
) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on: the LLM is down
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    _ingest_leave_policy(tmp_path, "ask-down", cli_data)
    out = _run(
        ["ask", "How many days of annual leave do we get?", "-w", "ask-down"],
        cli_data,
        OPENAI_API_KEY="sk-test",
        OPENAI_BASE_URL=f"http://127.0.0.1:{port}/v1",
    )
    assert out.returncode == 0, out.stderr
    assert "25 days" in out.stdout
    assert "the LLM failed (" in out.stderr and "quoted from the sources instead" in out.stderr


@pytest.mark.parametrize(
    ("model", "said"),
    [
        ("nonexistent:model", "unknown provider 'nonexistent'"),
        ("anthropic:claude-3-haiku", "langchain-anthropic"),
        ("openai:stub-model", "no OPENAI_API_KEY; set OPENAI_API_KEY, or OPENAI_BASE_URL"),
    ],
)
def test_config_refuses_an_llm_model_the_service_cannot_build(
    cli_data: Path, model: str, said: str
) -> None:
    out = _run(["config"], cli_data, LLM_MODEL=model)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.startswith(f"error: LLM_MODEL '{model}' cannot be used: ")
    assert said in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_an_llm_on_a_local_server_needs_no_api_key(cli_data: Path) -> None:
    out = _run(
        ["config", "--json"],
        cli_data,
        LLM_MODEL="openai:stub-model",
        OPENAI_BASE_URL="http://127.0.0.1:9/v1",
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["effective_llm_model"] == "openai:stub-model"


def test_config_refuses_a_serper_base_url_without_a_scheme(cli_data: Path) -> None:
    out = _run(["config"], cli_data, SERPER_BASE_URL="localhost:8712")
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    assert "SERPER_BASE_URL='localhost:8712'" in out.stderr
    assert "e.g. http://localhost:8712" in out.stderr


def test_a_data_dir_that_cannot_be_written_exits_2_in_one_line_naming_it(tmp_path: Path) -> None:
    unwritable = Path("/sys/convrag-cannot-write")  # sysfs refuses new entries, even to root
    for args in (["documents", "list", "-w", "x"], ["serve", "--port", "8793"]):
        out = _run(args, unwritable)
        assert out.returncode == 2, out.stderr
        [line] = [line for line in out.stderr.splitlines() if line.startswith("error:")]
        assert line.startswith(f"error: cannot write {unwritable}")
        assert "must be a writable directory" in line and "Traceback" not in out.stderr


def _serve_docs(data_dir: Path, log: Path, *args: str) -> tuple[Server, dict[str, str]]:
    """``convrag serve --docs ...`` started and ready, with what it printed before the
    server started: the ingest's JSON report, the workspace, the key (and its file) and
    the page's URL."""
    env = {**os.environ, "CONVRAG_DATA_DIR": str(data_dir)}
    log.unlink(missing_ok=True)
    server = spawn("serve --docs", free_port(), log, env, *args)
    try:
        server.wait_ready()
    except BaseException:
        server.stop()
        raise
    text = log.read_text()
    printed = re.search(
        r"^(?P<report>\{.*\})\nworkspace: (?P<workspace>\S+)\n"
        r"API key \(also in (?P<keyfile>.+)\): (?P<key>crk_\S+)\nchat page: (?P<url>\S+)$",
        text,
        re.MULTILINE,
    )
    assert printed, text
    # All of it before the server started.
    assert printed.end() < text.index("Started server process"), text
    return server, printed.groupdict()


def test_serve_docs_ingests_a_folder_prints_its_key_and_url_and_answers_from_it(
    tmp_path: Path,
) -> None:
    """One step from a folder to a chat: ``serve --docs`` ingests it, prints a key that
    opens it and the page's URL, and serves; started again it ingests nothing twice and
    prints the same key, kept in CONVRAG_DATA_DIR/NAME.key readable by its owner alone."""
    folder = tmp_path / "handbook"
    (folder / "site").mkdir(parents=True)
    (folder / "lunch.md").write_text("# Lunch\n\nLunch is served in the canteen at noon.\n")
    (folder / "site" / "parking.md").write_text("# Parking\n\nStaff park in lot B.\n")
    args = ("--docs", str(folder), "-w", "handbook-docs")
    with scratch_dir("docs") as data_dir:
        _serve_docs_twice(data_dir, tmp_path, args)


def _serve_docs_twice(data_dir: Path, tmp_path: Path, args: tuple[str, ...]) -> None:
    server, printed = _serve_docs(data_dir, tmp_path / "serve.log", *args)
    try:
        assert printed["workspace"] == "handbook-docs" and printed["url"] == f"{server.url}/"
        assert json.loads(printed["report"])["added"] == 2
        keyfile = Path(printed["keyfile"])
        assert keyfile == data_dir / "handbook-docs.key"
        assert keyfile.read_text().strip() == printed["key"]
        assert stat.S_IMODE(keyfile.stat().st_mode) == 0o600
        _assert_answers_from_the_folder(server.url, printed["key"])
    finally:
        assert server.stop() != -signal.SIGKILL, server.tail()  # it stopped on SIGTERM
    again, reprinted = _serve_docs(data_dir, tmp_path / "again.log", *args)
    again.stop()
    assert reprinted["key"] == printed["key"]
    assert json.loads(reprinted["report"])["unchanged"] == 2


def _assert_answers_from_the_folder(url: str, key: str) -> None:
    """With ``key``: the workspace is named, both files are listed, a question about one
    is answered from it, and the page is served."""
    import httpx

    with httpx.Client(base_url=url, timeout=120, headers={"Authorization": f"Bearer {key}"}) as c:
        assert c.get("/v1/workspace").json() == {"workspace": "handbook-docs"}
        listed = c.get("/v1/documents").json()
        assert sorted(d["source"] for d in listed) == ["lunch.md", "parking.md"]
        assert all(d["status"] == "ready" for d in listed), listed
        conversation = c.post("/v1/conversations", json={}).json()["conversation_id"]
        answer = c.post(
            f"/v1/conversations/{conversation}/messages",
            json={"content": "When is lunch served?"},
            headers={"Accept": "application/json"},
        )
        assert answer.status_code == 200, answer.text
        assert "noon" in answer.json()["answer"] and not answer.json()["no_answer"]
        assert c.get("/").status_code == 200


def test_serve_docs_with_nothing_to_read_exits_2_naming_the_path_before_starting(
    tmp_path: Path,
) -> None:
    cli_data = tmp_path / "data"  # its own: the module's has a service running
    missing = tmp_path / "no-such-folder"
    out = _run(["serve", "--docs", str(missing), "--port", str(free_port())], cli_data)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.startswith(f"error: --docs {missing}: no such file or folder; point")
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.rtf").write_text("not a supported format")
    (empty / "blank.md").write_text("")
    out = _run(["serve", "--docs", str(empty), "-w", "x", "--port", str(free_port())], cli_data)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    blank = empty / "blank.md"
    assert f"error: nothing to serve from --docs {empty}: {blank}: the file is empty" in out.stderr
    assert "notes.rtf" in out.stderr
    assert "Started server process" not in out.stderr and not (cli_data / "x.key").exists()
    alone = _run(["serve", "-w", "mine", "--port", str(free_port())], cli_data)
    assert alone.returncode == 2 and "give --docs PATH with it" in alone.stderr
