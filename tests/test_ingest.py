"""Ingestion against the real embedded Postgres and Milvus Lite."""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from convrag.ingest import (
    Chunker,
    IngestError,
    SourceDocument,
    delete_document,
    expand_paths,
    ingest_documents,
    load_path,
)
from convrag.search import HybridSearcher
from convrag.services import Services

EMPLOYEE = (
    "Prasad Chaudhari\nPosition: Software Engineer\nTotal Salary: $120,000\n"
    "Basic Salary: $80,000\nAllowances: $40,000\n"
)
LEAVE = "Leave policy: every employee gets 25 days of annual leave and unlimited sick leave."
GARDEN = "Tomatoes need six hours of direct sunlight and deep watering twice a week."


def pdf_bytes(pages: Sequence[Sequence[str]]) -> bytes:
    """A minimal PDF with one text line per string (Helvetica, 11 pt, 14 pt leading).

    Written by hand, so tests need no PDF-making library: a catalog, a page tree, a
    font, then a page and its content stream per page, and the cross-reference table.
    """
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(len(pages)))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for i, lines in enumerate(pages):
        ops = ["BT", "/F1 11 Tf", "14 TL", "72 720 Td"]
        for line in lines:
            escaped = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
            ops.append(f"({escaped}) Tj T*")
        ops.append("ET")
        stream = "\n".join(ops).encode("latin-1")
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {5 + 2 * i} 0 R >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def docx_bytes() -> bytes:
    """A Word document made with python-docx: a heading, a paragraph with a bold run, a
    bulleted list, a table with a header row, and a second heading and paragraph."""
    import docx

    document = docx.Document()
    document.core_properties.title = "Onboarding guide"
    document.add_heading("Onboarding", level=1)
    intro = document.add_paragraph("Welcome to Acme. Your manager meets you on ")
    intro.add_run("day one").bold = True
    intro.add_run(" at the front desk.")
    document.add_paragraph("Bring your ID card.", style="List Bullet")
    document.add_paragraph("Sign the contract.", style="List Bullet")
    table = document.add_table(rows=3, cols=2)
    for r, (item, owner) in enumerate([("Item", "Owner"), ("Laptop", "IT desk"), ("Mail", "HR")]):
        table.cell(r, 0).text = item
        table.cell(r, 1).text = owner
    document.add_heading("After the first week", level=2)
    document.add_paragraph("Every new employee gets a mentor for three months.")
    buf = io.BytesIO()
    document.save(buf)
    return buf.getvalue()


async def _ingest(services: Services, workspace: str, *paths: Path) -> dict[str, int]:
    docs = [d for p in paths for d in load_path(p, max_bytes=services.settings.max_file_bytes)]
    report = await ingest_documents(services, workspace, docs)
    return report.as_json()


def _write(d: Path, name: str, text: str) -> Path:
    p = d / name
    p.write_text(text)
    return p


@pytest.fixture
async def corpus(services: Services, workspace: str, docs_dir: Path) -> list[Path]:
    paths = [
        _write(docs_dir, "employee.txt", EMPLOYEE),
        _write(docs_dir, "leave.md", LEAVE),
        _write(docs_dir, "garden.html", f"<html><title>Garden</title><p>{GARDEN}</p></html>"),
    ]
    await _ingest(services, workspace, *paths)
    return paths


ENGINES = ["in-process", "milvus"]


def _searcher(services: Services, engines: str) -> HybridSearcher:
    """The service's searcher, or one on Milvus's own dense index and BM25 function (what
    a Milvus server uses) over the same stores."""
    if engines == "in-process":
        return services.searcher
    return HybridSearcher(
        services.db,
        services.index,
        services.embedder,
        keyword_engine="milvus",
        dense_engine="milvus",
    )


@pytest.mark.parametrize("engines", ENGINES)
@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid"])
async def test_search_finds_the_right_chunk_in_every_mode(
    services: Services, workspace: str, corpus: list[Path], mode: str, engines: str
) -> None:
    results = await _searcher(services, engines).search(
        workspace,
        "how many days of annual leave",
        top_k=3,
        mode=mode,  # type: ignore[arg-type]
    )
    assert results and "25 days" in results[0].text


