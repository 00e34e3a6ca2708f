"""One settings class: every value has an embedded default and an environment override.

Production swaps URLs in (``DATABASE_URL``, ``MILVUS_URI``, ``OPENAI_*``, ``SERPER_API_KEY``);
leaving them unset runs the embedded stack under ``CONVRAG_DATA_DIR``.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, TypedDict
from urllib.parse import urlsplit, urlunsplit

from dotenv import dotenv_values
from pydantic import (
    AliasChoices,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, SettingsConfigDict

from convrag.data_dirs import find_data_dir

#: The defaults of ``MAX_DECOMPRESSED_BYTES`` and ``MAX_RECORDS_PER_FILE``, also for
#: callers that read a file outside a service (tests, benchmarks).
DEFAULT_MAX_DECOMPRESSED_BYTES = 200 * 1024 * 1024
DEFAULT_MAX_RECORDS = 200_000

KeywordEngine = Literal["auto", "bm25s", "milvus"]
DenseEngine = Literal["auto", "numpy", "milvus"]
MilvusConsistency = Literal["Strong", "Bounded", "Session", "Eventually"]

MAX_TTL_DAYS = 36500
"""The longest ``CONVERSATION_TTL_DAYS`` (100 years): past it, the cut-off date would
overflow."""


DEFAULT_LLM_TIMEOUT_S = 60.0
"""The answer LLM call's time limit (``LLM_TIMEOUT_S``, the ``answer_timeout_s`` knob)."""
DEFAULT_REWRITE_TIMEOUT_S = 10.0
"""The rewrite LLM call's time limit (``REWRITE_TIMEOUT_S``, ``rewrite_timeout_s``)."""
DEFAULT_WEB_SEARCH_TIMEOUT_S = 8.0
"""The web search's time limit (``WEB_SEARCH_TIMEOUT_S``, ``web_timeout_s``)."""

_COLLECTION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}")


class TimeLimits(TypedDict):
    """A run's time limits, by their ``Context`` knob names (see :attr:`Settings.time_limits`)."""

    answer_timeout_s: float
    rewrite_timeout_s: float
    web_timeout_s: float


