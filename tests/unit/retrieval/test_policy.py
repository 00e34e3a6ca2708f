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
    fitted = default_policy().with_values({"answer_threshold": 0.33, "anchor_weight": 0})
    write_policy(fitted, tmp_path / "p.json")
    assert load_policy(tmp_path / "p.json") == fitted


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"answer_threshold": 2}, "answer_threshold must be within [0, 1]"),
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
    ctx = Context(policy={"answer_threshold": "0.3"})
    assert ctx.policy == {"answer_threshold": 0.3}
    with pytest.raises(ValueError, match=r"invalid context: policy: .*answer_threshold must be"):
        Context(policy={"answer_threshold": 3})
    with pytest.raises(ValueError, match="unknown retrieval policy field 'floor'"):
        Context.from_mapping({"policy": {"floor": 1}})


def test_the_configuration_doc_describes_every_policy_field() -> None:
    doc = (Path(__file__).parents[3] / "docs" / "configuration.md").read_text()
    for name in default_policy().as_dict():
        assert f"| `{name}` |" in doc, name


def test_a_fitted_model_is_read_from_an_object_or_its_json_text_and_checked() -> None:
    model = {"bias": -1, "confidence": 4.5}
    assert default_policy().with_values({"answer_model": model}).answer_model == {
        "bias": -1.0,
        "confidence": 4.5,
    }
    as_text = default_policy().with_values({"answer_model": '{"bias": 2}'})
    assert as_text.answer_model == {"bias": 2.0}
    with pytest.raises(PolicyError, match="answer_model: expected"):
        default_policy().with_values({"answer_model": {"bias": "high"}})