async def test_hybrid_results_carry_both_list_scores(
    services: Services, workspace: str, corpus: list[Path]
) -> None:
    top = (await services.searcher.search(workspace, "Prasad basic salary", top_k=1))[0]
    assert "Basic Salary" in top.text
    assert top.dense_score is not None and top.bm25_score is not None
    assert top.score == pytest.approx(1.0)  # first in both lists


@pytest.mark.parametrize("engines", ENGINES)
@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid"])
async def test_a_workspace_never_sees_another_workspaces_chunks(
    services: Services, workspace: str, corpus: list[Path], mode: str, engines: str
) -> None:
    other = workspace + "-other"
    await services.db.ensure_workspace(other)
    results = await _searcher(services, engines).search(other, "annual leave", top_k=5, mode=mode)  # type: ignore[arg-type]
    assert results == []


async def test_reingesting_an_unchanged_file_changes_nothing(
    services: Services, workspace: str, corpus: list[Path]
) -> None:
    before = await services.db.chunk_texts(workspace)
    version = await services.db.index_version(workspace)
    report = await _ingest(services, workspace, *corpus)
    assert report == {"added": 0, "updated": 0, "unchanged": 3, "chunks_written": 0}
    assert await services.db.chunk_texts(workspace) == before
    assert await services.db.index_version(workspace) == version


async def test_a_changed_file_replaces_its_chunks_in_both_stores(
    services: Services, workspace: str, corpus: list[Path]
) -> None:
    corpus[1].write_text("Leave policy: every employee now gets 30 days of paid vacation.")
    report = await _ingest(services, workspace, corpus[1])
    assert report["updated"] == 1
    texts = [t for _, _, t in await services.db.chunk_texts(workspace)]
    assert not any("25 days" in t for t in texts) and any("30 days" in t for t in texts)
    for engines in ENGINES:
        dense = await _searcher(services, engines).search(
            workspace, "annual leave days", top_k=5, mode="dense"
        )
        assert not any("25 days" in r.text for r in dense)
    assert services.index.count(workspace) == 3


async def test_deleting_a_document_leaves_no_chunk_anywhere(
    services: Services, workspace: str, corpus: list[Path]
) -> None:
    doc = await services.db.get_document_by_source(workspace, str(corpus[0].resolve()))
    assert doc is not None
    assert await delete_document(services, workspace, str(doc["id"]))
    services.index.flush()
    assert services.index.chunk_ids_of_document(workspace, str(doc["id"])) == []
    assert all(d != str(doc["id"]) for _, d, _ in await services.db.chunk_texts(workspace))
    for mode in ("dense", "bm25", "hybrid"):
        hits = await services.searcher.search(workspace, "Prasad salary", top_k=5, mode=mode)  # type: ignore[arg-type]
        assert all(h.document_id != str(doc["id"]) for h in hits)


async def test_deleting_from_another_workspace_finds_nothing(
    services: Services, workspace: str, corpus: list[Path]
) -> None:
    doc = await services.db.get_document_by_source(workspace, str(corpus[0].resolve()))
    assert doc is not None
    assert not await delete_document(services, workspace + "-other", str(doc["id"]))
    assert services.index.chunk_ids_of_document(workspace, str(doc["id"]))


def test_jsonl_corpus_records_become_documents(docs_dir: Path) -> None:
    p = _write(
        docs_dir,
        "c.jsonl",
        '{"_id": "p1", "title": "T", "text": "alpha"}\n'
        '{"_id": "p2", "title": "U", "text": "beta"}\n',
    )
    docs = load_path(p, max_bytes=10**6)
    assert [(d.source, d.title, d.text) for d in docs] == [
        ("p1", "T", "alpha"),
        ("p2", "U", "beta"),
    ]


