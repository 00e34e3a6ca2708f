"""The retrieval wing: what a turn searches, how its lists are fused, whether the
documents hold the answer ("not found"), and which sentences an answer quotes.

Every fitted number of the wing lives in one :class:`~convrag.retrieval.policy.RetrievalPolicy`,
read from a JSON file (``policy.json`` beside this module by default, or the file the
``RETRIEVAL_POLICY`` setting names). The graph's nodes read their state, call the wing and
return an update; the wing never reads a run's context.
"""
