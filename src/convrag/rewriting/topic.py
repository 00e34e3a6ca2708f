"""What "it/this/that" point to: the topic of an exchange.

:func:`question_topic` finds the noun phrase a question is about (a named thing first, else
a determiner phrase such as "the reverse order of text", a keyword query as a whole, or the
object of "what is ..."); :func:`short_answer` takes a short naming answer as the topic of a
"what/who" question.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from convrag.rewriting.anaphora import anaphors
from convrag.rewriting.history import ConversationContext, Referents, Turn
from convrag.rewriting.mentions import modifies_next
from convrag.rewriting.people import person_like, possessive
from convrag.text.entities import NameSpan, name_spans
from convrag.text.lexicon import (
    ADVERBS,
    AUX,
    FRAME_WORDS,
    FUNCTION_WORDS,
    LY_ADJECTIVES,
    META_NOUNS,
    NOT_NAME,
    NP_DETS,
    PREPS,
    PRONOUNS,
    WH,
)
from convrag.text.tokens import Token, fold, is_capitalised, is_verb_like, strip_end, tokenize

_DEFINE_RE = re.compile(
    r"^(?:(?:what|who)\s+(?:is|are|was|were)|what(?:'s|’s)|(?:can\s+you\s+|please\s+)?"
    r"(?:tell\s+me\s+about|explain|describe|define))\s+(?:an?\s+|the\s+)?(?P<obj>[^?,;]+)",
    re.IGNORECASE,
)

_PREDICATE_ADJ_RE = re.compile(r"(?:ful|ous|less)$")


_DEMONYM_RE = re.compile(r"(?:an|ese|ish|ic|i)$")


def question_topic(
    question: str, ctx: ConversationContext, referents: Referents | None
) -> str | None:
    """The noun phrase a question is about: a named thing first, else a determiner phrase."""
    toks = tokenize(question)
    if not toks:
        return None
    names = _names(toks, ctx)
    things = [s for s in names if not person_like(s, ctx) and not _fragment(toks, s)]
    if things and all(_qualifies(toks, s) for s in things):
        # "the daily meal allowance in Asia": the place qualifies what was asked about
        # ("Is it taxed there?"); "it" is the asked thing.
        phrase = _det_phrase(toks, referents)
        if phrase and not any(fold(s.text) in fold(phrase) for s in things):
            return phrase
        if anaphors(toks):
            return None  # "What is it called outside of the USA?": about the earlier "it"
    if things:
        return _thing(toks, max(things, key=lambda s: (s.ntok, -s.first)))
    topic = _unnamed_topic(question, toks, referents)
    if topic is not None:
        return topic
    for s in names:
        if _fragment(toks, s):
            continue
        ent = ctx.entities.get(s.key)
        if ent is None or not (ent.male or ent.female):  # no he/she: may be a product
            return f"the {s.text}" if s.article else s.text
    return None


def _names(toks: tuple[Token, ...], ctx: ConversationContext) -> list[NameSpan]:
    """The names of a question, less one-word ones capitalised by their position or
    written in lowercase by the answers."""
    return [
        s
        for s in name_spans(toks)
        if s.key not in NOT_NAME
        and not (
            s.ntok == 1
            # capitalised by position, or a word the answers write in lowercase
            and (toks[s.first].sent_start or s.key in ctx.common_words)
        )
    ]


def _thing(toks: tuple[Token, ...], s: NameSpan) -> str:
    """A named thing as a topic: with its article, and with the noun after a
    demonym-shaped name ("American football")."""
    text = s.text
    if s.ntok == 1 and _DEMONYM_RE.search(text):
        # "American football": the name is an adjective, the noun after it belongs to it
        j = s.last + 1
        while (
            j < len(toks)
            and j <= s.last + 2
            and toks[j].kind == "word"
            and toks[j].text.islower()
            and toks[j].low not in FUNCTION_WORDS
            and toks[j].low not in FRAME_WORDS
            and not is_verb_like(toks[j])
        ):
            text = f"{text} {toks[j].text}"
            j += 1
    return f"the {text}" if s.article else text


def _unnamed_topic(
    question: str, toks: tuple[Token, ...], referents: Referents | None
) -> str | None:
    """The topic of a question that names no thing: its determiner phrase, the whole of a
    keyword query, or the object of a definition question."""
    phrase = _det_phrase(toks, referents)
    if phrase:
        return phrase
    if _is_keywords(toks):
        return strip_end(question.strip())  # a keyword query is its own topic
    m = _DEFINE_RE.match(question.strip())
    if m:
        # "What is retrieval-augmented generation?": the whole object is the topic.
        obj = strip_end(m.group("obj"))
        otoks = tokenize(obj)
        if 1 <= len(otoks) <= 6 and not any(t.low in PRONOUNS or t.low in AUX for t in otoks):
            return obj
    return None


def _fragment(toks: tuple[Token, ...], span: NameSpan) -> bool:
    """ "How is Sickle cell treated?": one capitalised word of a longer lowercase term.

    Where the term ends is unknown, so the word alone is no referent. A demonym-shaped word
    ("American football") is an adjective instead, and :func:`question_topic` keeps the
    noun after it.
    """
    return not _DEMONYM_RE.search(span.key) and modifies_next(toks, span)


_DO_SUPPORT = frozenset(
    {
        "do",
        "does",
        "did",
        "can",
        "could",
        "will",
        "would",
        "shall",
        "should",
        "may",
        "might",
        "must",
    }
)
"""Auxiliaries whose subject a bare verb follows: "can a Map use ...", "does it open"."""

_OBJECT_OPENERS = PREPS | NP_DETS | WH | frozenset({"whether", "if"})
"""Words that open what follows a verb: a preposition, an object's determiner, a clause."""