def test_long_documents_are_chunked_with_positions(services: Services, docs_dir: Path) -> None:
    from convrag.ingest import Chunker

    text = " ".join(f"Sentence number {i} talks about topic {i % 7}." for i in range(400))
    p = _write(docs_dir, "long.txt", text)
    chunks = Chunker(800, 100).split(load_path(p, max_bytes=10**6)[0])
    assert len(chunks) > 5 and all(len(c) <= 800 for c in chunks)


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("missing.txt", None, "no such file"),
        ("slides.pptx", b"PK\x03\x04", "unsupported format '.pptx'"),
        ("empty.txt", b"", "the file is empty"),
        ("blank.md", b"  \n\t\n", "no text to index"),
        ("latin1.txt", "caf\u00e9 cr\u00e8me".encode("latin-1"), "not valid UTF-8"),
        ("bad.jsonl", b'{"title": "no id"}\n', "each line needs {_id, title, text}"),
        ("broken.pdf", b"%PDF-1.4 not really", "not a readable PDF"),
        ("scan.pdf", pdf_bytes([[]]), "no text to index (empty or whitespace only); a scanned"),
        ("broken.docx", b"PK\x03\x04 not really", "not a valid .docx file: "),
        ("old.docx", b"\xd0\xcf\x11\xe0 a Word 97 file", "save it as a Word document (.docx)"),
    ],
)
async def test_bad_input_fails_clearly_and_leaves_stores_untouched(
    services: Services,
    workspace: str,
    docs_dir: Path,
    name: str,
    content: bytes | None,
    message: str,
) -> None:
    path = docs_dir / name
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(IngestError, match=re.escape(message)) as info:
        load_path(path, max_bytes=services.settings.max_file_bytes)
    assert name in str(info.value)
    assert await services.db.chunk_texts(workspace) == []


def test_a_50mb_file_is_refused_with_the_limit_named(docs_dir: Path) -> None:
    path = docs_dir / "huge.txt"
    with open(path, "wb") as fh:
        fh.truncate(50 * 1024 * 1024)
    with pytest.raises(IngestError, match=r"50\.0 MiB is over the 20\.0 MiB limit"):
        load_path(path, max_bytes=20 * 1024 * 1024)


async def test_invalid_workspace_ids_are_refused(services: Services) -> None:
    with pytest.raises(ValueError, match="invalid workspace id"):
        await services.searcher.search('x" or workspace_id != "', "q")


async def test_dense_search_reloads_vectors_from_milvus_when_postgres_has_none(
    services: Services, workspace: str, corpus: list[Path]
) -> None:
    """Chunks written without a stored vector (e.g. by a process on DENSE_ENGINE=milvus)."""
    async with services.db.pool.connection() as conn:
        await conn.execute(
            "UPDATE chunks SET embedding = NULL WHERE workspace_id = %s", (workspace,)
        )
        await conn.execute(
            "UPDATE workspaces SET index_version = index_version + 1 WHERE id = %s", (workspace,)
        )
    results = await services.searcher.search(workspace, "annual leave days", top_k=2, mode="dense")
    assert results and "25 days" in results[0].text


FAQ_HTML = """<!doctype html>
<html><head><title>IT FAQ</title><style>p { color: red }</style>
<script>window.analytics = "tracking";</script></head>
<body>
<header><div class="brand">Acme Intranet Home</div></header>
<nav><ul><li><a href="/">Start page</a></li><li><a href="/hr">Holiday portal</a></li></ul></nav>
<main>
<h1>IT questions</h1>
<p>Which VPN do we use? <a href="https://vpn.example.com">WireGuard</a> through the
<b>corp-vpn</b> gateway.</p>
<p>How do I reset my <em>password</em>? Open the self-service page and follow the three
steps it shows, then sign in again on every device you use.</p>
<table>
<tr><th>System</th><th>Owner</th></tr>
<tr><td>VPN</td><td>Network team</td></tr>
<tr><td>Mail</td><td>Messaging team</td></tr>
<tr><td>PDF</td><td>Print shop</td></tr>
</table>
</main>
<footer>Copyright Acme Corporation. Privacy statement and cookie settings.</footer>
</body></html>
"""


def test_html_gives_its_main_content_with_inline_elements_in_the_sentence(
    docs_dir: Path,
) -> None:
    doc = load_path(_write(docs_dir, "faq.html", FAQ_HTML), max_bytes=10**6)[0]
    assert doc.title == "IT FAQ"
    lines = doc.text.splitlines()
    assert "Which VPN do we use? WireGuard through the corp-vpn gateway." in lines
    assert "How do I reset my password? Open the self-service page" in doc.text
    for chrome in ("Acme Intranet", "Start page", "Holiday portal", "Copyright", "analytics"):
        assert chrome not in doc.text, chrome
    assert "color" not in doc.text


