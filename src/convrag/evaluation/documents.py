"""Document reading quality: how whole and well placed a reader's chunks keep a document's
text, scored against a corpus of real files with hand-written expectations.

Each corpus file ``<stem>.<ext>`` (html, md, pdf, docx) has a ``<stem>.expect.json``
beside it that lists sentences with their section heading, defined terms, lines of page
furniture that no chunk should hold, and the title. A *reader* turns a file into a title
and chunks; convrag's own reader is ``load_path`` and the :class:`Chunker`, and other
libraries' Markdown output (written to a folder by ``benchmarks/reading_libraries.py``) is
cut by the same chunker, so that the scores compare reading and not chunking.

The scores, per document and over the corpus (micro-averaged over sentences, chunks,
terms and documents; also per kind of document and averaged over kinds):

- ``sentence_integrity``: share of expected sentences found whole inside one chunk;
- ``heading_accuracy``: of those found, share inside a chunk whose heading path ends
  with the expected heading (section numbers and case aside); a sentence whose heading
  is the document's title also counts in a chunk with an empty path, as chunk heading
  paths leave the title out;
- ``term_attachment``: share of defined terms found in the same chunk as, and at most
  200 characters before, the start of their definition;
- ``furniture_rate``: share of chunks that hold a line of page furniture (a listed line,
  or a table-of-contents line with dot leaders and a page number); lower is better;
- ``title_accuracy``: share of documents whose title is the expected one.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

DOCUMENT_SUFFIXES = (".html", ".htm", ".md", ".pdf", ".docx")
"""The corpus's document formats; a ``<stem>.expect.json`` names the file of its stem."""

TERM_WINDOW = 200
"""Most characters between a defined term's end and the start of its definition."""

METRICS = (
    "sentence_integrity",
    "heading_accuracy",
    "term_attachment",
    "furniture_rate",
    "title_accuracy",
)


@dataclass(frozen=True, slots=True)
class ChunkView:
    """What a score sees of a chunk: its text and its section heading path (outermost
    first)."""

    text: str
    heading: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ReadDoc:
    """A reader's result for one file: the title it found (if any) and the chunks."""

    title: str | None
    chunks: list[ChunkView]


Reader = Callable[[Path], ReadDoc]
"""Reads one corpus file into a :class:`ReadDoc`; any exception counts the file as lost."""


class ReaderFailed(Exception):
    """A reader's failure reported as it was recorded (a library's saved error)."""


class ReaderSkipped(Exception):
    """A format the reader does not read (a PDF-only library given HTML): the file is left
    out of that reader's scores rather than counted as lost."""


# --- normalisation -----------------------------------------------------------------

_TYPOGRAPHIC = str.maketrans(
    {
        "‘": "'",
        "’": "'",
        "‚": "'",
        "‛": "'",
        "′": "'",
        "“": '"',
        "”": '"',
        "„": '"',
        "‟": '"',
        "″": '"',
        "‐": "-",
        "‑": "-",
        "‒": "-",
        "–": "-",
        "—": "-",
        "―": "-",
        "−": "-",
        "\u00ad": None,
        "\u200b": None,
        "\u200c": None,
        "\u200d": None,
        "\ufeff": None,
    }
)
_IMAGE_OR_LINK = re.compile(r"!?\[([^\]]*)\]\([^)\s]*(?:\s+\"[^\"]*\")?\)")
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>~])")
_REFERENCE = re.compile(r"\]\[[^\]]*\]")
_SPACE_BEFORE_STOP = re.compile(r"\s+(?=[.,;:!?](?:\s|$))")
_EMPHASIS_UNDERSCORE = re.compile(r"(?<!\w)_+|_+(?!\w)")
_WHITESPACE = re.compile(r"\s+")


def normalise(text: str) -> str:
    """``text`` as sentences are compared: NFKC (ligatures, no-break spaces), plain
    quotes and dashes, Markdown links as their text (inline or by reference), no
    emphasis marks, backticks, square brackets or backslash escapes, no space before a
    full stop or comma (a code span's padding), and single spaces.

    Every reader's chunks and the expectations pass through this same function, so that
    a library's Markdown syntax costs it nothing and only the words count.
    """
    text = unicodedata.normalize("NFKC", text).translate(_TYPOGRAPHIC)
    text = _IMAGE_OR_LINK.sub(r"\1", text)
    text = _ESCAPE.sub(r"\1", _REFERENCE.sub("]", text))
    for mark in "`*[]":
        text = text.replace(mark, "")
    text = _EMPHASIS_UNDERSCORE.sub("", text)
    return _SPACE_BEFORE_STOP.sub("", _WHITESPACE.sub(" ", text)).strip()


_SECTION_NUMBER = re.compile(r"^(?:§\s*)?\d+(?:\.\d+)*\.?\s+")


