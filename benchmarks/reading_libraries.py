"""How well the document readers people use keep a document's text: each corpus file
converted to Markdown by each library, for ``convrag eval documents`` to score beside
convrag's own reader.

    python3 benchmarks/reading_libraries.py setup      # bench-out/readers-venv, once
    python3 benchmarks/reading_libraries.py convert    # bench-out/reading/<library>/
    .venv/bin/convrag eval documents --reader convrag --reader markitdown \\
        --reader unstructured --reader trafilatura --reader pypdfium2 --reader pdfplumber \\
        --out bench-out/reading/scores.json

``setup`` makes a virtual environment of its own, ``bench-out/readers-venv`` (nothing is
installed into the project's), installs the libraries there one step at a time and writes
each step's seconds and MiB to ``bench-out/reading/install.json`` and the versions to
``bench-out/reading/versions.txt``. ``convert`` runs in that environment (it starts
itself there) and writes ``<stem>.md``, ``<stem>.title`` (when the library gives a title),
``<stem>.error`` (when it fails: the file then scores zero) or ``<stem>.skip`` (a format
the library does not read: the file is left out of its scores), and ``_run.json`` with
the seconds per file.

The libraries, model-free only (``HF_HUB_OFFLINE=1``; nothing is downloaded at run time):

- ``markitdown`` (``markitdown[pdf,docx]``): HTML, Markdown, PDF and Word;
- ``unstructured``: ``partition_html``, ``partition_md``, ``partition_pdf(strategy="fast")``
  and ``partition_docx``, elements written as Markdown (titles as ``#`` headings, list
  items as ``-``; page headers, footers and page breaks dropped, as a pipeline would).
  Its PDF module imports ``unstructured_inference`` (installed without its torch and
  transformers dependencies, which only its hi_res strategy uses) and it classifies
  text with spaCy's ``en_core_web_sm``, which it downloads at first use: here it gets a
  blank English spaCy pipeline instead, so its title and narrative-text guesses run
  without part-of-speech tags;
- ``trafilatura``: HTML only, ``output_format="markdown"``;
- ``pypdfium2`` and ``pdfplumber``: PDF text page by page, no headings.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / "bench-out" / "readers-venv"
OUT = ROOT / "bench-out" / "reading"
CORPUS = ROOT / "tests" / "documents" / "corpus"
SUFFIXES = (".html", ".htm", ".md", ".pdf", ".docx")
FILE_TIMEOUT_S = 180

INSTALL_STEPS: list[tuple[str, list[str]]] = [
    ("trafilatura", ["trafilatura"]),
    ("pypdfium2+pdfplumber", ["pypdfium2", "pdfplumber"]),
    ("markitdown", ["markitdown[pdf,docx]"]),
    # unstructured's extras ([pdf]) pull unstructured-inference with torch, torchvision,
    # transformers, timm and the CUDA libraries, for the hi_res and OCR strategies only:
    # the model-free pieces below are what its fast PDF, HTML, Markdown and Word need.
    (
        "unstructured",
        [
            "unstructured",
            "pdfminer.six",
            "pikepdf",
            "pi-heif",
            "pypdf",
            "python-docx",
            "markdown",
            "opencv-python-headless",
            "pdf2image",
            "pandas",
            "scipy",
            "huggingface_hub",
            "onnx",
            "matplotlib",
        ],
    ),
    ("unstructured-inference (no deps)", ["--no-deps", "unstructured-inference"]),
]

DISTRIBUTIONS = (
    "markitdown",
    "unstructured",
    "unstructured-inference",
    "trafilatura",
    "pypdfium2",
    "pdfplumber",
    "pdfminer.six",
    "spacy",
    "mammoth",
    "magika",
)


def _site_mib() -> int:
    """MiB of the readers' environment's site-packages."""
    total = sum(f.stat().st_size for f in VENV.joinpath("lib").rglob("*") if f.is_file())
    return total // 2**20


def setup() -> None:
    """Make bench-out/readers-venv and install each step, timing and sizing it."""
    if not (VENV / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    py = str(VENV / "bin" / "python")
    subprocess.run([py, "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True)
    OUT.mkdir(parents=True, exist_ok=True)
    steps = []
    for name, packages in INSTALL_STEPS:
        before, start = _site_mib(), time.monotonic()
        done = subprocess.run([py, "-m", "pip", "install", "-q", *packages], check=False)
        step = {
            "step": name,
            "packages": packages,
            "rc": done.returncode,
            "seconds": round(time.monotonic() - start, 1),
            "added_mib": _site_mib() - before,
        }
        print(step, flush=True)
        steps.append(step)
    (OUT / "install.json").write_text(json.dumps({"steps": steps, "total_mib": _site_mib()}))
    freeze = subprocess.run([py, "-m", "pip", "freeze"], capture_output=True, text=True)
    (OUT / "versions.txt").write_text(freeze.stdout)


# --- the libraries, each: path -> (markdown, title or None) ---------------------------

Converter = Callable[[Path], tuple[str, str | None]]


class Unsupported(Exception):
    """The library does not read this format."""


def markitdown_convert() -> Converter:
    from markitdown import MarkItDown

    md = MarkItDown(enable_plugins=False)

    def convert(path: Path) -> tuple[str, str | None]:
        result = md.convert(str(path))
        return result.markdown, result.title

    return convert


def _blank_spacy() -> None:
    """Give unstructured a blank English spaCy pipeline, instead of the en_core_web_sm
    model it would download from the network at first use."""
    import spacy
    import unstructured.nlp.tokenize as tokenize

    def blank() -> Any:
        nlp = spacy.blank("en")
        nlp.add_pipe("sentencizer")
        return nlp

    tokenize._get_nlp = blank


def _elements_markdown(elements: list[Any]) -> str:
    """unstructured's elements as Markdown blocks."""
    blocks = []
    for e in elements:
        kind, text = type(e).__name__, (e.text or "").strip()
        if kind in ("Header", "Footer", "PageBreak") or not text:
            continue
        if kind == "Title":
            depth = getattr(e.metadata, "category_depth", None) or 0
            blocks.append("#" * min(depth + 1, 6) + " " + " ".join(text.split()))
        elif kind == "ListItem":
            blocks.append("- " + text)
        elif kind == "CodeSnippet":
            blocks.append("```\n" + text + "\n```")
        else:
            blocks.append(text)
    return "\n\n".join(blocks)