def test_html_tables_become_markdown_rows_and_keep_every_cell(docs_dir: Path) -> None:
    """Cells reading "Mail" or "PDF" look like share buttons to trafilatura's filter."""
    doc = load_path(_write(docs_dir, "faq.html", FAQ_HTML), max_bytes=10**6)[0]
    lines = doc.text.splitlines()
    start = lines.index("| System | Owner |")
    assert lines[start : start + 5] == [
        "| System | Owner |",
        "| --- | --- |",
        "| VPN | Network team |",
        "| Mail | Messaging team |",
        "| PDF | Print shop |",
    ]


def test_a_small_html_fragment_still_gives_its_text(docs_dir: Path) -> None:
    """trafilatura finds no main content in a fragment; its whole text is used."""
    fragment = _write(docs_dir, "note.html", "<p>Parking is <b>free</b> after 6 pm.</p>")
    doc = load_path(fragment, max_bytes=10**6)[0]
    assert (doc.title, doc.text) == ("note", "Parking is free after 6 pm.")
    titled = _write(docs_dir, "t.html", "<h1>Parking</h1><p>Use the <i>north</i> gate.</p>")
    doc = load_path(titled, max_bytes=10**6)[0]
    assert doc.title == "Parking" and doc.text.endswith("Use the north gate.")


def test_a_pdf_is_read_page_by_page_without_gluing_headings_to_sentences(
    docs_dir: Path,
) -> None:
    path = docs_dir / "policy.pdf"
    path.write_bytes(
        pdf_bytes(
            [
                [
                    "Remote Work Policy",
                    "Staff may work remotely three days a week with the approval of",
                    "their manager. Requests go through the HR portal.",
                    "Equipment",
                    "The company provides a laptop and a monitor.",
                ],
                ["Travel", "Book hotels through the travel desk."],
            ]
        )
    )
    doc = load_path(path, max_bytes=10**6)[0]
    assert doc.pages == (
        "Remote Work Policy\n\nStaff may work remotely three days a week with the approval "
        "of their manager. Requests go through the HR portal.\n\nEquipment\n\n"
        "The company provides a laptop and a monitor.",
        "Travel\n\nBook hotels through the travel desk.",
    )
    assert doc.text == "\n\n".join(doc.pages) and doc.metadata["pages"] == 2


async def test_pdf_chunks_never_span_pages_and_store_their_page(
    services: Services, workspace: str, docs_dir: Path
) -> None:
    long_page = [f"Rule {i} of the travel policy applies to every trip abroad." for i in range(40)]
    path = docs_dir / "travel.pdf"
    path.write_bytes(pdf_bytes([["Short first page."], long_page, ["Hotels cost at most 200."]]))
    doc = load_path(path, max_bytes=10**6)[0]
    chunks = Chunker(800, 100).chunks(doc)
    assert chunks[0].page == 1 and chunks[-1].page == 3
    assert {c.page for c in chunks} == {1, 2, 3} and len(chunks) > 3
    for c in chunks:
        assert c.text in doc.pages[c.page - 1]  # type: ignore[operator]
    await ingest_documents(services, workspace, [doc])
    ids = [cid for cid, _, _ in await services.db.chunk_texts(workspace)]
    rows = {r.text: r.page for r in await services.db.get_chunks(workspace, ids)}
    assert rows["Short first page."] == 1 and rows["Hotels cost at most 200."] == 3
    assert sorted(rows.values()).count(2) == len(chunks) - 2


async def test_chunks_of_other_formats_have_no_page(
    services: Services, workspace: str, corpus: list[Path]
) -> None:
    ids = [cid for cid, _, _ in await services.db.chunk_texts(workspace)]
    assert [r.page for r in await services.db.get_chunks(workspace, ids)] == [None] * 3


def test_a_docx_gives_paragraphs_headings_lists_and_tables_in_order(docs_dir: Path) -> None:
    path = docs_dir / "onboarding.docx"
    path.write_bytes(docx_bytes())
    doc = load_path(path, max_bytes=10**6)[0]
    assert doc.title == "Onboarding guide" and doc.metadata["format"] == ".docx"
    assert doc.text == (
        "Onboarding\n\n"
        "Welcome to Acme. Your manager meets you on day one at the front desk.\n\n"
        "- Bring your ID card.\n- Sign the contract.\n\n"
        "| Item | Owner |\n| Laptop | IT desk |\n| Mail | HR |\n\n"
        "After the first week\n\n"
        "Every new employee gets a mentor for three months."
    )