def _heading_forms(heading: str) -> set[str]:
    """The forms a heading matches in: normalised, case-folded, without a trailing
    colon, and also without a leading section number such as ``2.12``."""
    base = normalise(heading).lstrip("#").strip().rstrip(":").strip().casefold()
    return {base, _SECTION_NUMBER.sub("", base)}


def heading_matches(expected: str, path: tuple[str, ...]) -> bool:
    """Whether ``path``'s last heading is ``expected`` (section numbers aside)."""
    return bool(path) and bool(_heading_forms(expected) & _heading_forms(path[-1]))


def title_matches(expected: str | None, got: str | None) -> bool:
    """Whether two titles are the same once normalised (case and spacing aside)."""
    if not expected or not got:
        return False
    return normalise(expected).casefold() == normalise(got).casefold()


# --- furniture ---------------------------------------------------------------------

_DOT_LEADERS = re.compile(r"\.{4,}\s*\d+$|(?:\.\s){3,}\d+$")


def _furniture_reason(raw: str, text: str, absent: Iterable[str]) -> str | None:
    """Why a chunk is page furniture (its raw and normalised text), or None: a listed
    line found in it as whole words, or a table-of-contents line of dot leaders and a
    page number."""
    for line in absent:
        pattern = r"(?<!\w)" + re.escape(normalise(line)) + r"(?!\w)"
        if normalise(line) and re.search(pattern, text):
            return f"absent line: {line}"
    for line in raw.splitlines():
        if _DOT_LEADERS.search(line.strip().rstrip("|").strip()):
            return f"dot leaders: {line.strip()[:80]}"
    return None


# --- expectations ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Expectation:
    """One corpus file and what a good reading of it holds (``<stem>.expect.json``)."""

    path: Path
    kind: str
    title: str | None
    sentences: list[tuple[str, str | None]]
    terms: list[tuple[str, str]]
    absent: list[str]


def load_expectation(expect: Path) -> Expectation | None:
    """The expectation in ``expect`` with the document file of the same stem, or None
    while that file is not there yet (the corpus grows a file at a time)."""
    stem = expect.name.removesuffix(".expect.json")
    docs = [expect.with_name(stem + s) for s in DOCUMENT_SUFFIXES]
    path = next((p for p in docs if p.is_file()), None)
    if path is None:
        return None
    data = json.loads(expect.read_text(encoding="utf-8"))
    return Expectation(
        path=path,
        kind=str(data.get("kind") or path.suffix.lstrip(".")),
        title=data.get("title"),
        sentences=[(s["text"], s.get("heading") or None) for s in data.get("sentences", [])],
        terms=[(t["term"], t["definition_start"]) for t in data.get("terms", [])],
        absent=[str(a) for a in data.get("absent", [])],
    )


def load_corpus(corpus: Path) -> list[Expectation]:
    """Every expectation of ``corpus`` whose document is there, in file-name order."""
    found = (load_expectation(p) for p in sorted(corpus.glob("*.expect.json")))
    return [e for e in found if e is not None]


# --- scoring -----------------------------------------------------------------------


@dataclass(slots=True)
class Tally:
    """Counts behind the scores; tallies of documents add up to a corpus's."""

    sentences: int = 0
    found: int = 0
    heading_checked: int = 0
    heading_ok: int = 0
    terms: int = 0
    terms_ok: int = 0
    chunks: int = 0
    furniture: int = 0
    documents: int = 0
    titles_ok: int = 0
    errors: int = 0

    def add(self, other: Tally) -> None:
        """Add ``other``'s counts to this tally's."""
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def scores(self) -> dict[str, float | None]:
        """The five scores (None where nothing was there to score)."""

        def share(n: int, d: int) -> float | None:
            return round(n / d, 4) if d else None

        return {
            "sentence_integrity": share(self.found, self.sentences),
            "heading_accuracy": share(self.heading_ok, self.heading_checked),
            "term_attachment": share(self.terms_ok, self.terms),
            "furniture_rate": share(self.furniture, self.chunks),
            "title_accuracy": share(self.titles_ok, self.documents),
        }

    def report(self) -> dict[str, Any]:
        """The scores followed by the counts."""
        return {**self.scores(), "counts": {f.name: getattr(self, f.name) for f in fields(self)}}


@dataclass(slots=True)
class DocScore:
    """One document's tally and what failed in it, for an engineer to look at."""

    tally: Tally
    title: str | None = None
    error: str | None = None
    missing: list[dict[str, Any]] = field(default_factory=list)
    wrong_heading: list[dict[str, Any]] = field(default_factory=list)
    unattached_terms: list[str] = field(default_factory=list)
    furniture: list[dict[str, str]] = field(default_factory=list)

    def report(self, expected_title: str | None) -> dict[str, Any]:
        """The document's scores, titles, error and failure lists as JSON."""
        return {
            **self.tally.report(),
            "title": {"expected": expected_title, "got": self.title},
            "error": self.error,
            "missing_sentences": self.missing,
            "wrong_heading": self.wrong_heading,
            "unattached_terms": self.unattached_terms,
            "furniture_chunks": self.furniture,
        }