def _det_phrase(toks: tuple[Token, ...], referents: Referents | None) -> str | None:
    """Longest "the/his + words (+ of + words)" phrase, pronoun determiners resolved.

    Stops at verb-like words ("the original members returned") and skips phrases about the
    conversation itself ("this article", "the answer"), which name no retrievable topic.
    """
    best: list[str] = []
    for k, t in enumerate(toks):
        if t.low not in NP_DETS and not t.text.endswith(("'s", "’s")):
            continue
        words = _phrase_after(toks, k)
        if not _names_a_topic(words):
            continue
        cand = [_determiner(toks, k, referents), *words]
        if len(cand) > len(best):
            best = cand
    if not best:
        return None
    if best[0].lower() == "the":
        best[0] = "the"
    return " ".join(best)


def _phrase_after(toks: tuple[Token, ...], k: int) -> list[str]:
    """The words of the noun phrase after the determiner at ``k``, less a dangling "of
    (the)", a verb that ends a subject after an auxiliary, and a predicate adjective."""
    words, j = _phrase_words(toks, k + 1)
    while words and words[-1] in ("of", "the"):
        words.pop()
    if (
        len(words) > 1
        and words[-1].islower()
        and (j >= len(toks) or toks[j].kind == "punct" or toks[j].low in _OBJECT_OPENERS)
        and k > 0
        and toks[k - 1].low in _DO_SUPPORT
    ):
        # "When does the cafeteria open?", "Which types can a Map use without ...?",
        # "Where does the detector get the region from?": a subject right after an
        # auxiliary that runs to the question's end or to what opens the verb's object
        # ends with the question's verb.
        words.pop()
    # "Was the album successful?": a trailing adjective is the predicate, not the noun
    while len(words) > 1 and _PREDICATE_ADJ_RE.search(words[-1].lower()):
        words.pop()
    return words


def _phrase_words(toks: tuple[Token, ...], j: int) -> tuple[list[str], int]:
    """Up to four content words from ``j`` on, and "of (the)" between runs of them ("the
    reverse order of text"); and the index where the phrase stopped."""
    n = len(toks)
    words: list[str] = []
    run = 0
    while j < n and run < 4:
        u = toks[j]
        if _is_content(u):
            words.append(u.text)
            run += 1
            j += 1
        elif u.low == "of" and words and j + 1 < n and toks[j + 1].kind == "word":
            words.append("of")
            run = 0
            j += 1
        elif u.low == "the" and words and words[-1] == "of":
            words.append("the")
            j += 1
        else:
            break
    return words, j