def test_a_directory_ingest_takes_docx_and_skips_what_it_cannot_read(docs_dir: Path) -> None:
    (docs_dir / "guide.docx").write_bytes(docx_bytes())
    (docs_dir / "~$guide.docx").write_bytes(b"lock file of an open document")
    (docs_dir / "deck.pptx").write_bytes(b"PK\x03\x04")
    (docs_dir / ".DS_Store").write_bytes(b"\x00")
    skipped: list[Path] = []
    assert expand_paths([docs_dir], skipped) == [docs_dir / "guide.docx"]
    assert skipped == [docs_dir / "deck.pptx"]


PARAGRAPHS = [
    "Leave policy. Every employee gets 25 days of annual leave per calendar year. Unused "
    "days expire on 31 March of the following year unless your manager agrees otherwise. "
    "Requests go through the HR portal at least two weeks ahead!",
    "Sick leave. There is no fixed limit on sick leave. From the fourth day a doctor's "
    "note is needed (e.g. a scan of the certificate). Dr. Jones in HR answers questions "
    "about long absences. Is a note needed for a child's illness? Yes, from day two.",
    "Parental leave",
    "Parents get 16 weeks of paid leave. It can start up to four weeks before the due "
    "date. The remaining weeks may be split into two blocks. Part-time return is possible "
    "for up to a year, with pay in proportion to the hours worked.",
    "Travel. Book trains and hotels through the travel desk. Flights need approval from a "
    "director when they cost more than 800 euros. Meals are refunded up to 60 euros a day "
    "in Europe and 75 dollars a day in North America.",
]


def _sentence_start(text: str, pos: int) -> bool:
    """Whether ``text[pos:]`` starts a sentence: at the start, after a paragraph or line
    break, or after sentence-final punctuation and a space."""
    before = text[:pos]
    return not before.strip() or before.endswith("\n") or bool(re.search(r"[.!?] $", before))


@pytest.mark.parametrize(("size", "overlap"), [(200, 0), (260, 120), (400, 150)])
def test_chunks_end_on_sentence_boundaries_and_overlap_starts_at_one(
    size: int, overlap: int
) -> None:
    text = "\n\n".join(PARAGRAPHS)
    chunks = Chunker(size, overlap).split(SourceDocument("s", "t", text))
    assert len(chunks) > 2 and all(len(c) <= size for c in chunks)
    for c in chunks[:-1]:
        assert re.search(r"[.!?)]$", c), c  # never mid-sentence, never on a heading
    starts = []
    for c in chunks:
        pos = text.index(c)
        assert _sentence_start(text, pos), c
        starts.append(pos)
    assert starts == sorted(starts)
    ends = [s + len(c) for s, c in zip(starts, chunks, strict=True)]
    overlaps = [ends[k] - starts[k + 1] for k in range(len(chunks) - 1)]
    assert all(o <= overlap for o in overlaps)
    assert any(o > 0 for o in overlaps) == (overlap > 0)
    assert ends[-1] == len(text)  # nothing lost at the end


def test_a_sentence_longer_than_a_chunk_is_cut_between_words() -> None:
    long = "This sentence lists " + ", ".join(f"item {i}" for i in range(60)) + "."
    text = f"Short opener. {long} Short closer."
    chunks = Chunker(120, 40).split(SourceDocument("s", "t", text))
    assert chunks[0] == "Short opener." and chunks[-1] == "Short closer."
    assert all(len(c) <= 120 for c in chunks)
    assert " ".join(chunks[1:-1]) == long


@pytest.mark.parametrize(
    "text",
    [
        "Leave policy: 25 days.\nSick leave: unlimited",
        "  Title\n\n\nOne paragraph, then   odd   spacing.\n\n\n",
        "x" * 800,
    ],
)
def test_a_text_that_fits_in_one_chunk_is_that_chunk_unchanged(text: str) -> None:
    """Chunk ids hash the chunk text; cached evaluation pools rely on them not moving."""
    assert Chunker(800, 100).split(SourceDocument("s", "t", text)) == [text.strip()]
