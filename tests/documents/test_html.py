"""HTML pages: main content, inline elements in their sentence, tables as Markdown rows."""

from __future__ import annotations

from pathlib import Path

from convrag.documents import load_path
from tests.documents.samples import write

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
    doc = load_path(write(docs_dir, "faq.html", FAQ_HTML), max_bytes=10**6)[0]
    assert doc.title == "IT FAQ"
    lines = doc.text.splitlines()
    assert "Which VPN do we use? WireGuard through the corp-vpn gateway." in lines
    assert "How do I reset my password? Open the self-service page" in doc.text
    for chrome in ("Acme Intranet", "Start page", "Holiday portal", "Copyright", "analytics"):
        assert chrome not in doc.text, chrome
    assert "color" not in doc.text


def test_html_tables_become_markdown_rows_and_keep_every_cell(docs_dir: Path) -> None:
    """Cells reading "Mail" or "PDF" look like share buttons to trafilatura's filter."""
    doc = load_path(write(docs_dir, "faq.html", FAQ_HTML), max_bytes=10**6)[0]
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
    fragment = write(docs_dir, "note.html", "<p>Parking is <b>free</b> after 6 pm.</p>")
    doc = load_path(fragment, max_bytes=10**6)[0]
    assert (doc.title, doc.text) == ("note", "Parking is free after 6 pm.")
    titled = write(docs_dir, "t.html", "<h1>Parking</h1><p>Use the <i>north</i> gate.</p>")
    doc = load_path(titled, max_bytes=10**6)[0]
    assert doc.title == "Parking" and doc.text.endswith("Use the north gate.")


def test_a_page_without_a_main_element_keeps_its_headings_and_drops_its_sidebar(
    docs_dir: Path,
) -> None:
    page = write(
        docs_dir,
        "travel.html",
        '<html><body><div class="cookie-banner">We use cookies. Accept all cookies</div>'
        '<div id="content"><h1>Travel rules</h1><p>Book every train ticket through the travel'
        " desk at least two weeks ahead of the trip.</p><h2>Hotels</h2><p>The nightly hotel"
        " cap is 200 dollars in every city, taxes included, for all staff.</p></div>"
        '<div class="sidebar"><h3>Related articles</h3><ul><li><a href="/a">Expense claims'
        "</a></li></ul></div></body></html>",
    )
    lines = load_path(page, max_bytes=10**6)[0].text.split("\n\n")
    assert lines[0] == "# Travel rules" and lines[2] == "## Hotels"
    assert "Related articles" not in lines and "cookies" not in " ".join(lines)
