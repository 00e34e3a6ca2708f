"""Why a conversation refuses a turn or a delete: it is busy, or the turn conflicts.

One module below the stores, the graph's nodes and the HTTP layer, so that each raises
and catches the same classes: the stores find a conversation in use in the database, the
nodes refuse a turn as its question is stored, and the turn runner refuses one from its
own books before either; the HTTP layer answers all of them with a 409 whose message
says which (:data:`BUSY`, :data:`BEING_DELETED`, :data:`ANSWERING`).
:func:`convrag.assistant.conflicts` tells these apart from a failed turn.
"""

from __future__ import annotations

BUSY = (
    "the conversation is still answering the previous message; retry when it is done "
    "(messages are not queued)"
)
"""What a message to a conversation that is answering another one is told, wherever the
check caught it (this process's turns, or the database's record of another's)."""

BEING_DELETED = "the conversation is being deleted"
"""What a message to a conversation whose delete is under way is told (a 409), and a
second delete of it meanwhile."""

ANSWERING = "the conversation is answering a message; retry when it is done"
"""What a delete of a conversation that is answering a message is told (a 409)."""


class ConversationInUse(Exception):
    """A conversation's delete is under way (:data:`BEING_DELETED`), so a turn may not
    start in it nor a second delete begin; or it is answering a message
    (:data:`ANSWERING`), so it may not be deleted. In any process sharing the database;
    the message says which."""


class ConversationBusyHere(ConversationInUse):
    """A message arrived while the conversation is still answering another, or is being
    deleted; or a delete while it answers. The message says which. This process's own
    books found it (:class:`~convrag.api.turns.TurnRunner`), before the database's
    (:class:`ConversationInUse`) would."""

    def __init__(self, message: str = BUSY) -> None:
        super().__init__(message)


class ConversationBusy(Exception):
    """Another message of the conversation is being answered, perhaps by another process:
    a conversation answers one message at a time. Found as the turn's question is stored
    (``load_history``), from the database's record of the turns being answered."""

    def __init__(self) -> None:
        super().__init__(BUSY)


class TurnConflict(Exception):
    """The caller's turn id names a turn that is already answered or still being
    answered by another run: this run must not answer it again. ``status`` is that
    turn's (:data:`~convrag.stores.records.TurnStatus`)."""

    def __init__(self, turn_id: str, status: str | None) -> None:
        super().__init__(
            f"turn {turn_id} is already answered"
            if status == "done"
            else f"turn {turn_id} is still being answered; retry when it is done"
        )
        self.turn_id = turn_id
        self.status = status