class Settings(BaseSettings):
    """Effective configuration of one convrag process."""

    model_config = SettingsConfigDict(env_file=".env", extra="ignore", populate_by_name=True)

    data_dir: Path = Field(
        default_factory=find_data_dir,
        validation_alias=AliasChoices("CONVRAG_DATA_DIR", "data_dir"),
        description="Home of the embedded PostgreSQL and Milvus Lite data. Unset: the "
        "nearest .convrag holding a store in this directory or a parent, else the "
        "per-user $XDG_DATA_HOME/convrag (~/.local/share/convrag).",
    )
    database_url: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices("DATABASE_URL", "database_url"),
        description="PostgreSQL URL; unset starts an embedded server under the data directory.",
    )
    database_statement_timeout_s: float = Field(
        default=10.0,
        ge=0,
        validation_alias=AliasChoices(
            "DATABASE_STATEMENT_TIMEOUT_S", "database_statement_timeout_s"
        ),
        description="PostgreSQL's statement_timeout for the service's sessions, in seconds "
        "(0: none); migrations, ingest writes and whole-workspace loads run without it.",
    )
    database_lock_timeout_s: float = Field(
        default=3.0,
        ge=0,
        validation_alias=AliasChoices("DATABASE_LOCK_TIMEOUT_S", "database_lock_timeout_s"),
        description="PostgreSQL's lock_timeout for the service's sessions, in seconds "
        "(0: none); the same work as above runs without it.",
    )
    milvus_uri: str | None = Field(
        default=None,
        validation_alias=AliasChoices("MILVUS_URI", "milvus_uri"),
        description="Milvus standalone/cluster URI; unset runs a managed Milvus Lite server.",
    )
    milvus_lite: bool | None = Field(
        default=None,
        validation_alias=AliasChoices("MILVUS_LITE", "milvus_lite"),
        description="Whether MILVUS_URI is a `milvus-lite server` (it then gets Lite's index "
        "type and the in-process search engines of 'auto'); unset means only when "
        "MILVUS_URI is unset. `convrag serve --workers N` sets it for its workers.",
    )
    milvus_token: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("MILVUS_TOKEN", "milvus_token")
    )
    milvus_collection: str = Field(
        default="convrag_chunks",
        validation_alias=AliasChoices("MILVUS_COLLECTION", "milvus_collection"),
    )
    milvus_consistency: MilvusConsistency | None = Field(
        default=None,
        validation_alias=AliasChoices("MILVUS_CONSISTENCY", "milvus_consistency"),
        description="Consistency level of Milvus searches: unset means Bounded on a Milvus "
        "server (a Strong search waits for the server's next tick, about 0.2-0.4 s) and "
        "Strong on Milvus Lite. Ingests and deletes end with one strong read, so a search "
        "that follows finds them at any level (docs/operations.md).",
    )
    keyword_engine: KeywordEngine = Field(
        default="auto",
        validation_alias=AliasChoices("KEYWORD_ENGINE", "keyword_engine"),
        description="BM25 engine: 'bm25s' in process, 'milvus' server-side (needs Milvus >= "
        "2.5); 'auto' picks bm25s on Milvus Lite (about 150x faster there) and on a server "
        "without BM25, milvus on a real server that has it.",
    )
    dense_engine: DenseEngine = Field(
        default="auto",
        validation_alias=AliasChoices("DENSE_ENGINE", "dense_engine"),
        description="Dense search: 'milvus' (the server's index) or 'numpy' (exact, in "
        "process, vectors loaded from Milvus); 'auto' picks numpy on Milvus Lite, whose "
        "search scans rows in Python, and milvus on a real server.",
    )
    embedding_model: str = Field(
        default="local:all-MiniLM-L6-v2-int8",
        validation_alias=AliasChoices("EMBEDDING_MODEL", "embedding_model"),
        description="'local:all-MiniLM-L6-v2-int8' (bundled ONNX) or 'openai:<model>'.",
    )
    embedding_batch_size: int = Field(
        default=64, ge=1, validation_alias=AliasChoices("EMBEDDING_BATCH_SIZE")
    )
    embedding_threads: int = Field(
        default=2,
        ge=1,
        le=64,
        validation_alias=AliasChoices("EMBEDDING_THREADS", "CONVRAG_EMBED_THREADS"),
        description="ONNX threads of the local model in the service: a question's "
        "embedding and the no-LLM answer's sentences.",
    )
    ingest_threads: int | None = Field(
        default=None,
        ge=1,
        le=64,
        validation_alias=AliasChoices("INGEST_THREADS", "ingest_threads"),
        description="ONNX threads of ingest's child process (local model); its CPU "
        "priority is INGEST_NICE below the service's. Unset: every core this process may use.",
    )
    ingest_nice: int = Field(
        default=0,
        ge=0,
        le=19,
        validation_alias=AliasChoices("INGEST_NICE", "ingest_nice"),
        description="How much lower than the service's the ingest child's CPU priority is "
        "(a nice value added to the service's). 0: the same, so that on a core a chat "
        "thread and an ingest thread both want each gets half; an ingest beside 8 chat "
        "streams keeps about 0.58 of its rate alone while the chat's p95 rises 1.5x "
        "(`benchmarks/run.py --only ingest_beside_chat`; 5: 0.43 and 1.0x). Linux weighs "
        "nice 5 at about a third of nice 0 (chat 75%, ingest 25%); 10: about 90/10; 19: "
        "about 98.5/1.5, near the idle priority that starved ingest behind any other load.",
    )
    ingest_embedding: Literal["process", "thread"] = Field(
        default="process",
        validation_alias=AliasChoices("INGEST_EMBEDDING", "ingest_embedding"),
        description="Where ingest embeds with the local model: 'process' (a child with its "
        "own model session, at INGEST_NICE, so chat does not wait for ingest) or 'thread' "
        "(this process).",
    )
    ingest_slice_chunks: int = Field(
        default=64,
        ge=1,
        le=4096,
        validation_alias=AliasChoices("INGEST_SLICE_CHUNKS", "ingest_slice_chunks"),
        description="Chunks an upload's ingest embeds per turn of the ingest process: "
        "workspaces' uploads take turns slice by slice, and each slice's vectors are kept "
        "so that an ingest a restart stopped resumes after it.",
    )
    llm_model: str | None = Field(
        default=None,
        validation_alias=AliasChoices("LLM_MODEL", "llm_model"),
        description="'provider:model' for init_chat_model, e.g. 'openai:gpt-4o-mini'. "
        "Unset (and no OPENAI_API_KEY) runs the no-LLM path.",
    )
    openai_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("OPENAI_API_KEY", "openai_api_key")
    )
    openai_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("OPENAI_BASE_URL", "openai_base_url")
    )
    serper_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("SERPER_API_KEY", "serper_api_key")
    )
    serper_base_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("SERPER_BASE_URL", "serper_base_url"),
        description="Send Serper requests to this base URL instead (a proxy or a stub).",
    )
    reranker: str = Field(
        default="none",
        validation_alias=AliasChoices("RERANKER", "reranker"),
        description="'none', or 'http:<url>' of a TEI, Infinity, Jina or Cohere-compatible "
        "/rerank server that rescores the fused candidates.",
    )
    reranker_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("RERANKER_API_KEY", "reranker_api_key")
    )
    rerank_top_n: int = Field(
        default=30,
        ge=1,
        le=200,
        validation_alias=AliasChoices("RERANK_TOP_N", "rerank_top_n"),
        description="Fused candidates sent to the reranker.",
    )
    rerank_timeout_s: float = Field(
        default=1.0,
        gt=0,
        allow_inf_nan=False,
        validation_alias=AliasChoices("RERANK_TIMEOUT_S", "rerank_timeout_s"),
        description="After this, the fused order is kept (and the fallback recorded).",
    )
    llm_timeout_s: float = Field(
        default=DEFAULT_LLM_TIMEOUT_S,
        gt=0,
        allow_inf_nan=False,
        validation_alias=AliasChoices("LLM_TIMEOUT_S", "llm_timeout_s"),
        description="The answer LLM call's limit; after it the answer is quoted from the "
        "sources (flagged).",
    )
    rewrite_timeout_s: float = Field(
        default=DEFAULT_REWRITE_TIMEOUT_S,
        gt=0,
        allow_inf_nan=False,
        validation_alias=AliasChoices("REWRITE_TIMEOUT_S", "rewrite_timeout_s"),
        description="The rewrite LLM call's limit; after it the rules rewrite (flagged).",
    )
    web_search_timeout_s: float = Field(
        default=DEFAULT_WEB_SEARCH_TIMEOUT_S,
        gt=0,
        allow_inf_nan=False,
        validation_alias=AliasChoices("WEB_SEARCH_TIMEOUT_S", "web_search_timeout_s"),
        description="The web search's limit; after it the turn answers without the web (flagged).",
    )
    no_answer_text: str = Field(
        default="I could not find this in the workspace's documents.",
        min_length=1,
        validation_alias=AliasChoices("NO_ANSWER_TEXT"),
        description="The answer when no source is relevant enough (no citations).",
    )
    chunk_size: int = Field(default=800, ge=100, validation_alias=AliasChoices("CHUNK_SIZE"))
    chunk_overlap: int = Field(default=100, ge=0, validation_alias=AliasChoices("CHUNK_OVERLAP"))
    max_file_bytes: int = Field(
        default=20 * 1024 * 1024, ge=1, validation_alias=AliasChoices("MAX_FILE_BYTES")
    )
    max_decompressed_bytes: int = Field(
        default=DEFAULT_MAX_DECOMPRESSED_BYTES,
        ge=1,
        validation_alias=AliasChoices("MAX_DECOMPRESSED_BYTES"),
        description="Largest decompressed size of a .jsonl.gz file or a .docx (read in "
        "chunks and refused past it: a few hundred kB of gzip can expand to gigabytes), and "
        "of an HTML page's parse tree (about 1 KiB a tag).",
    )
    max_records_per_file: int = Field(
        default=DEFAULT_MAX_RECORDS,
        ge=1,
        validation_alias=AliasChoices("MAX_RECORDS_PER_FILE"),
        description="Most records one .jsonl or .jsonl.gz file may hold: each becomes a "
        "document held in memory until the file is stored, so millions of tiny records "
        "would cost gigabytes.",
    )
    retrieval_policy: Path | None = Field(
        default=None,
        validation_alias=AliasChoices("RETRIEVAL_POLICY"),
        description="A retrieval policy file (JSON: the fusion weights, the 'not found' "
        "decision and the quoted answer's numbers, as a fit command writes it); unset, the "
        "packaged convrag/retrieval/policy.json.",
    )
    max_body_bytes: int = Field(
        default=1024 * 1024,
        ge=1024,
        validation_alias=AliasChoices("MAX_BODY_BYTES"),
        description="Largest JSON request body (uploads use MAX_FILE_BYTES).",
    )
    sse_keepalive_s: float = Field(
        default=15.0,
        gt=0,
        allow_inf_nan=False,
        validation_alias=AliasChoices("SSE_KEEPALIVE_S"),
        description="Seconds between the SSE comments (`: keep-alive`) of a streamed "
        "answer, so proxies with an idle timeout keep the stream open while the LLM is slow.",
    )
    rate_limit_per_minute: int = Field(
        default=600,
        ge=1,
        validation_alias=AliasChoices("RATE_LIMIT_PER_MINUTE"),
        description="Requests per minute per API key (429 with Retry-After above it).",
    )

    conversation_ttl_days: float | None = Field(
        default=None,
        validation_alias=AliasChoices("CONVERSATION_TTL_DAYS", "conversation_ttl_days"),
        description="Delete conversations (turns, citations, feedback, checkpoints) whose "
        "last activity is older than this many days; unset or 0 keeps them "
        "forever. The service sweeps at start and hourly; `convrag sweep` runs one sweep.",
    )

    @field_validator("conversation_ttl_days", mode="before")
    @classmethod
    def _ttl_days(cls, value: object) -> float | None:
        # Before validation, so that every bad value (text, a negative, NaN) gets one
        # message naming the variable instead of pydantic's generic float error.
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        try:
            days = float(str(value))  # via str: True is not a number of days
        except ValueError:
            days = float("nan")
        if not (0 <= days <= MAX_TTL_DAYS):  # NaN fails too
            raise ValueError(
                f"CONVERSATION_TTL_DAYS must be a number of days between 0 and {MAX_TTL_DAYS} "
                f"(e.g. 30 or 0.5), or 0 or unset to keep conversations forever; got {value!r}"
            )
        return days or None

    @field_validator("openai_base_url", "serper_base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        # Without a scheme, "localhost:8712" parses as scheme "localhost": the clients
        # then fail on every call, far from the setting that caused it.
        if value is None or not value.strip():
            return None
        value = value.strip()
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            host = value.split("://")[-1].lstrip("/") or "localhost:8080"
            raise ValueError(
                f"must be an http:// or https:// URL with a host; add the scheme, "
                f"e.g. http://{host}"
            )
        return value

    @field_validator("reranker")
    @classmethod
    def _reranker(cls, value: str) -> str:
        if value == "none":  # the default, without importing the HTTP client's module
            return value
        from convrag.rerank import endpoint

        try:
            endpoint(value)
        except ValueError as exc:  # it names the accepted forms after "RERANKER=...: "
            raise ValueError(str(exc).split(": ", 1)[-1]) from None
        return value

    @field_validator("chunk_overlap")
    @classmethod
    def _overlap(cls, value: int, info: ValidationInfo) -> int:
        # Checked here, not per ingest: every upload would fail on it, long after start.
        size = info.data.get("chunk_size")
        if size is not None and value >= size:
            raise ValueError(f"must be smaller than CHUNK_SIZE ({size})")
        return value

    @field_validator("milvus_collection")
    @classmethod
    def _collection(cls, value: str) -> str:
        if not _COLLECTION_NAME.fullmatch(value):
            raise ValueError(
                "must be a Milvus collection name: a letter or '_' first, then letters, "
                "digits or '_', 255 characters at most"
            )
        return value

    @field_validator("database_url", mode="before")
    @classmethod
    def _postgres_url(cls, value: object) -> object:
        text = value.get_secret_value() if isinstance(value, SecretStr) else value
        if not isinstance(text, str) or not text.strip():
            return None if isinstance(text, str) else value
        scheme = urlsplit(text.strip()).scheme
        if scheme not in ("postgresql", "postgres") and "=" not in text:
            # The value may hold a password: it is not repeated.
            raise ValueError(
                "must be a PostgreSQL URL (postgresql://user:password@host:5432/dbname) "
                "or a libpq connection string (host=... dbname=...)"
            )
        return text.strip()

    @field_validator("data_dir", mode="before")
    @classmethod
    def _default_when_empty(cls, value: object) -> object:
        # CONVRAG_DATA_DIR= (set but empty) would otherwise be the current directory.
        return find_data_dir() if isinstance(value, str) and not value.strip() else value

    @field_validator("data_dir")
    @classmethod
    def _absolute(cls, value: Path) -> Path:
        return value.expanduser().resolve()

    @property
    def is_milvus_lite(self) -> bool:
        """Whether the Milvus in use is Milvus Lite (the managed one, or MILVUS_LITE)."""
        return self.milvus_uri is None if self.milvus_lite is None else self.milvus_lite

    @property
    def effective_llm_model(self) -> str | None:
        """The chat model to use, or None for the no-LLM path."""
        if self.llm_model:
            return self.llm_model
        if self.openai_api_key is not None:
            return "openai:gpt-4o-mini"
        return None

    @property
    def time_limits(self) -> TimeLimits:
        """The time limits a run takes from the environment, by their ``Context`` knob
        names: the service, the CLI and the Python API start each run's context from
        them (a run's own knobs still win)."""
        return TimeLimits(
            answer_timeout_s=self.llm_timeout_s,
            rewrite_timeout_s=self.rewrite_timeout_s,
            web_timeout_s=self.web_search_timeout_s,
        )

    @property
    def effective_milvus_consistency(self) -> MilvusConsistency:
        """``milvus_consistency``, or its default for the Milvus in use."""
        if self.milvus_consistency is not None:
            return self.milvus_consistency
        return "Strong" if self.is_milvus_lite else "Bounded"

    @property
    def effective_ingest_threads(self) -> int:
        """``ingest_threads``, or the cores this process may run on (at most 64)."""
        if self.ingest_threads is not None:
            return self.ingest_threads
        return max(1, min(64, len(os.sched_getaffinity(0))))

    def masked(self) -> dict[str, Any]:
        """Settings as a dict with secrets masked, for ``convrag config``."""
        out: dict[str, Any] = {}
        for name in type(self).model_fields:
            value = getattr(self, name)
            if isinstance(value, SecretStr) and name == "database_url":
                out[name] = _without_password(value.get_secret_value())
            elif isinstance(value, SecretStr):
                out[name] = "****" if value.get_secret_value() else ""
            elif isinstance(value, Path):
                out[name] = str(value)
            else:
                out[name] = value
        out["effective_llm_model"] = self.effective_llm_model
        out["effective_ingest_threads"] = self.effective_ingest_threads
        return out


def _variable_names(name: str, info: FieldInfo) -> list[str]:
    """The names (lower case) a setting is read under, in the order the settings try them."""
    alias = info.validation_alias
    if isinstance(alias, AliasChoices):
        choices = [c.lower() for c in alias.choices if isinstance(c, str)]
    else:
        choices = [(alias if isinstance(alias, str) else name).lower()]
    return list(dict.fromkeys(choices))


def _names_set(env_file: Path) -> tuple[dict[str, str], dict[str, str]]:
    """The variables of the environment and of ``env_file``, ``{lower case: as written}``."""
    environ = {k.lower(): k for k in os.environ}
    dotenv = (
        {k.lower(): k for k, v in dotenv_values(env_file).items() if v is not None}
        if env_file.is_file()
        else {}
    )
    return environ, dotenv


def setting_sources(settings: type[BaseSettings], env_file: Path = Path(".env")) -> dict[str, str]:
    """Where each setting's value comes from: ``environment``, ``.env`` (the file
    pydantic-settings reads from the working directory) or ``default``. The environment
    wins over the file, and names are matched without regard to case, as the settings
    read them."""
    environ, dotenv = _names_set(env_file)
    sources: dict[str, str] = {}
    for name, info in settings.model_fields.items():
        names = _variable_names(name, info)
        if any(n in environ for n in names):
            sources[name] = "environment"
        elif any(n in dotenv for n in names):
            sources[name] = ".env"
        else:
            sources[name] = "default"
    return sources


def where_set(settings: type[BaseSettings], variable: str, env_file: Path = Path(".env")) -> str:
    """Where the setting that an error names ``variable`` was set, for the error's line:
    ``the environment`` (which wins) or ``.env``, with ``as NAME`` when it was set under
    another of its names (``CONVRAG_EMBED_THREADS`` for ``EMBEDDING_THREADS``); ``the
    environment or .env`` when neither holds it."""
    wanted = variable.lower()
    names = [wanted]
    for name, info in settings.model_fields.items():
        if wanted in (choices := _variable_names(name, info)) or wanted == name:
            names = choices
            break
    environ, dotenv = _names_set(env_file)
    for place, found in (("the environment", environ), (".env", dotenv)):
        hit = next((found[n] for n in names if n in found), None)
        if hit is not None:
            return place if hit.lower() == wanted else f"{place}, as {hit}"
    return "the environment or .env"


def _without_password(url: str) -> str:
    """``url`` with its password masked: the host, port and database are what a user
    checks, and the password is the secret (a URL that does not parse is masked whole)."""
    parts = urlsplit(url)
    if not parts.scheme or not parts.netloc:
        return "****" if url else ""
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{user}:****@{host}"))


def settings_problems(exc: ValidationError) -> list[str]:
    """One line per bad setting of ``exc``, named as it is set, with the value and the rule:
    ``CHUNK_SIZE='-5': input should be greater than or equal to 100``."""
    lines = []
    for error in exc.errors(include_url=False):
        name = ".".join(str(part) for part in error["loc"]) or "settings"
        rule = str(error["msg"]).removeprefix("Value error, ")
        shown = isinstance(error.get("input"), str | int | float) and name not in _SECRET_SETTINGS
        value = f"={error['input']!r}" if shown else ""
        if rule[1:2].islower():  # "Input should ..." reads on after the colon; a name stays
            rule = rule[:1].lower() + rule[1:]
        lines.append(f"{name}{value}: {rule}")
    return lines


_SECRET_SETTINGS = frozenset(
    {"DATABASE_URL", "OPENAI_API_KEY", "SERPER_API_KEY", "MILVUS_TOKEN", "RERANKER_API_KEY"}
)
"""Settings whose bad value is not repeated in an error: it may hold a password or key."""


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """Settings of this process, read once from the environment."""
    return Settings()
