"""Prometheus metrics of the service (served at ``/metrics``).

Under ``serve --workers N`` every worker writes its values to files in the directory
:data:`MULTIPROCESS_ENV` names (prometheus_client's multiprocess mode, chosen when the
library is imported), and ``/metrics`` sums them: a scrape answered by any worker sees
the whole service, not that worker's own counts.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    disable_created_metrics,
    generate_latest,
    multiprocess,
)

#: prometheus_client's variable: the directory shared by the processes of one service.
MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"

# The `*_created` series (each metric's creation time) read as gauges of their own on
# /metrics ("convrag_turns_created: Answered turns"); no dashboard needs them.
disable_created_metrics()  # type: ignore[no-untyped-call]

REGISTRY = CollectorRegistry(auto_describe=True)

TURNS = Counter(
    "convrag_turns_total",
    "Turns by outcome: ok (answered), error (failed), stopped (POST .../stop)",
    ["outcome"],
    registry=REGISTRY,
)
NODE_LATENCY = Histogram(
    "convrag_node_latency_seconds",
    "Time per graph node",
    ["node"],
    registry=REGISTRY,
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
TURN_LATENCY = Histogram(
    "convrag_turn_latency_seconds",
    "Time per answered turn",
    registry=REGISTRY,
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
RETRIEVED = Histogram(
    "convrag_retrieval_results",
    "Sources given to synthesis per turn",
    registry=REGISTRY,
    buckets=(0, 1, 2, 3, 4, 5, 8, 10, 20),
)
REWRITES = Counter("convrag_rewrites_total", "Rewrites by method", ["method"], registry=REGISTRY)
FALLBACKS = Counter("convrag_fallbacks_total", "Fallbacks by step", ["step"], registry=REGISTRY)
REGENERATIONS = Counter("convrag_regenerations_total", "Regenerations", registry=REGISTRY)
WEB_SEARCHES = Counter("convrag_web_searches_total", "Web searches run", registry=REGISTRY)
HTTP_ERRORS = Counter("convrag_http_errors_total", "4xx/5xx answers", ["status"], registry=REGISTRY)
FEEDBACK = Counter(
    "convrag_feedback_total", "Ratings of answers received", ["rating"], registry=REGISTRY
)
for _rating in ("up", "down"):  # both series exist from the start, at 0
    FEEDBACK.labels(_rating)


def observe_turn(state: Mapping[str, Any], seconds: float) -> None:
    """Record one finished turn from its final state."""
    TURNS.labels("ok").inc()
    TURN_LATENCY.observe(seconds)
    for node, ms in (state.get("timings") or {}).items():
        NODE_LATENCY.labels(node).observe(ms / 1000.0)
    RETRIEVED.observe(len(state.get("sources") or []))
    REWRITES.labels(state.get("rewrite_method") or "unchanged").inc()
    flags = state.get("flags") or {}
    if flags.get("rewrite_fallback"):
        FALLBACKS.labels("rewrite").inc()
    if flags.get("extractive_fallback"):
        FALLBACKS.labels("synthesize").inc()
    if flags.get("rerank_fallback"):
        FALLBACKS.labels("rerank").inc()
    if flags.get("web_search_fallback"):
        FALLBACKS.labels("web_search").inc()
    if state.get("regenerations"):
        REGENERATIONS.inc(state["regenerations"])
    if flags.get("web_search_triggered"):
        WEB_SEARCHES.inc()


def exposition() -> bytes:
    """The metrics in Prometheus's text format: this process's, or every worker's summed
    when the workers share a :data:`MULTIPROCESS_ENV` directory."""
    path = os.environ.get(MULTIPROCESS_ENV)
    if not path:
        return generate_latest(REGISTRY)
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path)  # type: ignore[no-untyped-call]
    return generate_latest(registry)
