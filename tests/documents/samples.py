"""Files the document tests read: a hand-written PDF, a python-docx Word document, and
a text file written to a directory."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path


def pdf_bytes(
    pages: Sequence[Sequence[str | tuple[str, int] | list[str]]], *, title: str | None = None
) -> bytes:
    """A minimal PDF with one text line per string (Helvetica, 11 pt, 14 pt leading; a
    ``(text, size)`` pair is set in that size, its leading to match), and ``title`` as
    its document property when given. A line given as a list of strings is runs of body
    text and inline code by turns (the second, fourth... in Courier), each code run
    followed by the gap that a padded code box leaves (as a browser prints it).

    Written by hand, so tests need no PDF-making library: a catalog, a page tree, the
    fonts, then a page and its content stream per page, and the cross-reference table.
    """
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(len(pages)))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    code_font = 4 + 2 * len(pages)
    for i, lines in enumerate(pages):
        ops = ["BT", "/F1 11 Tf", "14 TL", "72 720 Td"]
        for line in lines:
            if isinstance(line, list):
                ops.append(f"{_runs(line)} T*")
                continue
            text, size = (line, 11) if isinstance(line, str) else line
            ops.append(f"/F1 {size} Tf {round(size * 1.3)} TL ({_escaped(text)}) Tj T*")
        ops.append("ET")
        stream = "\n".join(ops).encode("latin-1")
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font "
            f"<< /F1 3 0 R /F2 {code_font} 0 R >> >> /Contents {5 + 2 * i} 0 R >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Courier >>")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    info = b"" if title is None else b" /Info << /Title (%s) >>" % title.encode("latin-1")
    out += b"trailer\n<< /Size %d /Root 1 0 R%s >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        info,
        xref,
    )
    return bytes(out)


def _escaped(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _runs(runs: Sequence[str]) -> str:
    """Text operators for runs of body text and code by turns, a gap after each code run."""
    ops = []
    for k, run in enumerate(runs):
        if k % 2:
            ops.append(f"/F2 11 Tf [({_escaped(run)}) -700] TJ")
        elif run:
            ops.append(f"/F1 11 Tf ({_escaped(run)}) Tj")
    return " ".join(ops)


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


def write(d: Path, name: str, text: str) -> Path:
    p = d / name
    p.write_text(text)
    return p
