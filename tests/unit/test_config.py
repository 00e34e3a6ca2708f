"""Settings: embedded defaults, environment overrides, masked secrets."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import AliasChoices, ValidationError

from convrag.config import Settings, setting_sources, settings_problems
from convrag.data_dirs import find_data_dir


def test_defaults_need_no_url_and_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    s = Settings()
    assert s.database_url is None and s.milvus_uri is None and s.effective_llm_model is None


def test_environment_overrides_every_url(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://u:secretpw@db/x")
    monkeypatch.setenv("MILVUS_URI", "http://milvus:19530")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("CONVRAG_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("LLM_MODEL", "openai:gpt-4.1-mini")
    s = Settings()
    assert s.milvus_uri == "http://milvus:19530"
    assert s.data_dir == tmp_path.resolve()
    assert s.effective_llm_model == "openai:gpt-4.1-mini"
    masked = s.masked()
    # The URL shows where it points; only its password is masked.
    assert masked["database_url"] == "postgresql://u:****@db/x"
    assert masked["openai_api_key"] == "****"
    assert "secretpw" not in str(masked) and "sk-secret" not in str(masked)


def test_an_api_key_alone_enables_the_default_openai_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    assert Settings().effective_llm_model == "openai:gpt-4o-mini"


def test_the_configuration_doc_names_every_setting() -> None:
    doc = (Path(__file__).parents[2] / "docs" / "configuration.md").read_text()
    table = doc.split("\n## Settings\n", 1)[1].split("\n## ", 1)[0]
    for name, field in Settings.model_fields.items():
        alias = field.validation_alias
        env = alias.choices[0] if isinstance(alias, AliasChoices) else name.upper()
        assert f"`{env}`" in table, f"{env} is not in docs/configuration.md's settings table"


@pytest.mark.parametrize("variable", ["SERPER_BASE_URL", "OPENAI_BASE_URL"])
def test_a_base_url_without_an_http_scheme_is_refused_naming_the_fix(
    monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.setenv(variable, "localhost:8712")
    with pytest.raises(ValidationError) as caught:
        Settings()
    [line] = settings_problems(caught.value)
    assert line == (
        f"{variable}='localhost:8712': must be an http:// or https:// URL with a host; "
        "add the scheme, e.g. http://localhost:8712"
    )
    monkeypatch.setenv(variable, " http://localhost:8712/v1 ")
    assert getattr(Settings(), variable.lower()) == "http://localhost:8712/v1"


@pytest.mark.parametrize(
    ("variable", "value", "line"),
    [
        ("CHUNK_OVERLAP", "900", "CHUNK_OVERLAP='900': must be smaller than CHUNK_SIZE (800)"),
        ("SSE_KEEPALIVE_S", "inf", "SSE_KEEPALIVE_S='inf': input should be a finite number"),
        (
            "MILVUS_COLLECTION",
            "bad name!",
            "MILVUS_COLLECTION='bad name!': must be a Milvus collection name",
        ),
        ("RERANKER", "foo", "RERANKER='foo': use 'none' or 'http:<url"),
        # The value may hold a password: it is never repeated.
        ("DATABASE_URL", "mysql://u:pw@h/db", "DATABASE_URL: must be a PostgreSQL URL"),
    ],
)
def test_a_setting_the_service_would_only_fail_on_later_is_refused_at_once(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, line: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValidationError) as caught:
        Settings()
    [problem] = settings_problems(caught.value)
    assert problem.startswith(line) and problem.count(f"{variable}=") <= 1


def test_an_empty_data_dir_is_the_default_not_the_current_directory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CONVRAG_DATA_DIR", "")
    assert Settings().data_dir == find_data_dir() != Path.cwd()


def test_a_libpq_connection_string_is_a_database_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "host=db dbname=convrag user=app")
    settings = Settings()
    assert settings.database_url is not None
    assert settings.database_url.get_secret_value() == "host=db dbname=convrag user=app"


def test_config_says_which_values_came_from_the_environment_and_which_from_dotenv(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A value set in both places is the environment's, as the settings read it."""
    env_file = tmp_path / ".env"
    env_file.write_text("CHUNK_SIZE=700\nrerank_top_n=20\nconvrag_data_dir=/x\n")
    monkeypatch.setenv("chunk_size", "600")
    for name in ("RERANK_TOP_N", "CONVRAG_DATA_DIR", "DATA_DIR", "LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    sources = setting_sources(Settings, env_file)
    assert sources["chunk_size"] == "environment"
    assert sources["rerank_top_n"] == ".env"
    assert sources["data_dir"] == ".env"
    assert sources["llm_model"] == "default"
    assert set(sources) == set(Settings.model_fields)
