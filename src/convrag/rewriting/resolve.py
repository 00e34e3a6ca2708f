"""Rewrite a follow-up into a standalone query: pronoun and ellipsis resolution.

When no LLM is configured, :func:`contextualize` alone turns a follow-up such as "What about
her basic salary?" into a query ("What is Prasad Chaudhari's basic salary?") that BM25 and
dense retrieval can use without the conversation. Personal pronouns become the most salient
person (or the people the previous answer listed), "it/this/that" the previous turn's topic,
and fragments ("and in 2019?", "why?", "what about X?", "any others?") are mapped onto the
previous question. When no referent is credible, the pronoun is left as it is: a wrong name
hurts retrieval more than a vague pronoun. Credible means well evidenced: a name the history
uses as a name (not an adjective such as "Indian", a word capitalised by its position, or the
first word of a term such as "Sickle cell"), or a noun phrase of more than one word ("the
reverse order of text", not "the body"). Regex and word-list heuristics over the cached
models of :mod:`convrag.rewriting.history`, so a call takes a fraction of a millisecond.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from convrag.rewriting.classify import (
    COMPARATIVE_RE,
    LEAD_CONJ_RE,
    WHAT_ABOUT_RE,
    classify,
    is_no_retrieval,
    split_pleasantries,
)
from convrag.rewriting.history import (
    ANSWER_CHARS,
    PERSON_MIN,
    ConversationContext,
    Entity,
    Turn,
    anaphors,
    conversation_context,
    display_name,
    full_name,
    modifies_next,
)
from convrag.text.entities import YEAR_RE, NameSpan, name_spans
from convrag.text.lexicon import (
    ADVERBS,
    AUX,
    FEMALE,
    FRAME_WORDS,
    FUNCTION_WORDS,
    LOC_PREPS,
    LY_ADJECTIVES,
    META_NOUNS,
    NAME_SUFFIXES,
    NOT_NAME,
    NP_DETS,
    PREPS,
    PRONOUNS,
    TEMPORAL_PREPS,
    TIME_NOUNS,
    TIME_WORDS,
    WH,
)
from convrag.text.tokens import (
    Token,
    clean,
    content_words,
    fold,
    has_inner_cap,
    is_capitalised,
    is_plural_phrase,
    is_verb_like,
    strip_end,
    strip_possessive,
    tokenize,
)

__all__ = ["RULES", "check_rules", "contextualize"]

_SPACE_PUNCT_RE = re.compile(r"\s+([?.!,;:])")
_ELSE_RE = re.compile(r"\b(?:else|others?|another)\b", re.IGNORECASE)
_DEFINE_RE = re.compile(
    r"^(?:(?:what|who)\s+(?:is|are|was|were)|what(?:'s|’s)|(?:can\s+you\s+|please\s+)?"
    r"(?:tell\s+me\s+about|explain|describe|define))\s+(?:an?\s+|the\s+)?(?P<obj>[^?,;]+)",
    re.IGNORECASE,
)
_PREDICATE_ADJ_RE = re.compile(r"(?:ful|ous|less)$")
_DEMONYM_RE = re.compile(r"(?:an|ese|ish|ic|i)$")
_VAGUE_RE = re.compile(r"the [a-z][\w-]*")


def contextualize(message: str, history: Sequence[Turn], *, without: Collection[str] = ()) -> str:
    """Return a standalone version of ``message`` given the earlier ``history`` (oldest first).

    Standalone messages, messages with no history and no-retrieval messages come back
    unchanged (whitespace-normalised). Follow-ups get their pronouns replaced by the most
    salient referent (personal pronouns by the person or the people just listed, "it/that" by
    the previous topic), and fragments are completed from the previous question. The original
    words are kept except replaced pronouns, the output stays short for BM25 and dense
    retrieval, and it is never empty (an empty message yields the previous question, if any).
    ``without`` names rules of :data:`RULES` to switch off (to measure what each earns).
    """
    msg = clean(message)
    if not msg:
        for turn in reversed(history):
            if turn.question.strip():
                return clean(turn.question)
        return "?"
    if not history or classify(msg, history) != "follow_up":
        return message.strip()
    prefix, core = split_pleasantries(msg)
    off = check_rules(without)
    out = clean(_SPACE_PUNCT_RE.sub(r"\1", _rewrite(core, history, off)))
    if not out:
        return msg
    if out == clean(_SPACE_PUNCT_RE.sub(r"\1", core)):
        return message.strip()  # nothing resolved: the user's own words, not a re-cased copy
    return prefix + _as_question(out, capitalize=not prefix)


def check_rules(names: Collection[str]) -> frozenset[str]:
    """``names`` as a set of rules, or ValueError naming the unknown ones and the rules."""
    unknown = sorted(set(names) - set(RULES))
    if unknown:
        raise ValueError(
            f"unknown rewrite rule {', '.join(unknown)}; the rules are {', '.join(RULES)}"
        )
    return frozenset(names)


def _as_question(text: str, *, capitalize: bool) -> str:
    """Normalise a rewritten query: capital first letter, and "?" after a bare question."""
    if capitalize and text[0].islower() and not has_inner_cap(text.split()[0]):
        text = text[0].upper() + text[1:]
    toks = tokenize(text)
    single = not any(t.text in ".!?" for t in toks)
    if single and toks and (toks[0].low in WH or toks[0].low in AUX) and text[-1].isalnum():
        text += "?"
    return text


@dataclass(frozen=True, slots=True)
class _Ask:
    """One follow-up as every rule sees it: the message, the history, the referents, the
    previous question, and the message with its pronouns resolved."""

    msg: str
    history: Sequence[Turn]
    refs: _Referents
    prev_q: str | None
    resolved: str
    changed: bool


def _rewrite(msg: str, history: Sequence[Turn], off: frozenset[str] = frozenset()) -> str:
    """Rewrite a follow-up: the first rule of :data:`_RULES` (not in ``off``) that
    applies, else the message with its pronouns resolved."""
    refs = _referents(history)
    refs.off = off
    resolved, changed = _resolve_pronouns(msg, refs)
    ask = _Ask(msg, history, refs, _previous_question(history, refs), resolved, changed)
    for name, rule in _RULES:
        if name not in off:
            out = rule(ask)
            if out is not None:
                return out
    return resolved


def _rule_what_about(a: _Ask) -> str | None:
    """ "What about X?": X put into the previous question's frame, else the message with
    the topic appended ("What about installation for OpenShift?")."""
    m = WHAT_ABOUT_RE.match(a.msg)
    if not m:
        return None
    rtoks = tokenize(m.group("rest"))
    if rtoks and (rtoks[0].low in WH or rtoks[0].low in AUX):
        # "what about why can't I ...?" wraps a full question: keep just that question.
        resolved, _ = _resolve_pronouns(m.group("rest"), a.refs)
        return resolved[0].upper() + resolved[1:]
    rest, _ = _resolve_pronouns(m.group("rest"), a.refs)
    mapped = _what_about(rest, a.prev_q, a.refs)
    if mapped:
        return mapped
    topic = a.refs.topic
    if a.changed or not topic or fold(topic) in fold(a.msg) or name_spans(rtoks):
        return a.resolved  # "What about Romeo and Juliet?" names its own new subject
    return _append_topic(a.resolved, topic, "for")


def _rule_lead_fragment(a: _Ask) -> str | None:
    """ "and in 2010?": a fragment after a conjunction completes the previous question."""
    lead = LEAD_CONJ_RE.match(a.msg)
    if not lead or not a.prev_q:
        return None
    rest = a.msg[lead.end() :]
    rtoks = tokenize(rest)
    is_fragment = (
        bool(rtoks)
        and (rtoks[0].low in PREPS or len(content_words(rtoks)) <= 2)
        and not any(t.low in AUX for t in rtoks)
    ) or ("code_term" not in a.refs.off and _code_shape(strip_end(rest).strip()) is not None)
    if not is_fragment:
        return None
    rest, _ = _resolve_pronouns(rest, a.refs)
    rtoks = tokenize(rest)
    mapped = _what_about(rest, a.prev_q, a.refs)
    if mapped:
        return mapped
    if rtoks[0].low in PREPS and not _proper_names(rtoks):
        # "and in 2010?" extends the question; "and sick leave?" would not read
        # onto "Do unused days carry over?": that one carries the question instead.
        swapped = _swap_last_phrase(a.prev_q, rest)
        return swapped or f"{strip_end(a.prev_q)} {strip_end(rest)}?"
    return None


def _rule_compare(a: _Ask) -> str | None:
    """ "Who earns more?": the people compared named ("... between A and B?")."""
    if not COMPARATIVE_RE.search(a.msg):
        return None
    people = _compared(a.history, conversation_context(a.history))
    toks = tokenize(a.resolved)
    if (
        len(people) >= 2
        and toks
        and toks[0].low in ("who", "whose")
        and len(content_words(toks)) <= 2
        and not any(fold(p) in fold(a.resolved) for p in people)
    ):
        return _append_topic(a.resolved, _join_names(people), "between")
    return None


def _rule_expand_name(a: _Ask) -> str | None:
    """A one-word name spelled out as the history spells it ("Dali" -> "Salvador Dali")."""
    if a.changed:
        return None
    expanded = _expand_partial(a.resolved, name_spans(tokenize(a.resolved)), a.history)
    return expanded if expanded != a.resolved else None


def _bare_fragment_topic(a: _Ask) -> str | None:
    """The topic a bare fragment ("any others?", "tell me more") may take, or None when
    the message names or points to something of its own, or says a content word."""
    toks = tokenize(a.resolved)
    topic = a.refs.topic or a.refs.main
    if a.changed or not topic or name_spans(toks) or anaphors(toks):
        return None
    if fold(topic) in fold(a.resolved):
        return None
    if [t for t in content_words(toks) if t.low not in META_NOUNS]:
        return None  # a question with its own words is better left alone than padded
    return topic


def _rule_others(a: _Ask) -> str | None:
    """ "any others?": the previous question again, minus the names it was answered with."""
    topic = _bare_fragment_topic(a)
    if topic is None or not _ELSE_RE.search(a.msg):
        return None
    besides = _besides(a.prev_q, a.history[-1].answer[:ANSWER_CHARS])
    return besides or _append_topic(a.resolved, a.refs.main or topic, "about")


_RULES: tuple[tuple[str, Callable[[_Ask], str | None]], ...] = (
    ("what_about", _rule_what_about),
    ("lead_fragment", _rule_lead_fragment),
    ("compare", _rule_compare),
    ("expand_name", _rule_expand_name),
    ("others", _rule_others),
)
"""The fragment rules, tried in order; the first that applies rewrites the message. Each
was measured alone (``convrag eval rewrite --without RULE``, ``convrag eval mtrag
--without RULE``; BENCHMARKS.md, issue 31). "Tell me more" + the topic was deleted there:
it moved nothing on CANARD or either MTRAG domain, and a bare continuation now reuses the
previous standalone question (:mod:`convrag.rewriting.gate`)."""

PRONOUN_RULES = ("person", "group", "topic", "place")
"""Pronoun resolution, by kind: "he/she", "they/their", "it/this/that", "there"."""

RULES: tuple[str, ...] = (
    *PRONOUN_RULES,
    *(name for name, _ in _RULES),
    "code_term",
)
"""Every rule a caller may switch off (``contextualize(..., without=...)``); ``code_term``
is the technical-term swap inside "what about X?" and "and X?" (:func:`_swap_code_term`)."""


@dataclass(slots=True)
class _Referents:
    """What each kind of reference in a follow-up most likely points to."""

    person: str | None
    female: str | None
    male: str | None
    people: list[str]  # coordinated names in the previous turn ("A and B")
    group: str | None
    topic: str | None  # what "it/that" most likely points to
    place: str | None
    main: str | None = None  # what the whole conversation is about
    off: frozenset[str] = frozenset()  # pronoun kinds switched off (PRONOUN_RULES)


def _referents(history: Sequence[Turn]) -> _Referents:
    """Pick the referents for a follow-up to ``history``.

    The topic comes from the latest exchange that has one (a short naming answer to a "what/
    who" question, else the previous question's named thing or noun phrase); people from
    the salience model over the whole history.
    """
    ctx = conversation_context(history)
    ranked = [e for e in ctx.ranked if ctx.credible(e)]
    last = history[-1]
    people = _people(history, ctx)
    # "Gandhi and Patel led it." + "what did he do?": either could be "he", so neither is,
    # unless the user named one before ("When did Gramm leave?" + "Jones and Gramm ...").
    listed = {w for name in people for w in fold(name).split()} if len(people) >= 2 else set()
    asked = {w for span in name_spans(tokenize(last.question)) for w in span.key.split()}
    ambiguous = [
        e
        for e in ranked
        if e.tokens & listed and not e.tokens & asked and min(e.turns) == len(history) - 1
    ]
    person = _person_for(ranked, "", ambiguous)
    female = _person_for(ranked, "f", ambiguous)
    male = _person_for(ranked, "m", ambiguous)
    shifted = _asked_about(last.question, ranked)
    if shifted is not None:
        # "And what about John Doe?" moves the conversation to him: "his position" next
        # is his, however often the earlier person was named.
        person = display_name(shifted)
        female = person if shifted.female >= shifted.male else female
        male = person if shifted.male >= shifted.female else male
    group = _plural_phrase(last.question) or _resolved_they(last)
    if group is None:
        group_ent = max((e for e in ranked if e.grouplike), key=lambda e: e.group, default=None)
        if group_ent and group_ent.group > PERSON_MIN:
            group = display_name(group_ent)
    refs = _Referents(person, female, male, people, group, None, None)
    topic = None
    for turn in reversed(history[-3:]):
        topic = _short_answer(turn) if turn is last and _asks_for_name(turn.question) else None
        topic = topic or _question_topic(turn.question, ctx, refs)
        if topic:
            break
    # "the body": one common noun says too little to stand in for "it"; an older turn's
    # topic would be a worse guess still.
    refs.topic = None if topic and _VAGUE_RE.fullmatch(topic) else topic
    refs.place = _place(last)
    best = max(ranked, key=lambda e: e.person + e.score, default=None)
    refs.main = person or (display_name(best) if best else None)
    return refs


def _asked_about(question: str, ranked: Sequence[Entity]) -> Entity | None:
    """The person a "what about X?" question turns to, when X names one."""
    m = WHAT_ABOUT_RE.match(question.strip())
    if not m:
        return None
    keys = {w for span in name_spans(tokenize(m.group("rest"))) for w in span.key.split()}
    people = [e for e in ranked if e.person >= PERSON_MIN and e.tokens & keys]
    return people[0] if len(people) == 1 else None


def _person_for(ranked: Sequence[Entity], gender: str, ambiguous: Sequence[Entity]) -> str | None:
    """The most salient person, skipping those whose pronouns show the other gender.

    None when that person is one of ``ambiguous`` (several people just named together, none
    of them named before) and nothing but salience says which one the pronoun means.
    """
    for ent in sorted(ranked, key=lambda e: -e.person):
        if ent.person < PERSON_MIN:
            break
        if gender == "f" and ent.male > ent.female:
            continue
        if gender == "m" and ent.female > ent.male:
            continue
        if any(ent is other for other in ambiguous) and not (ent.male or ent.female):
            return None
        return display_name(ent)
    return None


def _people(history: Sequence[Turn], ctx: ConversationContext) -> list[str]:
    """Who "they" are: names listed together in the last exchange ("A and B")."""
    last = history[-1]
    return _coordinated(last.answer[:ANSWER_CHARS], ctx) or _coordinated(last.question, ctx)


def _coordinated(text: str, ctx: ConversationContext) -> list[str]:
    """People joined by "and"/commas in ``text`` ("Prasad Chaudhari and John Doe").

    Only short lists of person-like names count: "English, French and German" is not who
    "they" are.
    """
    toks = tokenize(text)
    spans = name_spans(toks)
    best: list[NameSpan] = []
    run: list[NameSpan] = []
    for span in spans:
        if run:
            gap = [t.low for t in toks[run[-1].last + 1 : span.first]]
            if gap and len(gap) <= 2 and all(g in (",", "and", "&") for g in gap):
                run.append(span)
                continue
            if len(run) > len(best):
                best = run
        run = [span]
    if len(run) > len(best):
        best = run
    best = [s for s in best if s.key.rstrip(".") not in NAME_SUFFIXES]  # "Buckley, Jr."
    if not 2 <= len(best) <= 4 or not all(_person_like(s, ctx) for s in best):
        return []
    return [s.text for s in best]


def _person_like(span: NameSpan, ctx: ConversationContext) -> bool:
    """Whether a name looks like a person (for "he/she", lists of people, comparisons)."""
    if span.article or span.acronym or span.joined or span.prev in LOC_PREPS:
        return False
    ent = ctx.entities.get(span.key)
    if ent is not None and ent.person > ent.thing:
        return True
    return span.ntok >= 2


def _resolved_they(turn: Turn) -> str | None:
    """What "they/them" of ``turn`` was rewritten to ("Can I carry them over?" ->
    "Can I carry days of annual leave over?"): the next "they" most likely means it too."""
    if not turn.standalone:
        return None
    asked = [w.lower().strip("?.!,") for w in turn.question.split()]
    rewritten = turn.standalone.split()
    matcher = difflib.SequenceMatcher(a=asked, b=[w.lower().strip("?.!,") for w in rewritten])
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "replace" and i2 - i1 == 1 and asked[i1] in ("they", "them"):
            return " ".join(w.strip("?.!,") for w in rewritten[j1:j2])
    return None


def _counted(toks: tuple[Token, ...], k: int) -> str | None:
    """What "they" points to after a "how many" question whose counted phrase starts at
    ``k``: the plural subject after its verb when there is one ("How many hours of
    sunlight do tomatoes need?": the tomatoes), else the counted phrase with its "of"
    complement ("How many days of annual leave do I get?": the days of annual leave)."""
    verb = next((j for j in range(k + 1, len(toks)) if toks[j].low in AUX), None)
    if verb is None:
        return None
    if verb + 1 < len(toks):
        subject = toks[verb + 1]
        if subject.low in ("they", "these", "those", "it"):
            return None  # "How many hours do they need?": they are the topic, not the hours
        if (
            subject.kind == "word"
            and subject.low not in PRONOUNS
            and subject.low not in FUNCTION_WORDS
            and subject.low.endswith("s")
            and not subject.low.endswith(("ss", "us", "is"))
        ):
            return subject.text
    words = [x for x in toks[k:verb] if x.kind == "word"]
    head = next((i for i, x in enumerate(words) if x.low in FUNCTION_WORDS), len(words))
    if head and words[head - 1].low.endswith("s"):
        return " ".join(x.text for x in words)
    return None


def _plural_phrase(question: str) -> str | None:
    """A plural noun phrase of a question ("those conversations") that "they" can point to."""
    toks = tokenize(question)
    for k, t in enumerate(toks):
        if t.low not in ("the", "these", "those", "some", "all", "many", "most") and k != 0:
            continue
        if t.low == "many" and k and toks[k - 1].low == "how":
            return _counted(toks, k + 1)
        j = k + 1 if k or t.low in FUNCTION_WORDS else k
        words: list[str] = []
        while (
            j < len(toks)
            and toks[j].kind == "word"
            and toks[j].low not in FUNCTION_WORDS
            and toks[j].low not in FRAME_WORDS
            and not is_verb_like(toks[j])
            and len(words) < 3
        ):
            words.append(toks[j].text)
            j += 1
        if not words:
            continue
        head = words[-1].lower()
        if head.endswith("s") and not head.endswith(("ss", "us", "is")) and head not in META_NOUNS:
            det = "the " if t.low in ("the", "these", "those") else ""
            return det + " ".join(words)
    return None


def _join_names(names: Sequence[str]) -> str:
    if len(names) <= 2:
        return " and ".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def _compared(history: Sequence[Turn], ctx: ConversationContext) -> list[str]:
    """Who "Who earns more?" compares: a list in the last exchange or a turn back, else the
    people the last answer names ("A earns $120,000 and B earns $95,000"), spelled out in
    full when an earlier turn did ("Prasad: $120,000" -> "Prasad Chaudhari")."""
    return [_fuller(n, ctx) for n in _compared_names(history, ctx)]


def _compared_names(history: Sequence[Turn], ctx: ConversationContext) -> list[str]:
    found = _people(history, ctx)
    if found:
        return found
    toks = tokenize(history[-1].answer[:ANSWER_CHARS])
    names: list[str] = []
    for span in name_spans(toks):
        if _person_like(span, ctx) and span.text not in names:
            names.append(span.text)
    if 2 <= len(names) <= 4:
        return names
    if len(history) >= 2:
        return _people(history[:-1], ctx)
    return []


def _fuller(name: str, ctx: ConversationContext) -> str:
    """A one-word name spelled out as the history spelled it ("Prasad" -> "Prasad
    Chaudhari"), when exactly one multi-word person name starts or ends with it."""
    key = fold(name)
    if " " in key:
        return name
    matches = {
        display_name(ent)
        for ent in ctx.entities.values()
        if len(ent.key.split()) > 1
        and key in (ent.key.split()[0], ent.key.split()[-1])
        and ent.person >= ent.thing
    }
    return matches.pop() if len(matches) == 1 else name


def _question_topic(
    question: str, ctx: ConversationContext, referents: _Referents | None
) -> str | None:
    """The noun phrase a question is about: a named thing first, else a determiner phrase."""
    toks = tokenize(question)
    if not toks:
        return None
    names = [
        s
        for s in name_spans(toks)
        if s.key not in NOT_NAME
        and not (
            s.ntok == 1
            # capitalised by position, or a word the answers write in lowercase
            and (toks[s.first].sent_start or s.key in ctx.common_words)
        )
    ]
    things = [s for s in names if not _person_like(s, ctx) and not _fragment(toks, s)]
    if things and all(_qualifies(toks, s) for s in things):
        # "the daily meal allowance in Asia": the place qualifies what was asked about
        # ("there" points to it); "it" is the asked thing.
        phrase = _det_phrase(toks, referents)
        if phrase and not any(fold(s.text) in fold(phrase) for s in things):
            return phrase
        if anaphors(toks):
            return None  # "What is it called outside of the USA?": about the earlier "it"
    if things:
        s = max(things, key=lambda s: (s.ntok, -s.first))
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
    for s in names:
        if _fragment(toks, s):
            continue
        ent = ctx.entities.get(s.key)
        if ent is None or not (ent.male or ent.female):  # no he/she: may be a product
            return f"the {s.text}" if s.article else s.text
    return None


def _fragment(toks: tuple[Token, ...], span: NameSpan) -> bool:
    """ "How is Sickle cell treated?": one capitalised word of a longer lowercase term.

    Where the term ends is unknown, so the word alone is no referent. A demonym-shaped word
    ("American football") is an adjective instead, and :func:`_question_topic` keeps the
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


def _det_phrase(toks: tuple[Token, ...], referents: _Referents | None) -> str | None:
    """Longest "the/his + words (+ of + words)" phrase, pronoun determiners resolved.

    Stops at verb-like words ("the original members returned") and skips phrases about the
    conversation itself ("this article", "the answer"), which name no retrievable topic.
    """
    best: list[str] = []
    n = len(toks)
    for k, t in enumerate(toks):
        if t.low not in NP_DETS and not t.text.endswith(("'s", "’s")):
            continue
        words: list[str] = []
        j = k + 1
        run = 0
        while j < n and run < 4:
            u = toks[j]
            if (
                u.kind in ("word", "num", "init")
                and u.low not in FUNCTION_WORDS
                and u.low not in ADVERBS
                and not (u.low.endswith("ly") and u.low not in LY_ADJECTIVES)
                and not is_verb_like(u)
            ):
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
        while words and words[-1] in ("of", "the"):
            words.pop()
        if (
            len(words) > 1
            and words[-1].islower()
            and (j >= n or toks[j].kind == "punct" or toks[j].low in PREPS)
            and k > 0
            and toks[k - 1].low in _DO_SUPPORT
        ):
            # "When does the cafeteria open?", "Which types can a Map use without ...?": a
            # subject right after an auxiliary that runs to the question's end or to a
            # preposition ends with the question's verb.
            words.pop()
        # "Was the album successful?": a trailing adjective is the predicate, not the noun
        while len(words) > 1 and _PREDICATE_ADJ_RE.search(words[-1].lower()):
            words.pop()
        if not words or all(w.lower() in FRAME_WORDS for w in words):
            continue
        if words[0].lower() in ("most", "least", "best", "worst", "more", "less", "same"):
            continue  # "the most popular": a superlative, not a thing
        head = words[words.index("of") - 1] if "of" in words else words[-1]
        if head.lower() in META_NOUNS:
            continue
        det = t.text
        if t.low in ("this", "that", "these", "those", "a", "an"):
            det = "the"
        elif t.low in ("his", "her", "its", "their"):
            owner = None
            if referents is not None:
                owner = referents.person if t.low in ("his", "her") else referents.group
            det = _possessive(owner) if owner else "the"
        elif t.low != "the":
            m = k - 1
            while m >= 0 and is_capitalised(toks[m]) and toks[m].low not in NOT_NAME:
                det = f"{toks[m].text} {det}"  # "Prasad Chaudhari's"
                m -= 1
        cand = [det, *words]
        if len(cand) > len(best):
            best = cand
    if not best:
        return None
    if best[0].lower() == "the":
        best[0] = "the"
    return " ".join(best)


def _is_keywords(toks: tuple[Token, ...]) -> bool:
    """A short keyword fragment rather than a sentence ("data volume", "backups.")."""
    words = [t for t in toks if t.kind != "punct"]
    return (
        0 < len(words) <= 4
        and not any(t.text == "?" for t in toks)
        and not any(t.low in WH or t.low in AUX or t.low in PRONOUNS for t in words)
        and not any(is_verb_like(t) for t in words)
    )


def _possessive(name: str) -> str:
    return f"{name}'" if name.endswith("s") and not name.endswith("ss") else f"{name}'s"


def _short_answer(turn: Turn) -> str | None:
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


def _asks_for_name(question: str) -> bool:
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


def _place(turn: Turn) -> str | None:
    """Where "there" points: the first name after "in/at/from/to/near" in the last exchange."""
    for text in (turn.answer[:ANSWER_CHARS], turn.standalone or turn.question):
        toks = tokenize(text)
        for span in name_spans(toks):
            if span.prev in _PLACE_PREPS:
                name = f"the {span.text}" if span.article else span.text
                return f"{'at' if span.prev == 'at' else 'in'} {name}"
    return None


def _np_after(toks: tuple[Token, ...], k: int) -> int:
    """Index one past the noun phrase that starts at ``k`` (content words only)."""
    j = k
    while j < len(toks) and toks[j].kind in ("word", "num") and toks[j].low not in FUNCTION_WORDS:
        j += 1
    return j


def _in_question(toks: tuple[Token, ...], k: int) -> bool:
    """Whether token ``k`` is in a sentence that ends with a question mark."""
    for t in toks[k:]:
        if t.text in ".!?":
            return t.text == "?"
    return True


def _her_is_object(toks: tuple[Token, ...], k: int) -> bool:
    """ "told her" (object) versus "her salary" (possessive)."""
    if k + 1 >= len(toks):
        return True
    nxt = toks[k + 1]
    return nxt.kind == "punct" or nxt.low in FUNCTION_WORDS


_KIND = {
    **dict.fromkeys(("he", "him", "his", "she", "her", "hers"), "person"),
    **dict.fromkeys(("they", "them", "their", "theirs"), "group"),
    **dict.fromkeys(("it", "its", "this", "that", "these", "those"), "topic"),
    "there": "place",
}
"""Each pronoun's kind in :data:`PRONOUN_RULES`."""


def _resolve_pronouns(msg: str, refs: _Referents) -> tuple[str, bool]:
    """Replace the first anaphoric pronoun of each kind with its referent."""
    toks = tokenize(msg)
    pointing = anaphors(toks)
    if not pointing:
        return msg, False
    out: list[str] = []
    pos = 0
    used: set[str] = set()
    skip_until = -1
    changed = False
    low_msg = fold(msg)
    for k in pointing:
        if k < skip_until:
            continue
        t = toks[k]
        low = t.low
        repl: str | None = None
        end = t.end
        if _KIND.get(low) in refs.off:
            continue
        if low in ("he", "him", "his", "she", "her", "hers"):
            gender = "f" if low in FEMALE else "m"
            name = (refs.female if gender == "f" else refs.male) or refs.person
            if name and "person" not in used and fold(name) not in low_msg:
                used.add("person")
                is_object = low == "her" and _her_is_object(toks, k)
                repl = name if low in ("he", "she", "him") or is_object else _possessive(name)
        elif low in ("they", "them", "their", "theirs"):
            if "group" not in used:
                if refs.people:
                    names = _join_names(refs.people)
                    if low in ("their", "theirs") and k + 1 < len(toks):
                        j = _np_after(toks, k + 1)
                        if j > k + 1:
                            noun = msg[toks[k + 1].start : toks[j - 1].end]
                            repl = f"the {noun} of {names}"
                            end = toks[j - 1].end
                            skip_until = j
                        else:
                            repl = f"{names}'s"
                    else:
                        repl = names
                elif refs.group and fold(refs.group) not in low_msg:
                    repl = _possessive(refs.group) if low in ("their", "theirs") else refs.group
                if repl:
                    used.add("group")
        elif low in ("it", "its", "this", "that", "these", "those"):
            topic = refs.topic
            is_det = (
                low in ("this", "that", "these", "those")
                and k + 1 < len(toks)
                and toks[k + 1].kind == "word"
                and toks[k + 1].low not in FUNCTION_WORDS
            )
            if topic and low in ("it", "its", "this", "that") and is_plural_phrase(topic):
                topic = None  # "How is it created?" cannot point to "the dialog nodes"
            temporal = k > 0 and toks[k - 1].low in TEMPORAL_PREPS  # "after that"
            if low in ("this", "that") and t.sent_start and not _in_question(toks, k):
                continue  # "That really surprised me.": a comment on the answer
            if (
                topic
                and "topic" not in used
                and not is_det
                and not temporal
                and (fold(topic) not in low_msg)
                and not any(fold(topic) in fold(r) for r in out[1::2])
            ):
                used.add("topic")
                repl = _possessive(topic) if low == "its" else topic
        elif low == "there" and refs.place and "place" not in used:
            used.add("place")
            repl = refs.place
        if repl is None:
            continue
        after = next((x for x in toks[k + 1 :] if x.kind == "word"), None)
        words = repl.split()
        if after is not None and len(words) > 1 and fold(words[-1]) == after.low:
            repl = " ".join(words[:-1])  # "When is the office open?" + "is it open ...?"
        if t.sent_start and repl[:1].islower() and k == 0:
            repl = repl[0].upper() + repl[1:]
        out.append(msg[pos : t.start])
        out.append(repl)
        pos = end
        changed = True
    out.append(msg[pos:])
    return "".join(out), changed


def _previous_question(history: Sequence[Turn], refs: _Referents) -> str | None:
    """The latest real question, its own pronouns resolved against the history."""
    for turn in reversed(history):
        q = clean(turn.standalone or turn.question)
        if q and not is_no_retrieval(clean(turn.question)):
            resolved, _ = _resolve_pronouns(q, refs)
            return resolved
    return None


def _what_about(rest: str, prev_q: str | None, refs: _Referents) -> str | None:
    """Map "What about X?" onto the previous question's frame when the mapping is clear."""
    x = strip_end(rest)
    if not prev_q or not x:
        return None
    prev = strip_end(prev_q)
    ptoks = tokenize(prev)
    xtoks = tokenize(x)
    if not ptoks or ptoks[0].low not in WH | AUX:
        return None
    swapped = None if "code_term" in refs.off else _swap_code_term(prev, x)
    if swapped:
        return swapped
    # A year for a year: "and in 2019?" / "what about 2019?".
    xyear = YEAR_RE.search(x)
    pyear = YEAR_RE.search(prev)
    if xyear and pyear and len(content_words(xtoks)) <= 2:
        return f"{prev[: pyear.start()]}{xyear.group()}{prev[pyear.end() :]}?"
    # A name for a name: "What is the capital of France?" + "what about Germany?".
    xnames = _proper_names(xtoks)
    pnames = name_spans(ptoks)
    if xnames and pnames and len(xnames[0].text.split()) >= len(content_words(xtoks)):
        p = pnames[-1]
        a = ptoks[p.first].start
        b = ptoks[p.last].start + len(strip_possessive(ptoks[p.last].text))
        return f"{prev[:a]}{xnames[0].text}{prev[b:]}?"
    # The same head noun: "What is Prasad's salary?" + "her basic salary" -> swap the phrase.
    content = content_words(xtoks)
    if content:
        head = content[-1].low
        for k in range(len(ptoks) - 1, 0, -1):
            if ptoks[k].low == head:
                s = k
                while s - 1 >= 1 and (
                    (ptoks[s - 1].kind == "word" and ptoks[s - 1].low not in FUNCTION_WORDS)
                    or ptoks[s - 1].low in ("the", "a", "an")
                ):
                    s -= 1
                if s <= 1:
                    break
                return f"{prev[: ptoks[s].start]}{x}{prev[ptoks[k].end :]}?"
    # A new noun phrase for a "what is ..." question: "How old is Obama?" + "his wife".
    if ptoks[0].low in WH and xtoks[0].low not in PREPS and not any(map(is_verb_like, xtoks)):
        for k in range(1, min(4, len(ptoks))):
            if ptoks[k].low in ("is", "are", "was", "were"):
                if all(t.low in WH or t.low in FRAME_WORDS for t in ptoks[1:k]):
                    return f"{prev[: ptoks[k].end]} {x}?"
                break
    return None


_CODE_SHAPES = (
    ("option", re.compile(r"-{1,2}[A-Za-z][\w-]*")),
    (
        "identifier",
        re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\(\))?|\w*_\w+|[a-z]+[A-Z]\w*(?:\(\))?"),
    ),
)
"""Kinds of technical term, as written: a command-line option ("--posix", "-v") and a
name in code ("db.collection.name", "XXH_NO_LONG_LONG", "getSplitTime")."""


def _code_shape(word: str) -> str | None:
    """The kind of technical term ``word`` is (:data:`_CODE_SHAPES`), or None."""
    return next((kind for kind, rx in _CODE_SHAPES if rx.fullmatch(word)), None)


def _swap_code_term(prev: str, x: str) -> str | None:
    """ "What does db.namespace hold?" + "and db.collection.name?": a lone technical term
    takes the place of the previous question's last term of the same kind."""
    shape = _code_shape(x)
    if shape is None:
        return None
    words = prev.split(" ")
    for k in range(len(words) - 1, 0, -1):
        term = words[k].rstrip(",;:")
        if _code_shape(strip_possessive(term)) == shape and term != x:
            words[k] = x + words[k][len(strip_possessive(term)) :]
            return " ".join(words) + "?"
    return None


def _proper_names(toks: tuple[Token, ...]) -> list[NameSpan]:
    """The capitalised names of ``toks`` less days, months and seasons ("on Sundays"),
    which are times, not names to swap for the previous question's."""
    return [s for s in name_spans(toks) if s.key not in TIME_WORDS]


def _swap_last_phrase(prev_q: str, fragment: str) -> str | None:
    """The previous question with its closing prepositional phrase replaced by
    ``fragment`` (a phrase of its own) when the two say the same kind of thing: the same
    preposition before a common noun phrase ("... allowance for a director?" + "and for
    a sales representative?"), or two times ("... hours on Saturday?" + "and during the
    week?"). None otherwise: "in Europe" and "in 2019" are not alternatives, and the
    fragment then extends the question."""
    prev = strip_end(prev_q)
    ptoks, ftoks = tokenize(prev), tokenize(strip_end(fragment))
    k = next((i for i in range(len(ptoks) - 1, 1, -1) if ptoks[i].low in PREPS), None)
    if k is None or len(ftoks) < 2 or not ptoks or ptoks[0].low not in WH | AUX:
        return None
    old, new = ptoks[k + 1 :], ftoks[1:]
    if not old or any(is_verb_like(t) or t.low in PREPS for t in (*old, *new)):
        return None

    def common(toks: tuple[Token, ...]) -> bool:
        return not name_spans(toks) and not any(t.kind == "num" for t in toks)

    def timed(toks: tuple[Token, ...]) -> bool:
        return any(t.low in TIME_NOUNS for t in toks)

    same_kind = (ptoks[k].low == ftoks[0].low and common(old) and common(new)) or (
        timed(old) and timed(new)
    )
    if not same_kind:
        return None
    return f"{prev[: ptoks[k].start]}{strip_end(fragment)}?"


def _append_topic(msg: str, topic: str, connector: str) -> str:
    """Append ``topic`` to a message, before its final punctuation ("... about BM25?")."""
    body = strip_end(msg)
    end = msg[len(body) :].strip()
    if body.lower().endswith((" about", " on", " of", " for", " with")):
        return f"{body} {topic}{end}"
    return f"{body} {connector} {topic}{end}"


def _besides(prev_q: str | None, answer: str) -> str | None:
    """ "Which services offer 4K?" + "Netflix and Hulu." + "any others?" -> "... besides ..."."""
    if not prev_q:
        return None
    ptoks = tokenize(prev_q)
    if not ptoks or ptoks[0].low not in WH:
        return None
    atoks = tokenize(answer)
    names = [s.text for s in name_spans(atoks) if fold(s.text) not in fold(prev_q)]
    words = sum(1 for t in atoks if t.kind != "punct")
    if not names or len(names) > 4:
        return None
    # only a short answer, or one that is mainly a list of names, says what to exclude
    if words > 8 and (len(names) < 2 or sum(len(n.split()) for n in names) * 2 < words):
        return None
    return f"{strip_end(prev_q)} besides {_join_names(names)}?"


def _expand_partial(msg: str, names: Sequence[NameSpan], history: Sequence[Turn]) -> str:
    """Spell out a one-word name ("Dali") as the fuller form the history uses."""
    ctx = conversation_context(history)
    toks = tokenize(msg)
    for span in names:
        full = full_name(span, ctx)
        if full is None:
            continue
        if full.lower().startswith("the ") and span.article:
            full = full[4:]
        t = toks[span.first]
        word_end = t.start + len(strip_possessive(t.text))
        return f"{msg[: t.start]}{full}{msg[word_end:]}"
    return msg
