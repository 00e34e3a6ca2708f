"""The house rules the code keeps: the layers import downwards only, modules and
functions stay small, and no comment cites when or why-by-ticket a line was written."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).parents[2] / "src" / "convrag"

#: Each package and what it may not import: the lower layers never import higher ones.
LAYERS = {
    "convrag.text": ["documents", "stores", "retrieval", "rewriting", "answering", "nodes"],
    "convrag.documents": ["stores", "retrieval", "rewriting", "answering", "nodes"],
    "convrag.stores": ["retrieval", "rewriting", "answering", "nodes"],
    "convrag.rewriting": ["retrieval", "stores", "answering", "nodes"],
    "convrag.retrieval": ["nodes", "context", "graph", "answering.llm"],
    "convrag.answering": ["nodes", "graph"],
    "convrag.nodes": ["api", "cli"],
}
HIGHEST = ["api", "cli", "context", "graph", "services"]


def _modules() -> list[tuple[str, Path]]:
    return [
        (".".join(p.relative_to(SRC.parent).with_suffix("").parts), p)
        for p in sorted(SRC.rglob("*.py"))
    ]


def _imports(path: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
        elif isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
    return names


@pytest.mark.parametrize(("package", "banned"), LAYERS.items())
def test_a_lower_layer_never_imports_a_higher_one(package: str, banned: list[str]) -> None:
    higher = [f"convrag.{b}" for b in banned] + (
        [f"convrag.{h}" for h in HIGHEST] if package != "convrag.nodes" else []
    )
    wrong = [
        f"{module} -> {name}"
        for module, path in _modules()
        if module == package or module.startswith(f"{package}.")
        for name in _imports(path)
        if any(name == h or name.startswith(f"{h}.") for h in higher)
    ]
    assert wrong == []


def test_modules_and_functions_stay_small() -> None:
    big = []
    for module, path in _modules():
        text = path.read_text()
        if len(text.splitlines()) > 700:
            big.append(f"{module}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > 80:
                    big.append(f"{module}.{node.name}: {length} lines")
    assert big == []


def test_no_line_of_the_package_cites_a_session_or_an_issue() -> None:
    citing = re.compile(r"\b(session|issue)s? \d+|\(issue|BENCHMARKS\.md, (session|issue)", re.I)
    cited = [
        f"{module}:{n}"
        for module, path in _modules()
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if citing.search(line)
    ]
    assert cited == []
