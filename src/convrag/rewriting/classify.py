"""Decide whether a message needs retrieval, and whether it needs the conversation.

:func:`classify` labels a message ``no_retrieval`` (chit-chat, or "format that as a table":
nothing new to look up), ``follow_up`` (it cannot be understood without the earlier turns) or
``standalone``. The rewrite node skips retrieval for the first and rewrites the second before
retrieving. The cue patterns here (``WHAT_ABOUT_RE``, ``BARE_WH_RE``, ...) are shared with
:mod:`convrag.rewriting.fragments`, which completes the fragments they match.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from convrag.rewriting.anaphora import anaphors
from convrag.rewriting.history import Turn, conversation_context, full_name
from convrag.text.entities import NameSpan, name_spans
from convrag.text.tokens import clean, content_words, tokenize

__all__ = [
    "BARE_WH_RE",
    "COMPARATIVE_RE",
    "LEAD_CONJ_RE",
    "MORE_RE",
    "WHAT_ABOUT_RE",
    "Classification",
    "classify",
    "is_chit_chat",
    "is_no_retrieval",
    "split_pleasantries",
]

Classification = Literal["standalone", "follow_up", "no_retrieval"]

# Greetings, thanks and acknowledgements: a message made only of these has nothing to look up.
_GREETING_WORDS = (
    r"hi|hello|hey|heya|hiya|yo|howdy|greetings|good\s+(?:morning|afternoon|evening|night|day)"
    r"|thanks?(?:\s+(?:you|a\s+lot|so\s+much|very\s+much|again|a\s+bunch))*|thx|ty|cheers"
    r"|thanks?(?:\s+you)?\s+for\s+(?:that|this|the\s+\w+|your\s+\w+|\w+ing(?:\s+(?:that|this|it))?)"
    r"|ok(?:ay)?|k|cool|great|good|nice|awesome|perfect|excellent|wonderful|fantastic|amazing"
    r"|got\s+it|i\s+see|understood|makes\s+sense|sounds\s+good|all\s+right|alright|sure|yes"
    r"|yeah|yep|no|nope|right|fine|bye|goodbye|see\s+you|see\s+ya|later|wow|lol|haha|hmm+"
    r"|(?:that|this|it)(?:'s|’s|\s+is|\s+was)?\s+(?:(?:very|really|super|so)\s+)?(?:great|"
    r"helpful|useful|all|it|perfect|nice|cool|fine|interesting|good|clear|enough)"
    r"|(?:that|this|it)\s+helps|(?:very|really|super)\s+(?:helpful|useful|interesting|nice|cool)"
    r"|helpful|interesting|much\s+appreciated|(?:i\s+)?appreciate\s+it|good\s+job|well\s+done"
    r"|how\s+are\s+you(?:\s+doing)?|what'?s\s+up|nice\s+to\s+meet\s+you|no\s+problem"
    r"|you'?re\s+welcome|welcome|please|hm|ah|oh|uh|um"
    # Discourse markers that open a new request ("OK thanks. Now, how many ...?").
    r"|now|anyways?|btw|by\s+the\s+way|also|so"
    # Questions about the assistant itself: nothing in the documents answers them.
    r"|who\s+are\s+you|what\s+are\s+you|what\s+(?:can|do)\s+you\s+do"
    r"|what(?:'?s|\s+is)\s+your\s+name|are\s+you\s+(?:an?\s+)?(?:bot|robot|human|person|ai|real)"
    r"|how\s+can\s+you\s+help(?:\s+me)?"
)
_CHITCHAT_PART = rf"(?:{_GREETING_WORDS})(?:\s+(?:there|everyone|all|bot|assistant|buddy|friend))?"
_CHITCHAT_RE = re.compile(rf"^(?:{_CHITCHAT_PART}[\s,.!?;:)(-]*)+$", re.IGNORECASE)
# Pleasantries before the real request ("Thanks! What about BM25?") are set aside for analysis.
_CHITCHAT_PREFIX_RE = re.compile(
    rf"^(?:{_CHITCHAT_PART}[\s,.!;:]+)*{_CHITCHAT_PART}\s*[,.!;:]+\s*", re.IGNORECASE
)
# Requests to reshape the previous answer ("format that as a table", "make it shorter").
_REF_ANSWER = (
    r"(?:that|it|this|those|these|them|the\s+above|above|(?:your|the|this|that)\s+"
    r"(?:last\s+|previous\s+|above\s+|first\s+)?(?:answer|response|reply|output|text|list|"
    r"summary|explanation|result|results|message|paragraph))"
)
_FORMAT_TARGET = (
    r"(?:(?:as|in|into|to|with|using)\s+(?:a\s+|an\s+|the\s+)?(?:(?:markdown|html|json|csv|yaml|"
    r"numbered|bulleted|bullet|short|shorter|simple|simpler|plain|formal|informal|single|"
    r"few|one|two|three|five)\s+)*(?:table|list|bullets?|bullet\s+points|points|json|csv|"
    r"yaml|markdown|html|paragraph|sentences?|words|tweet|email|poem|haiku|summary|code\s+block|"
    r"english|french|german|spanish|italian|portuguese|dutch|chinese|japanese|korean|arabic|"
    r"hindi|russian|[a-z]+ish|plain\s+english|simpler\s+terms|simple\s+terms|layman'?s\s+terms|"
    r"other\s+words|fewer\s+words|\d+\s+\w+)"
    r"|(?:more\s+)?(?:formally|informally|simply|briefly|concisely|clearly|politely))"
)
_ADJ_FORM = (
    r"(?:shorter|longer|simpler|clearer|briefer|more\s+(?:concise|formal|informal|"
    r"readable|succinct|brief)|less\s+(?:technical|formal|verbose|wordy)|concise|"
    r"brief|bold|italic)"
)
# Verbs that only ever reshape text ("summarize it") and verbs that do so only with a target
# format ("put it in a table"; "give me that" alone asks for content).
_REFORMAT_VERBS = (
    r"(?:format|reformat|rewrite|re-write|rephrase|restate|reword|summari[sz]e|shorten|condense"
    r"|simplify|translate|tabulate|paraphrase|redo|convert)"
)
_SHAPE_VERBS = r"(?:turn|put|present|show|give|write|lay\s+out|display|list|make)"
_TARGETS = rf"(?:\s+(?:{_FORMAT_TARGET}|{_ADJ_FORM}|again|please|for\s+me))"
_REFORMAT_RE = re.compile(
    rf"""^(?:(?:ok(?:ay)?|now|great|thanks|please|and|so|then|also)[\s,]+)*
    (?:(?:can|could|would|will)\s+you\s+(?:please\s+)?|please\s+|i\s+(?:want|need|would\s+like)
    \s+(?:you\s+to\s+)?)?
    (?:
      {_REFORMAT_VERBS}(?:\s+(?:me\s+)?{_REF_ANSWER})?{_TARGETS}*
      |{_SHAPE_VERBS}\s+(?:me\s+)?{_REF_ANSWER}{_TARGETS}+
      |{_SHAPE_VERBS}\s+(?:me\s+)?{_REF_ANSWER}\s+(?:a|an)\s+(?:table|list|bullet\s+list)
      |(?:{_FORMAT_TARGET}|{_ADJ_FORM})(?:\s+please)?
      |(?:give\s+me\s+)?(?:a\s+)?(?:tl;?dr|tldr|shorter\s+version|short\s+version|summary\s+of\s+
         {_REF_ANSWER})
      |(?:say|explain)\s+(?:that|it)\s+(?:again|differently|more\s+simply|simpler)
      |eli5|explain\s+(?:it\s+|that\s+)?like\s+i'?m\s+(?:5|five)
    )[\s.!?]*$""",
    re.IGNORECASE | re.VERBOSE,
)
# Cues that a message does or does not depend on the conversation. The rewriting rules reuse
# the fragment patterns (what about X, bare why, leading "and") to complete what they match.
_TOPIC_SWITCH_RE = re.compile(
    r"^(?:(?:ok(?:ay)?|now|next|alright|all\s+right|moving\s+on|switching\s+(?:topics?|gears)|"
    r"new\s+(?:topic|question)|different\s+(?:topic|question)|changing\s+(?:the\s+)?subject|"
    r"on\s+(?:a|another)\s+(?:different|separate|unrelated)\s+(?:note|topic))[\s,.:;!-]+)+",
    re.IGNORECASE,
)
WHAT_ABOUT_RE = re.compile(
    r"^(?:(?:and|but|so|ok(?:ay)?|also|now)[\s,]+)*(?:what|how)\s+(?:about|of)\s+(?P<rest>.+)$",
    re.IGNORECASE,
)
BARE_WH_RE = re.compile(
    r"^(?:(?:and|but|so|ok(?:ay)?|really)[\s,]+)*(?P<wh>why(?:\s+not)?|how(?:\s+so|\s+come)?|when|"
    r"where|who|which\s+one|what\s+for|how\s+(?:much|many|long|often|old))(?:\s+(?:is|was|are|were|"
    r"did|does|do)\s+(?:that|it|this))?[\s?.!]*$",
    re.IGNORECASE,
)
LEAD_CONJ_RE = re.compile(r"^(?:and|but|or|also|plus|so|then)\b[\s,]*", re.IGNORECASE)
MORE_RE = re.compile(
    r"\b(?:tell\s+me\s+more|more\s+(?:details?|info(?:rmation)?|about)|elaborate|expand(?:\s+on)?"
    r"|go\s+on|continue|keep\s+going|explain\s+(?:further|more)|in\s+more\s+detail|"
    r"anything\s+else|what\s+else|any\s+(?:others?|more)|something\s+else|the\s+rest|"
    r"other\s+(?:ones?|examples?|options?|ways?|reasons?|things?))\b",
    re.IGNORECASE,
)
_CUE_RE = re.compile(
    r"\b(?:what|how)\s+about\b|\bwhat\s+else\b|\b(?:tell\s+me\s+)?more\b|\belaborate\b"
    r"|\bexpand\b|\bbesides\b|\bas\s+well\b|\balso\b|\belse\b|\bothers?\b|\banother\b"
    r"|\binstead\b|\bthe\s+same\b|\bsimilar(?:ly)?\b|\bfurther\b|\bcompared?\b|\bthe\s+former\b"
    r"|\bthe\s+latter\b|\bthe\s+first\s+one\b|\bthe\s+second\s+one\b|\btoo\s*[?.!]*$"
    r"|\bagain\b|\bthen\b|\bafter\s+that\b|\bbefore\s+that\b|^\s*(?:and|but|or|so)\b",
    re.IGNORECASE,
)
COMPARATIVE_RE = re.compile(
    r"\b(?:more|less|better|worse|most|least|fewer|bigger|smaller|larger|higher|lower|older|"
    r"younger|cheaper|faster|slower|longer|shorter|best|worst|greater|which\s+(?:one|of\s+them)"
    r"|difference|differ|compare|versus|vs)\b",
    re.IGNORECASE,
)


def classify(message: str, history: Sequence[Turn]) -> Classification:
    """Label ``message`` as ``no_retrieval``, ``follow_up`` or ``standalone``.

    ``no_retrieval``: greetings, thanks and acknowledgements, and requests to reformat the
    previous answer ("format that as a table", "make it shorter") - nothing new to look up.
    ``follow_up``: the message needs the conversation to be understood (pronouns without an
    antecedent in the message, fragments such as "and in 2019?" or "why?", cue phrases such as
    "what about", "tell me more", "any others"). ``standalone``: everything else, always when
    ``history`` is empty, and when the message switches to a newly named subject.
    """
    return _classify(clean(message), history)


def _classify(message: str, history: Sequence[Turn]) -> Classification:
    """:func:`classify` on a whitespace-normalised message."""
    if is_no_retrieval(message):
        return "no_retrieval"
    if not history:
        return "standalone"
    msg = split_pleasantries(message)[1]
    toks = tokenize(msg)
    names = name_spans(toks)
    switched = _TOPIC_SWITCH_RE.match(msg)
    if switched and names and not anaphors(toks):
        return "standalone"
    if anaphors(toks):
        return "follow_up"
    if WHAT_ABOUT_RE.match(msg) or BARE_WH_RE.match(msg) or LEAD_CONJ_RE.match(msg):
        return "follow_up"
    content = content_words(toks)
    if names:
        if _partial_name(names, history):
            return "follow_up"
        if _CUE_RE.search(msg) and not _has_new_subject(names, history):
            return "follow_up"
        return "standalone"
    if _CUE_RE.search(msg) or MORE_RE.search(msg):
        return "follow_up"
    if not content:
        return "follow_up"  # "why?", "any others?", "and then?": a fragment
    if COMPARATIVE_RE.search(msg) and len(content) <= 3:
        return "follow_up"
    return "standalone"


def is_chit_chat(msg: str) -> bool:
    """A greeting, thanks, a goodbye or a question about the assistant, and nothing else:
    it gets a fixed reply, with or without an LLM."""
    return not msg or bool(_CHITCHAT_RE.match(msg))


def is_no_retrieval(msg: str) -> bool:
    """Chit-chat or a request to reshape the previous answer: nothing to look up."""
    if not msg:
        return True
    return bool(_CHITCHAT_RE.match(msg) or _REFORMAT_RE.match(msg))


def split_pleasantries(msg: str) -> tuple[str, str]:
    """Split "Thanks! What about BM25?" into ("Thanks! ", "What about BM25?")."""
    m = _CHITCHAT_PREFIX_RE.match(msg)
    if m and m.end() < len(msg):
        return msg[: m.end()], msg[m.end() :]
    return "", msg


def _partial_name(names: Sequence[NameSpan], history: Sequence[Turn]) -> bool:
    """True when the message names someone by one word that the history spells out in full."""
    ctx = conversation_context(history)
    return any(full_name(span, ctx) for span in names)


def _has_new_subject(names: Sequence[NameSpan], history: Sequence[Turn]) -> bool:
    """Whether the message names something the history never mentioned (a topic switch)."""
    known: set[str] = set()
    for ent in conversation_context(history).entities.values():
        known |= ent.tokens
    return any(not (set(s.key.split()) & known) for s in names)