def _is_content(u: Token) -> bool:
    """A word a noun phrase holds: no function word, adverb or verb."""
    return (
        u.kind in ("word", "num", "init")
        and u.low not in FUNCTION_WORDS
        and u.low not in _OBJECT_OPENERS  # "whether"
        and u.low not in ADVERBS
        and not (u.low.endswith("ly") and u.low not in LY_ADJECTIVES)
        and not is_verb_like(u)
    )


_NOT_THINGS = ("most", "least", "best", "worst", "more", "less", "same")
"""Words that open a superlative or a comparison ("the most popular"), not a thing."""


def _names_a_topic(words: Sequence[str]) -> bool:
    """Whether a phrase's words name something to retrieve: not only frame words, not a
    superlative, and not about the conversation itself ("this article", "the answer")."""
    if not words or all(w.lower() in FRAME_WORDS for w in words):
        return False
    if words[0].lower() in _NOT_THINGS:
        return False  # "the most popular": a superlative, not a thing
    head = words[words.index("of") - 1] if "of" in words else words[-1]
    return head.lower() not in META_NOUNS


def _determiner(toks: tuple[Token, ...], k: int, referents: Referents | None) -> str:
    """The determiner of the phrase at ``k`` as the query says it: "the" for "this/a",
    the owner's possessive for "his/her/its/their" (when known), and a possessive name
    whole ("Prasad Chaudhari's")."""
    t = toks[k]
    if t.low in ("this", "that", "these", "those", "a", "an"):
        return "the"
    if t.low in ("his", "her", "its", "their"):
        owner = None
        if referents is not None:
            owner = referents.person if t.low in ("his", "her") else referents.group
        return possessive(owner) if owner else "the"
    det = t.text
    if t.low != "the":
        m = k - 1
        while m >= 0 and is_capitalised(toks[m]) and toks[m].low not in NOT_NAME:
            det = f"{toks[m].text} {det}"  # "Prasad Chaudhari's"
            m -= 1
    return det


def _is_keywords(toks: tuple[Token, ...]) -> bool:
    """A short keyword fragment rather than a sentence ("data volume", "backups.")."""
    words = [t for t in toks if t.kind != "punct"]
    return (
        0 < len(words) <= 4
        and not any(t.text == "?" for t in toks)
        and not any(t.low in WH or t.low in AUX or t.low in PRONOUNS for t in words)
        and not any(is_verb_like(t) for t in words)
    )


def short_answer(turn: Turn) -> str | None:
    """A short answer that names something ("Streetlife Serenade.") is what "it" points to."""
    ans = turn.answer.strip()
    if not ans or len(ans.split()) > 6:
        return None
    toks = tokenize(ans)
    names = name_spans(toks)
    words = sum(1 for t in toks if t.kind != "punct")
    if names:
        s = max(names, key=lambda s: s.ntok)
        if 2 * s.ntok >= words:  # the answer is mostly the name, not a description
            return f"the {s.text}" if s.article else s.text
    return None


def asks_for_name(question: str) -> bool:
    toks = tokenize(question)
    return bool(toks) and toks[0].low in ("what", "which", "who", "name")


_PLACE_PREPS = frozenset({"in", "at", "from", "to", "near"})


_BOUNDS = frozenset({"outside", "inside", "across", "throughout", "within", "beyond", "around"})
"""Prepositions that place what was asked in or out of a region ("outside (of) the USA")."""


def _qualifies(toks: tuple[Token, ...], span: NameSpan) -> bool:
    """Whether a name only says where: the object of a place preposition ("in Asia",
    "outside of the USA")."""
    if span.prev in _PLACE_PREPS or span.prev in _BOUNDS:
        return True
    of = span.first - 1 - int(span.article)  # the token of ``prev``
    return span.prev == "of" and of >= 1 and toks[of - 1].low in _BOUNDS
