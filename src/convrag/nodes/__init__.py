"""The graph's nodes, one module each, in the order a turn visits them.

Each node is a small async function of the state and the run's ``Runtime`` that returns
its typed update. How the graph runs them (timing, time limits, degrading) is in
:mod:`convrag.nodes.policy`; how they are wired is in :mod:`convrag.graph`.
"""
