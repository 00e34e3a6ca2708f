"""The evaluation report: JSON (the documented shape) and a markdown table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_json(data: dict[str, Any], out: Path | None) -> None:
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(data, indent=2) + "\n")


def retrieval_table(data: dict[str, Any], split: str = "all") -> str:
    """One row per strategy; columns are the metrics of ``split``."""
    strategies: dict[str, Any] = data["strategies"]
    metrics = list(next(iter(strategies.values()))[split])
    head = f"| strategy ({split}) | " + " | ".join(metrics) + " |"
    rule = "|---|" + "---|" * len(metrics)
    rows = [
        f"| {name} | " + " | ".join(f"{s[split].get(m, 0):.3f}" for m in metrics) + " |"
        for name, s in strategies.items()
    ]
    return "\n".join([head, rule, *rows])


def rewrite_table(data: dict[str, Any]) -> str:
    """BLEU and token F1 of each system, on every case and on those whose reference
    rewrote the question (``n_reference_rewrote`` of them)."""
    sub = data["reference_rewrote"]
    rows = [
        f"| {name} | {s['bleu']:.1f} | {100 * s['token_f1']:.1f} | "
        f"{sub[name]['bleu']:.1f} | {100 * sub[name]['token_f1']:.1f} |"
        for name, s in data["systems"].items()
    ]
    n = data["n_reference_rewrote"]
    head = f"| system | BLEU | token F1 | BLEU, {n} rewritten references | token F1, the same |"
    return "\n".join([head, "|---|---|---|---|---|", *rows])


def answers_table(data: dict[str, Any]) -> str:
    """One row per system: abstention, off-topic abstention, answer and citation quality."""
    head = (
        "| system | abst. P | abst. R | abst. F1 | false abst. | off-topic abst. | "
        "ROUGE-L recall | token F1 | cites gold | citation precision | R@5 |"
    )
    rows = []
    for name, s in data["systems"].items():
        a, q = s["abstention"], s["answerable"]
        rows.append(
            f"| {name} | {a['precision']:.3f} | {a['recall']:.3f} | {a['f1']:.3f} | "
            f"{a['false_abstention_rate']:.3f} | {s['offtopic_abstention']:.3f} | "
            f"{q['rougeL_recall']:.3f} | {q['token_f1']:.3f} | {q['cites_gold']:.3f} | "
            f"{q['citation_precision']:.3f} | {q['retrieval_R@5']:.3f} |"
        )
    return "\n".join([head, "|---" * 11 + "|", *rows])


_CONVERSATION_COLUMNS = (
    ("useful", "useful"),
    ("useful_lenient", "useful (lenient)"),
    ("source_holds", "source holds"),
    ("quoted_when_held", "quoted when held"),
    ("wrong_not_found", "wrong not found"),
    ("off_topic_refused", "off-topic refused"),
    ("unanswerable_refused", "unanswerable refused"),
    ("underspecified_asked_back", "asked back"),
)


def conversations_table(data: dict[str, Any]) -> str:
    """One row per group of turns (all, first turns, follow-ups, each kind): each rate
    with the turns it is counted over, "-" where none."""

    def cell(rate: dict[str, Any]) -> str:
        return "-" if rate["rate"] is None else f"{rate['rate']:.3f} ({rate['n']})"

    groups = {
        "all": data["all"],
        "first turns": data["first_turns"],
        "follow-ups": data["follow_ups"],
        **{f"kind: {k}": v for k, v in data["by_kind"].items()},
    }
    head = "| turns | n | " + " | ".join(title for _, title in _CONVERSATION_COLUMNS) + " |"
    rule = "|---|---|" + "---|" * len(_CONVERSATION_COLUMNS)
    rows = [
        f"| {name} | {g['turns']} | "
        + " | ".join(cell(g[key]) for key, _ in _CONVERSATION_COLUMNS)
        + " |"
        for name, g in groups.items()
    ]
    return "\n".join([head, rule, *rows])
