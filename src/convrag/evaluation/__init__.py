"""Quality evaluation on external benchmarks (MTRAG retrieval, CANARD rewriting)."""