def unstructured_convert() -> Converter:
    _blank_spacy()
    from unstructured.partition.docx import partition_docx
    from unstructured.partition.html import partition_html
    from unstructured.partition.md import partition_md
    from unstructured.partition.pdf import partition_pdf

    def convert(path: Path) -> tuple[str, str | None]:
        suffix = path.suffix.lower()
        if suffix == ".pdf":
            elements = partition_pdf(str(path), strategy="fast", languages=["eng"])
        elif suffix == ".docx":
            elements = partition_docx(str(path))
        elif suffix == ".md":
            elements = partition_md(str(path))
        else:
            elements = partition_html(str(path))
        return _elements_markdown(elements), None

    return convert


def trafilatura_convert() -> Converter:
    import trafilatura

    def convert(path: Path) -> tuple[str, str | None]:
        if path.suffix.lower() not in (".html", ".htm"):
            raise Unsupported(path.suffix)
        html = path.read_text(encoding="utf-8", errors="replace")
        text = trafilatura.extract(
            html, output_format="markdown", include_tables=True, include_formatting=True
        )
        meta = trafilatura.extract_metadata(html)
        return text or "", (meta.title if meta is not None else None)

    return convert


def pypdfium2_convert() -> Converter:
    import pypdfium2

    def convert(path: Path) -> tuple[str, str | None]:
        if path.suffix.lower() != ".pdf":
            raise Unsupported(path.suffix)
        pdf = pypdfium2.PdfDocument(str(path))
        try:
            pages = [pdf[i].get_textpage().get_text_range() for i in range(len(pdf))]
            title = pdf.get_metadata_dict().get("Title") or None
        finally:
            pdf.close()
        return "\n\n".join(p.replace("\r\n", "\n") for p in pages), title

    return convert


