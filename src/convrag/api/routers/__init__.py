"""The service's routes, one module per resource; :mod:`convrag.api.app` includes them.

Routes only translate HTTP: they take typed dependencies (:mod:`convrag.api.deps`), call
store methods or domain actions (:mod:`convrag.conversations`, :mod:`convrag.ingest`),
and shape the reply (:mod:`convrag.api.schemas`).
"""
