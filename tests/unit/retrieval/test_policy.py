"""The retrieval policy: one file of fitted numbers, read whole and checked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convrag.context import Context
from convrag.retrieval.policy import (
    DEFAULT_POLICY_FILE,
    PolicyError,
    default_policy,
    load_policy,
    write_policy,
)


def test_the_packaged_policy_names_every_field() -> None:
    assert load_policy() == default_policy()
    assert set(json.loads(DEFAULT_POLICY_FILE.read_text())) == set(default_policy().as_dict())


def test_a_policy_written_by_a_fit_reads_back_the_same(tmp_path: Path) -> None:
    fitted = default_policy().with_values({"relevance_floor": 0.33, "anchor_weight": 0})
    write_policy(fitted, tmp_path / "p.json")
    assert load_policy(tmp_path / "p.json") == fitted


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"relevance_floor": 2}, "relevance_floor must be within [0, 1]"),
        ({"rrf_k": 0}, "rrf_k must be within"),
        ({"keyword_weight": "much"}, "keyword_weight: expected float"),
        ({"keyword_second_look": 3}, "keyword_second_look: expected bool"),
        ({"floor": 0.3}, "unknown retrieval policy field 'floor'"),
    ],
)
def test_a_bad_value_or_name_is_refused_naming_it(change: dict, message: str) -> None:
    with pytest.raises(PolicyError, match=message.replace("[", r"\[")):
        default_policy().with_values(change)


def test_a_file_missing_a_field_is_refused_naming_it(tmp_path: Path) -> None:
    values = default_policy().as_dict()
    del values["rrf_k"]
    (tmp_path / "p.json").write_text(json.dumps(values))
    with pytest.raises(PolicyError, match="missing field rrf_k"):
        load_policy(tmp_path / "p.json")
    with pytest.raises(PolicyError, match="cannot read"):
        load_policy(tmp_path / "absent.json")


def test_a_run_changes_the_policy_by_name_and_is_checked_when_built() -> None:
    assert Context.parse_overrides(["anchor_weight=0", "top_k=3"]) == {
        "policy": {"anchor_weight": 0.0},
        "top_k": 3,
    }
    ctx = Context(policy={"relevance_floor": "0.3"})
    assert ctx.policy == {"relevance_floor": 0.3}
    with pytest.raises(ValueError, match=r"invalid context: policy: .*relevance_floor must be"):
        Context(policy={"relevance_floor": 3})
    with pytest.raises(ValueError, match="unknown retrieval policy field 'floor'"):
        Context.from_mapping({"policy": {"floor": 1}})


def test_the_configuration_doc_describes_every_policy_field() -> None:
    doc = (Path(__file__).parents[3] / "docs" / "configuration.md").read_text()
    for name in default_policy().as_dict():
        assert f"| `{name}` |" in doc, name
