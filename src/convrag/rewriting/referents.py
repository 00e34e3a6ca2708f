"""What each kind of reference in a follow-up most likely points to, from the history.

:func:`referents` reads the salience model of :mod:`~convrag.rewriting.history` into one
:class:`~convrag.rewriting.history.Referents`: the person "he/she" means (by gender when the
history says it), the people "they" are when the last exchange listed them, the group, the
topic "it/that" points to (:mod:`~convrag.rewriting.topic`), and what the whole
conversation is about. Only credible names are offered: a wrong referent
hurts retrieval more than a pronoun left alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from convrag.rewriting.history import (
    PERSON_MIN,
    ConversationContext,
    Entity,
    Referents,
    Turn,
    conversation_context,
    display_name,
)
from convrag.rewriting.people import (
    asked_about,
    listed_people,
    person_for,
    plural_phrase,
    resolved_they,
)
from convrag.rewriting.topic import asks_for_name, question_topic, short_answer
from convrag.text.entities import name_spans
from convrag.text.tokens import fold, tokenize

_VAGUE_RE = re.compile(r"the [a-z][\w-]*")


def referents(history: Sequence[Turn]) -> Referents:
    """Pick the referents for a follow-up to ``history``.

    The topic comes from the latest exchange that has one (a short naming answer to a "what/
    who" question, else the previous question's named thing or noun phrase); people from
    the salience model over the whole history.
    """
    ctx = conversation_context(history)
    ranked = [e for e in ctx.ranked if ctx.credible(e)]
    last = history[-1]
    people = listed_people(history, ctx)
    person, female, male = _persons(history, ranked, people)
    refs = Referents(person, female, male, people, _group(last, ranked), None)
    refs.topic = _topic(history, ctx, refs)
    best = max(ranked, key=lambda e: e.person + e.score, default=None)
    refs.main = person or (display_name(best) if best else None)
    return refs


def _persons(
    history: Sequence[Turn], ranked: Sequence[Entity], people: Sequence[str]
) -> tuple[str | None, str | None, str | None]:
    """Who "he/she" is, "she" is and "he" is: the most salient credible person of each,
    or the person the last question turned to ("And what about John Doe?")."""
    last = history[-1]
    # "Gandhi and Patel led it." + "what did he do?": either could be "he", so neither is,
    # unless the user named one before ("When did Gramm leave?" + "Jones and Gramm ...").
    listed = {w for name in people for w in fold(name).split()} if len(people) >= 2 else set()
    asked = {w for span in name_spans(tokenize(last.question)) for w in span.key.split()}
    ambiguous = [
        e
        for e in ranked
        if e.tokens & listed and not e.tokens & asked and min(e.turns) == len(history) - 1
    ]
    person = person_for(ranked, "", ambiguous)
    female = person_for(ranked, "f", ambiguous)
    male = person_for(ranked, "m", ambiguous)
    shifted = asked_about(last.question, ranked)
    if shifted is not None:
        # "And what about John Doe?" moves the conversation to him: "his position" next
        # is his, however often the earlier person was named.
        person = display_name(shifted)
        female = person if shifted.female >= shifted.male else female
        male = person if shifted.male >= shifted.female else male
    return person, female, male


def _group(last: Turn, ranked: Sequence[Entity]) -> str | None:
    """What "they" is when no list of people is: a plural phrase of the last question,
    what its "they" was rewritten to, else the most group-like credible name."""
    group = plural_phrase(last.question) or resolved_they(last)
    if group is None:
        group_ent = max((e for e in ranked if e.grouplike), key=lambda e: e.group, default=None)
        if group_ent and group_ent.group > PERSON_MIN:
            group = display_name(group_ent)
    return group


def _topic(history: Sequence[Turn], ctx: ConversationContext, refs: Referents) -> str | None:
    """What "it/that" points to: the topic of the latest of the last three exchanges that
    has one, unless it is one vague common noun."""
    last = history[-1]
    topic = None
    for turn in reversed(history[-3:]):
        topic = short_answer(turn) if turn is last and asks_for_name(turn.question) else None
        topic = topic or question_topic(turn.question, ctx, refs)
        if topic:
            break
    # "the body": one common noun says too little to stand in for "it"; an older turn's
    # topic would be a worse guess still.
    return None if topic and _VAGUE_RE.fullmatch(topic) else topic