def pdfplumber_convert() -> Converter:
    import pdfplumber

    def convert(path: Path) -> tuple[str, str | None]:
        if path.suffix.lower() != ".pdf":
            raise Unsupported(path.suffix)
        with pdfplumber.open(str(path)) as pdf:
            pages = [page.extract_text() or "" for page in pdf.pages]
            title = (pdf.metadata or {}).get("Title") or None
        return "\n\n".join(pages), title

    return convert


LIBRARIES: dict[str, Callable[[], Converter]] = {
    "markitdown": markitdown_convert,
    "unstructured": unstructured_convert,
    "trafilatura": trafilatura_convert,
    "pypdfium2": pypdfium2_convert,
    "pdfplumber": pdfplumber_convert,
}


def _timeout(signum: int, frame: FrameType | None) -> None:
    raise TimeoutError(f"over {FILE_TIMEOUT_S} s")


def _convert_one(convert: Converter, path: Path, folder: Path) -> dict[str, Any]:
    """Convert one file into ``folder``; what happened, and how long it took."""
    for old in folder.glob(path.stem + ".*"):
        old.unlink()
    start = time.monotonic()
    signal.alarm(FILE_TIMEOUT_S)
    try:
        markdown, title = convert(path)
    except Unsupported as exc:
        (folder / f"{path.stem}.skip").write_text(f"format {exc} not read\n")
        return {"file": path.name, "status": "skipped"}
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}".strip()
        (folder / f"{path.stem}.error").write_text(error + "\n" + traceback.format_exc())
        return {"file": path.name, "status": "error", "error": error[:300]}
    finally:
        signal.alarm(0)
    (folder / f"{path.stem}.md").write_text(markdown, encoding="utf-8")
    if title and str(title).strip():
        (folder / f"{path.stem}.title").write_text(str(title).strip() + "\n", encoding="utf-8")
    seconds = round(time.monotonic() - start, 3)
    return {"file": path.name, "status": "ok", "seconds": seconds, "chars": len(markdown)}


def convert(corpus: Path, names: list[str]) -> None:
    """Convert every document of ``corpus`` with each library in ``names``."""
    stems = [p.name.removesuffix(".expect.json") for p in corpus.glob("*.expect.json")]
    files = sorted(p for stem in stems for s in SUFFIXES if (p := corpus / (stem + s)).is_file())
    signal.signal(signal.SIGALRM, _timeout)
    for name in names:
        folder = OUT / name
        folder.mkdir(parents=True, exist_ok=True)
        start = time.monotonic()
        converter = LIBRARIES[name]()
        loaded = round(time.monotonic() - start, 2)
        runs = []
        for path in files:
            runs.append(_convert_one(converter, path, folder))
            print(name, runs[-1], flush=True)
        report = {"library": name, "import_seconds": loaded, "files": runs}
        (folder / "_run.json").write_text(json.dumps(report, indent=2))


def _in_venv() -> bool:
    return Path(sys.prefix).resolve() == VENV.resolve()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("setup", help="Make bench-out/readers-venv and install the libraries.")
    run = sub.add_parser("convert", help="Convert the corpus with each library.")
    run.add_argument("--corpus", type=Path, default=CORPUS)
    run.add_argument("--library", action="append", choices=sorted(LIBRARIES))
    args = parser.parse_args()
    if args.command == "setup":
        setup()
        return
    if not _in_venv():
        python = VENV / "bin" / "python"
        if not python.exists():
            sys.exit(
                "no bench-out/readers-venv: run `python3 benchmarks/reading_libraries.py setup`"
            )
        os.execv(str(python), [str(python), __file__, *sys.argv[1:]])
    for name, value in {
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "DO_NOT_TRACK": "true",
        "SCARF_NO_ANALYTICS": "true",
        "UNSTRUCTURED_DISABLE_NOTICE": "1",
    }.items():
        os.environ.setdefault(name, value)
    convert(args.corpus, args.library or list(LIBRARIES))


if __name__ == "__main__":
    main()