def _why_missing(sentence: str, texts: list[str]) -> str:
    """A guess at how a sentence was lost: split across chunks, cut short, or gone."""
    cut = max(12, len(sentence) * 2 // 5)
    head = [i for i, t in enumerate(texts) if sentence[:cut] in t]
    tail = [i for i, t in enumerate(texts) if sentence[-cut:] in t]
    if head and tail:
        return "split across chunks" if set(head).isdisjoint(tail) else "changed in the middle"
    if head or tail:
        return "start only" if head else "end only"
    return "not found"


def _score_sentences(exp: Expectation, doc: ReadDoc, texts: list[str], score: DocScore) -> None:
    """Count the sentences found whole and, of those, under the right heading."""
    tally = score.tally
    for sentence, heading in exp.sentences:
        tally.sentences += 1
        needle = normalise(sentence)
        holders = [c for c, t in zip(doc.chunks, texts, strict=True) if needle in t]
        if not holders:
            score.missing.append(
                {"text": sentence, "heading": heading, "why": _why_missing(needle, texts)}
            )
            continue
        tally.found += 1
        if heading is None:
            continue
        tally.heading_checked += 1
        if any(heading_matches(heading, c.heading) for c in holders) or (
            title_matches(heading, exp.title) and any(not c.heading for c in holders)
        ):
            tally.heading_ok += 1
        else:
            got = [list(c.heading) for c in holders]
            score.wrong_heading.append({"text": sentence, "expected": heading, "got": got})


def term_attached(term: str, definition: str, text: str) -> bool:
    """Whether ``text`` holds ``term`` with ``definition`` starting at most
    :data:`TERM_WINDOW` characters after it (all three normalised)."""
    term, definition = normalise(term), normalise(definition)
    if not term or not definition:
        return False
    for m in re.finditer(re.escape(term), text):
        window = text[m.end() : m.end() + TERM_WINDOW + len(definition)]
        at = window.find(definition)
        if 0 <= at <= TERM_WINDOW:
            return True
    return False


def score_document(exp: Expectation, doc: ReadDoc) -> DocScore:
    """Score one reader's reading of one corpus file against its expectation."""
    texts = [normalise(c.text) for c in doc.chunks]
    score = DocScore(Tally(documents=1, chunks=len(doc.chunks)), title=doc.title)
    _score_sentences(exp, doc, texts, score)
    for term, definition in exp.terms:
        score.tally.terms += 1
        if any(term_attached(term, definition, t) for t in texts):
            score.tally.terms_ok += 1
        else:
            score.unattached_terms.append(term)
    for chunk, text in zip(doc.chunks, texts, strict=True):
        reason = _furniture_reason(chunk.text, text, exp.absent)
        if reason is not None:
            score.tally.furniture += 1
            score.furniture.append({"reason": reason, "chunk": chunk.text[:160]})
    score.tally.titles_ok = int(title_matches(exp.title, doc.title))
    return score


def _failed(exp: Expectation, error: str) -> DocScore:
    """A file the reader could not read: every sentence and term lost, no title."""
    score = score_document(exp, ReadDoc(None, []))
    score.error = error
    score.tally.errors = 1
    return score


def read_and_score(exp: Expectation, reader: Reader) -> DocScore | None:
    """Read one file with ``reader`` and score it; a reader's exception loses the file,
    and a format it does not read gives None."""
    try:
        doc = reader(exp.path)
    except ReaderSkipped:
        return None
    except ReaderFailed as exc:
        return _failed(exp, str(exc))
    except Exception as exc:  # any library failure is a score of zero, with its reason
        return _failed(exp, f"{type(exc).__name__}: {exc}"[:500])
    return score_document(exp, doc)


def _reader_report(corpus: list[Expectation], reader: Reader) -> dict[str, Any]:
    """One reader's scores over the corpus: overall, per kind, averaged over kinds, and
    per document."""
    overall, kinds = Tally(), dict[str, Tally]()
    documents: dict[str, Any] = {}
    skipped: list[str] = []
    for exp in corpus:
        score = read_and_score(exp, reader)
        if score is None:
            skipped.append(exp.path.name)
            continue
        overall.add(score.tally)
        kinds.setdefault(exp.kind, Tally()).add(score.tally)
        documents[exp.path.name] = score.report(exp.title)
    by_kind = {k: t.report() for k, t in sorted(kinds.items())}
    return {
        "overall": overall.report(),
        "by_kind": by_kind,
        "macro_over_kinds": _macro([t.scores() for t in kinds.values()]),
        "skipped": skipped,
        "documents": documents,
    }


def _macro(rows: list[dict[str, float | None]]) -> dict[str, float | None]:
    """The mean of each score over ``rows``, skipping rows without it."""
    out: dict[str, float | None] = {}
    for metric in METRICS:
        values = [v for r in rows if (v := r.get(metric)) is not None]
        out[metric] = round(sum(values) / len(values), 4) if values else None
    return out


def evaluate_documents(
    corpus_dir: Path, readers: Mapping[str, Reader], *, settings: Mapping[str, Any]
) -> dict[str, Any]:
    """Score every reader on the corpus in ``corpus_dir``; ``settings`` (chunk size and
    the like) is recorded in the report as given."""
    corpus = load_corpus(corpus_dir)
    return {
        "corpus": str(corpus_dir),
        "files": [e.path.name for e in corpus],
        "settings": dict(settings),
        "readers": {name: _reader_report(corpus, reader) for name, reader in readers.items()},
    }


# --- readers -----------------------------------------------------------------------


def convrag_reader(
    chunk_size: int, chunk_overlap: int, *, max_bytes: int, max_decompressed: int, max_records: int
) -> Reader:
    """convrag's own reading: ``load_path`` then the :class:`Chunker`, headings as the
    chunker gives them."""
    from convrag.documents.chunking import Chunker
    from convrag.documents.load import load_path

    chunker = Chunker(chunk_size, chunk_overlap)

    def read(path: Path) -> ReadDoc:
        docs = load_path(
            path,
            max_bytes=max_bytes,
            max_decompressed_bytes=max_decompressed,
            max_records=max_records,
        )
        chunks = [ChunkView(c.text, tuple(c.heading)) for d in docs for c in chunker.chunks(d)]
        return ReadDoc(docs[0].title if docs else None, chunks)

    return read


_HEADING = re.compile(
    r"^ {0,3}#{1,6}[ \t]+(?P<atx>.+?)(?:[ \t]+#+)?[ \t]*$"
    r"|^ {0,3}(?P<setext>\S[^\n]*)\n {0,3}(?:=+|-+)[ \t]*$",
    re.MULTILINE,
)


def markdown_title(text: str) -> str | None:
    """The first heading of a Markdown text (``#`` or underlined), as plain words."""
    match = _HEADING.search(text)
    return (normalise(match.group("atx") or match.group("setext")) or None) if match else None


def markdown_dir_reader(folder: Path, chunk_size: int, chunk_overlap: int) -> Reader:
    """A library's reading, saved as ``<stem>.md`` (and ``<stem>.title`` when the library
    gave a title) in ``folder``, cut by convrag's :class:`Chunker` as a Markdown
    document (its ``#`` headings the chunks' heading paths, as for convrag's readers).
    A ``<stem>.error`` file, or no ``<stem>.md``, loses the file; a ``<stem>.skip`` file
    (a format the library does not read) leaves it out."""
    from convrag.documents.base import SourceDocument
    from convrag.documents.chunking import Chunker

    chunker = Chunker(chunk_size, chunk_overlap)

    def read(path: Path) -> ReadDoc:
        md, title_file, error, skip = (
            folder / (path.stem + s) for s in (".md", ".title", ".error", ".skip")
        )
        if skip.is_file():
            raise ReaderSkipped(skip.read_text(encoding="utf-8").strip())
        if error.is_file():
            raise ReaderFailed(error.read_text(encoding="utf-8").strip()[:500])
        if not md.is_file():
            raise ReaderFailed(f"{md}: no output")
        text = md.read_text(encoding="utf-8")
        given = title_file.read_text(encoding="utf-8").strip() if title_file.is_file() else ""
        title = given or markdown_title(text)
        meta = {"path": str(path), "format": ".md"}
        doc = SourceDocument(str(path), title, text, meta, headings_marked=True)
        return ReadDoc(title, [ChunkView(c.text, tuple(c.heading)) for c in chunker.chunks(doc)])

    return read


def scores_table(report: Mapping[str, Any]) -> str:
    """A Markdown table: one row per reader, one column per overall score."""
    heads = ["integrity", "headings", "terms", "furniture (lower=better)", "title"]
    lines = [
        "| reader | " + " | ".join(heads) + " | docs | errors |",
        "|---|" + "---|" * (len(heads) + 2),
    ]
    for name, r in report["readers"].items():
        o = r["overall"]
        cells = ["-" if o[m] is None else f"{o[m]:.3f}" for m in METRICS]
        counts = o["counts"]
        lines.append(
            f"| {name} | " + " | ".join(cells) + f" | {counts['documents']} | {counts['errors']} |"
        )
    return "\n".join(lines)
