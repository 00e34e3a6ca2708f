"""The rules' modules agree with each other: the tables that name pronouns and rules in one
module cover those of the others, and the modules import each other without a circle."""

from __future__ import annotations

import ast
from pathlib import Path
from types import ModuleType

from convrag.rewriting import anaphora, pronouns, resolve
from convrag.rewriting.gate import SWITCHES


def test_every_pronoun_found_has_a_kind_to_resolve_it() -> None:
    """A pronoun :func:`anaphors` reports is one :func:`resolve_pronouns` has a kind for,
    and the reverse: a word in only one table would be found and never resolved, or
    never found. "there" is the one found and left as typed: it makes the message a
    follow-up, whose history query brings the place (no rule replaced it better)."""
    assert set(anaphora._POINTS_OUT) == {*pronouns._KIND, "there"}


def test_each_pronoun_kind_is_a_rule_that_switches_off() -> None:
    """Each kind of pronoun has its resolver and is a rule ``--without`` can name."""
    assert set(pronouns._RESOLVERS) == set(pronouns._KIND.values()) == set(resolve.PRONOUN_RULES)
    assert set(resolve.RULES) <= set(SWITCHES)


def test_the_rewriting_modules_import_each_other_without_a_circle() -> None:
    """Each module of :mod:`convrag.rewriting` builds on modules below it, never on one
    that builds on it (at run time or for type checking): the package reads bottom up."""
    package = Path(resolve.__file__).parent
    imports: dict[str, set[str]] = {}
    for path in package.glob("*.py"):
        tree = ast.parse(path.read_text())
        imports[path.stem] = {
            node.module.rsplit(".", 1)[-1]
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
            and node.module
            and node.module.startswith("convrag.rewriting.")
        }
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, " -> ".join((*path, module))
        if module not in done:
            for imported in sorted(imports.get(module, ())):
                visit(imported, (*path, module))
            done.add(module)

    for module in sorted(imports):
        visit(module, ())


def test_the_package_exports_nothing() -> None:
    """Callers import each name from the module that defines it."""
    import convrag.rewriting

    names = vars(convrag.rewriting).items()
    assert [n for n, v in names if not n.startswith("_") and not isinstance(v, ModuleType)] == []
