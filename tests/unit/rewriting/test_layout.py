"""The rewriter's modules agree with each other: the tables that name pronouns and rules
in one module cover those of the others, and the names callers import stay where they were."""

from __future__ import annotations

import importlib

import pytest

from convrag.rewriting import anaphora, pronouns, resolve
from convrag.rewriting.gate import SWITCHES


def test_every_pronoun_found_has_a_kind_to_resolve_it() -> None:
    """A pronoun :func:`anaphors` reports is one :func:`resolve_pronouns` has a kind for,
    and the reverse: a word in only one table would be found and never resolved, or
    never found."""
    assert set(anaphora._POINTS_OUT) == set(pronouns._KIND)


def test_each_pronoun_kind_is_a_rule_that_switches_off() -> None:
    """Each kind of pronoun has its resolver and is a rule ``--without`` can name."""
    assert set(pronouns._RESOLVERS) == set(pronouns._KIND.values()) == set(resolve.PRONOUN_RULES)
    assert set(resolve.RULES) <= set(SWITCHES)


@pytest.mark.parametrize(
    ("module", "names"),
    [
        # what gate.py, classify.py and the callers of the package import
        ("convrag.rewriting.resolve", ["RULES", "PRONOUN_RULES", "check_rules", "contextualize"]),
        ("convrag.rewriting.history", ["Turn", "anaphors", "conversation_context", "full_name"]),
    ],
)
def test_names_stay_importable_where_they_were(module: str, names: list[str]) -> None:
    """The split into smaller modules moved code, not the names other modules import."""
    loaded = importlib.import_module(module)
    assert [n for n in names if not hasattr(loaded, n)] == []
