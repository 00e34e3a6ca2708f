"""The Milvus client that the vector index talks through: one that loads a released
collection again and retries the call once."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from pymilvus import MilvusClient, MilvusException

log = logging.getLogger(__name__)

_T = TypeVar("_T")

COLLECTION_NOT_LOADED = 101
"""Milvus's error code for a call on a collection that is not loaded (``released``)."""


def collection_released(exc: BaseException) -> bool:
    """Whether ``exc`` is Milvus refusing a read because the collection is not loaded: what
    every search, query and delete met after a Milvus (Lite) restart, which starts with
    every collection released."""
    if not isinstance(exc, MilvusException):
        return False
    message = str(getattr(exc, "message", "") or exc).lower()
    return exc.code == COLLECTION_NOT_LOADED or "released" in message or "not loaded" in message


class ReloadingMilvusClient(MilvusClient):  # type: ignore[misc]  # pymilvus is untyped
    """A Milvus client that loads a released collection again and retries the call once.

    A Milvus (Lite) server started again (the embedded one's supervisor restarts a killed
    child at the same port, in this process or in the ``serve --workers`` parent) has
    every collection released: the gRPC channel reconnects by itself, but every query,
    search and delete failed with "in state 'released'" until a process restart. Any
    process that meets the error loads the collection again, whoever restarted the server.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._reload_lock = threading.Lock()

    def reload(self, collection: str) -> bool:
        """Load ``collection`` unless it is loaded already; True when this call loaded it."""
        with self._reload_lock:  # concurrent callers that met the error load it once
            if self.is_loaded(collection):
                return False
            self.load_collection(collection)
        log.warning(
            "Milvus collection %r was released (its server restarted); loaded again", collection
        )
        return True

    def is_loaded(self, collection: str) -> bool:
        """Whether ``collection`` is loaded, so that searches and queries can run on it."""
        from pymilvus.client.types import LoadState

        return bool(self.get_load_state(collection).get("state") == LoadState.Loaded)

    def reloading(self, collection: str, call: Callable[[], _T]) -> _T:
        """``call()``, and once more after loading ``collection`` if it was released."""
        try:
            return call()
        except MilvusException as exc:
            if not collection_released(exc):
                raise
        self.reload(collection)
        return call()

    def search(self, collection_name: str, *args: Any, **kwargs: Any) -> Any:
        return self.reloading(
            collection_name,
            lambda: super(ReloadingMilvusClient, self).search(collection_name, *args, **kwargs),
        )

    def hybrid_search(self, collection_name: str, *args: Any, **kwargs: Any) -> Any:
        return self.reloading(
            collection_name,
            lambda: super(ReloadingMilvusClient, self).hybrid_search(
                collection_name, *args, **kwargs
            ),
        )

    def query(self, collection_name: str, *args: Any, **kwargs: Any) -> Any:
        return self.reloading(
            collection_name,
            lambda: super(ReloadingMilvusClient, self).query(collection_name, *args, **kwargs),
        )

    def get(self, collection_name: str, *args: Any, **kwargs: Any) -> Any:
        return self.reloading(
            collection_name,
            lambda: super(ReloadingMilvusClient, self).get(collection_name, *args, **kwargs),
        )

    def delete(self, collection_name: str, *args: Any, **kwargs: Any) -> Any:
        return self.reloading(
            collection_name,
            lambda: super(ReloadingMilvusClient, self).delete(collection_name, *args, **kwargs),
        )

    def upsert(self, collection_name: str, *args: Any, **kwargs: Any) -> Any:
        return self.reloading(
            collection_name,
            lambda: super(ReloadingMilvusClient, self).upsert(collection_name, *args, **kwargs),
        )

    def insert(self, collection_name: str, *args: Any, **kwargs: Any) -> Any:
        return self.reloading(
            collection_name,
            lambda: super(ReloadingMilvusClient, self).insert(collection_name, *args, **kwargs),
        )
