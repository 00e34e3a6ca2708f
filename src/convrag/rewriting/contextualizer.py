"""Deterministic, LLM-free query contextualization for conversational retrieval.

When no LLM is configured, this module alone turns a follow-up such as "What about her basic
salary?" into a standalone query ("What is Prasad Chaudhari's basic salary?") that BM25 and
dense retrieval can use without the conversation.

It has three parts, all regex and word-list heuristics so they run in well under a millisecond:

* :func:`classify` decides whether a message needs no retrieval (chit-chat, "format that as a
  table"), depends on the conversation (pronouns without an antecedent, ellipsis, cue phrases)
  or stands alone.
* :func:`contextualize` rewrites a follow-up: personal pronouns become the most salient person
  (or the people listed in the previous answer), "it/this/that" the previous turn's topic, and
  fragments ("and in 2019?", "why?", "what about X?") are mapped onto the previous question.
* :func:`extract_entities` lists the salient entities of a text (proper-noun spans, acronyms,
  amounts, quoted terms).

The rules are general English heuristics, not tuned to any data set. The user's questions
weigh more than the answers (answers can be long and mention many side entities), recent turns
more than old ones, and the first turn (often the dialog topic, or a title such as
"Pinhead (Hellraiser)") is kept as a fallback. Who "he/she" is persists across the
conversation; what "it/that" is moves with each turn. When no referent is credible, the
pronoun is left as it is: a wrong name hurts retrieval more than a vague pronoun.

Everything is cached per text and per history, so a growing conversation re-reads only its
newest turn; a call typically takes a fraction of a millisecond.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal, NamedTuple

__all__ = ["Classification", "Turn", "classify", "contextualize", "extract_entities"]

Classification = Literal["standalone", "follow_up", "no_retrieval"]


@dataclass(frozen=True, slots=True)
class Turn:
    """One earlier exchange: the user's question and the assistant's answer (answer may be "")."""

    question: str
    answer: str


# --------------------------------------------------------------------------------------------
# Word lists
# --------------------------------------------------------------------------------------------


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_WH = _words("what who whom whose which when where why how")
_AUX = _words(
    """is are was were be been being am do does did done have has had having can could will
    would shall should may might must isn't aren't wasn't weren't don't doesn't didn't
    haven't hasn't hadn't can't couldn't won't wouldn't shouldn't"""
)
_PREPS = _words(
    """about above across after against along amid among around as at before behind below
    beneath beside besides between beyond by despite during except for from in inside into
    like near of off on onto out outside over past per since than through throughout till to
    toward towards under underneath unlike until up upon via with within without"""
)
_LOC_PREPS = _words("in at from into near across throughout outside inside within")
_DETS = _words(
    """the a an this that these those his her its their my your our some any each every no
    another other such all both either neither which what whose"""
)
_CONJ = _words("and or but nor so yet also then because if while although though")
_PRONOUNS = _words(
    """i me my mine myself you your yours yourself we us our ours ourselves he him his himself
    she her hers herself it its itself they them their theirs themselves this that these those
    one ones there here someone something anyone anything everyone everything nobody nothing
    somebody anybody everybody"""
)
# Verbs and adverbs that frame a question rather than carry its topic.
_FRAME_WORDS = _words(
    """tell know think explain describe mean say said give list show find get got let please
    make made go went happen happened happens occur occurred more most less least else very
    much many really just only even still ever never not also too again any some lot lots
    kind sort type way thing things something anything interesting important other others
    another different same well now later first last next new old good best better bad
    worse worst like know thanks thank yes no ok okay can could would should see explaining
    clarifying sharing helpful great cool nice sure understand understood got info little bit"""
)
_FUNCTION = (
    _WH
    | _AUX
    | _PREPS
    | _DETS
    | _CONJ
    | _PRONOUNS
    | _words("not no yes to there here as than then so very just")
)
# Capitalised words that start sentences without being names.
_NOT_NAME = (
    _FUNCTION
    | _FRAME_WORDS
    | _words(
        """however although after before during since while when also meanwhile moreover
        furthermore therefore thus hence later earlier eventually finally initially
        originally currently today yesterday tomorrow yes no okay ok hi hello hey thanks
        thank please sorry sure well oh i in on at by for with from according despite
        following along throughout unlike like many most some several few both each every
        one two three four five six seven eight nine ten first second third last next this
        that these those there here it its they their he she his her we our you your as
        because unless until upon whereas whether though once aside apart instead rather
        overall together additionally unfortunately fortunately generally notably especially
        similarly likewise consequently ultimately recently previously soon notable famous
        best worst"""
    )
)
# Common words that can open a name: "New York", "San Diego".
_NAME_PREFIXES = _words(
    "new old great good best first north south east west upper lower little big san los las"
)
# "after that" points to an event of the answer, not to a retrievable thing.
_TEMPORAL_PREPS = _words("after before since following until till like")
_TIME_WORDS = _words(
    """january february march april may june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday spring summer autumn fall winter
    today yesterday tomorrow"""
)
# Lowercase words allowed inside a name: "Battle of Gettysburg", "Ludwig van Beethoven".
_JOINERS = _words("of de da di du del della des van von der den la le y for & the")
# Last words of names that are organisations, places or works, not people.
_ORG_HEADS = _words(
    """university college school academy institute company corporation corp inc ltd llc
    group band clan records studios pictures club party church stadium act award awards
    festival tour games war battle army navy force city county state states river island
    islands street hall house museum theatre theater center centre association league cup
    championship championships open series show album empire kingdom republic bay lake
    mountain mountains park station airport bridge foundation council committee ministry
    department agency bank network channel magazine times post journal news project program
    programme system service services cloud platform"""
)
# Adverbs that may sit between a subject and its verb ("Martin later joined").
_ADVERBS = _words(
    """also later then first eventually never often soon finally initially subsequently
    again still once twice always only quickly briefly ever just really even usually very
    too currently already"""
)
# Irregular past tenses, so that "Gonzalez grew up" reads as subject + verb.
_PAST_VERBS = _words(
    """became began grew went won wrote made took left came met said had got gave saw sang
    led fought ran built bought brought sold told thought knew found kept lost became held
    spent taught chose fell felt rose stood sent broke drove flew forgot hid hit lay put
    quit read rode set shot spoke struck swam threw understood woke wore"""
)
# Role words: a name made only of these ("Prime Minister") is a role, not a referent.
_TITLES = _words(
    """president vice prime minister deputy senator governor king queen prince princess duke
    duchess emperor empress pope general captain chairman chairwoman ceo director secretary
    mayor judge justice chief lord sir lady doctor professor representative ambassador
    commander colonel lieutenant sergeant admiral bishop archbishop cardinal saint mr mrs ms
    dr st"""
)
# Words that open a noun phrase worth reusing as a topic.
_NP_DETS = _words("the a an his her its their this that these those")
# Nouns that refer to the conversation, not to a topic one could retrieve.
_META_NOUNS = _words(
    """article section page text passage answer answers question questions paragraph document
    documents topic subject response reply info information detail details thing things one
    ones part parts rest list example examples"""
)
_NAME_SUFFIXES = _words("jr sr ii iii iv")
_GROUP_HEADS = _words("band group clan team brothers sisters family crew duo trio")
_FEMALE = _words("she her hers herself")
_MALE = _words("he him his himself")
# Words after a number that make it an amount worth extracting ("5 km", "2 million").
_UNITS = _words(
    """% percent per cent km kg g mg m cm mm mi miles mile meters metres feet ft inches lb lbs
    pounds tons tonnes million billion trillion thousand usd eur gbp dollars euros gb mb kb tb
    ghz mhz ms seconds minutes hours days weeks months years kw mw w v"""
)

# --------------------------------------------------------------------------------------------
# Salience weights (general defaults, not fitted to a data set)
# --------------------------------------------------------------------------------------------

_QUESTION_WEIGHT = 2.0
_ANSWER_WEIGHT = 1.0
_DECAY = 0.6  # for what "it/that" points to: the topic moves fast
_SLOW_DECAY = 0.85  # for who "he/she" is: the main character of a conversation persists
_MAX_TURNS = 12
_ANSWER_CHARS = 400
_PERSON_MIN = 0.5  # below this much evidence, leave "he/she" alone rather than guess

# --------------------------------------------------------------------------------------------
# Regular expressions (precompiled: this runs on every turn)
# --------------------------------------------------------------------------------------------

_TOKEN_RE = re.compile(
    r"""
    (?P<num>[$€£¥]\s?\d[\d,]*(?:\.\d+)?|\d[\d,]*(?:\.\d+)?(?:%|[^\W\d_]{1,3}\b)?)
    |(?P<init>(?:[A-Z]\.){2,}|[A-Z]\.(?=\s+[A-Z])|(?:St|Mt|Ft|Mr|Mrs|Ms|Dr|Jr|Sr|Prof|Gen|Gov
        |Sen|Rep|Rev|Lt|Col|Capt|Sgt|Pres|Sec)\.)
    |(?P<word>[^\W_](?:[\w'’&-]*[^\W_])?)
    |(?P<punct>[^\w\s])
    """,
    re.VERBOSE,
)
_POSSESSIVE_RE = re.compile(r"['’]s$", re.IGNORECASE)
_QUOTED_RE = re.compile(r"[\"“]([^\"“”\n]{2,60})[\"”]")
_YEAR_RE = re.compile(r"\b(1[5-9]\d\d|20\d\d)s?\b")
_SPACE_RE = re.compile(r"\s+")
_SPACE_PUNCT_RE = re.compile(r"\s+([?.!,;:])")
_TRAILING_PUNCT_RE = re.compile(r"[\s?.!,;:]+$")

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
)
_CHITCHAT_PART = rf"(?:{_GREETING_WORDS})(?:\s+(?:there|everyone|all|bot|assistant|buddy|friend))?"
_CHITCHAT_RE = re.compile(rf"^(?:{_CHITCHAT_PART}[\s,.!?;:)(-]*)+$", re.IGNORECASE)
# Pleasantries before the real request ("Thanks! What about BM25?") are set aside for analysis.
_CHITCHAT_PREFIX_RE = re.compile(rf"^(?:{_CHITCHAT_PART}\s*[,.!;:]+\s*)+", re.IGNORECASE)
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
_TOPIC_SWITCH_RE = re.compile(
    r"^(?:(?:ok(?:ay)?|now|next|alright|all\s+right|moving\s+on|switching\s+(?:topics?|gears)|"
    r"new\s+(?:topic|question)|different\s+(?:topic|question)|changing\s+(?:the\s+)?subject|"
    r"on\s+(?:a|another)\s+(?:different|separate|unrelated)\s+(?:note|topic))[\s,.:;!-]+)+",
    re.IGNORECASE,
)
# "Going back to primary sources, can it be used ...": the pronoun points inside the message.
_TOPIC_INTRO_RE = re.compile(
    r"^(?:(?:and|so|ok(?:ay)?|now)[\s,]+)?(?:going\s+back\s+to|back\s+to|coming\s+back\s+to|"
    r"returning\s+to|speaking\s+(?:of|about)|talking\s+(?:about|of)|regarding|as\s+(?:for|to)|"
    r"concerning|with\s+regards?\s+to|when\s+it\s+comes\s+to|in\s+terms\s+of|"
    r"on\s+the\s+subject\s+of)"
    r"\s+[^,;:.?!]{2,}[,;:]",
    re.IGNORECASE,
)
_WHAT_ABOUT_RE = re.compile(
    r"^(?:(?:and|but|so|ok(?:ay)?|also|now)[\s,]+)*(?:what|how)\s+(?:about|of)\s+(?P<rest>.+)$",
    re.IGNORECASE,
)
_BARE_WH_RE = re.compile(
    r"^(?:(?:and|but|so|ok(?:ay)?|really)[\s,]+)*(?P<wh>why(?:\s+not)?|how(?:\s+so|\s+come)?|when|"
    r"where|who|which\s+one|what\s+for|how\s+(?:much|many|long|often|old))(?:\s+(?:is|was|are|were|"
    r"did|does|do)\s+(?:that|it|this))?[\s?.!]*$",
    re.IGNORECASE,
)
_DEFINE_RE = re.compile(
    r"^(?:(?:what|who)\s+(?:is|are|was|were)|what(?:'s|’s)|(?:can\s+you\s+|please\s+)?"
    r"(?:tell\s+me\s+about|explain|describe|define))\s+(?:an?\s+|the\s+)?(?P<obj>[^?,;]+)",
    re.IGNORECASE,
)
_PREDICATE_ADJ_RE = re.compile(r"(?:ful|ous|less)$")
_DEMONYM_RE = re.compile(r"(?:an|ese|ish|ic|i)$")
_ELSE_RE = re.compile(r"\b(?:else|others?|another)\b", re.IGNORECASE)
_LEAD_CONJ_RE = re.compile(r"^(?:and|but|or|also|plus|so|then)\b[\s,]*", re.IGNORECASE)
_MORE_RE = re.compile(
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
_COMPARATIVE_RE = re.compile(
    r"\b(?:more|less|better|worse|most|least|fewer|bigger|smaller|larger|higher|lower|older|"
    r"younger|cheaper|faster|slower|longer|shorter|best|worst|greater|which\s+(?:one|of\s+them)"
    r"|difference|differ|compare|versus|vs)\b",
    re.IGNORECASE,
)
_EXPLETIVE_IT_RE = re.compile(
    r"(?:\bit\s+(?:is|was|'s|’s|will\s+be|would\s+be)|\b(?:is|was|isn't|wasn't|would|will)\s+it"
    r"(?:\s+be)?)\s+(?:\w+\s+)?(?:possible|true|necessary|important|better|best|worth|likely|"
    r"unlikely|hard|easy|difficult|ok|okay|safe|normal|common|required|allowed|legal|illegal|"
    r"wise|advisable|bad|good|fine|time|too\s+late)\b"
    r"|\bmake\s+it\s+(?:big|happen|work|through|to)\b"
    r"|\b(?:does|did|will|would)\s+it\s+take\b|\bit\s+takes?\b|\bit\s+seems\b"
    r"|\bit\s+(?:is|was)\s+said\b|\bwhat\s+is\s+it\s+like\b|\bhow\s+is\s+it\s+going\b",
    re.IGNORECASE,
)


# --------------------------------------------------------------------------------------------
# Tokens and entity spans
# --------------------------------------------------------------------------------------------


_BOUNDARY_PUNCT = frozenset('.!?:;"“”()[]•*-–—')


class _Tok(NamedTuple):
    """A token: its text, lowercased text, character span, kind, and whether it opens a sentence."""

    text: str
    low: str
    start: int
    end: int
    kind: str  # "num" | "init" | "word" | "punct"
    sent_start: bool


@lru_cache(maxsize=4096)
def _tokenize(text: str) -> tuple[_Tok, ...]:
    """Split ``text`` into word, number, initial and punctuation tokens with sentence starts."""
    toks: list[_Tok] = []
    boundary = True
    prev_end = 0
    has_newline = "\n" in text
    make = tuple.__new__  # skips the NamedTuple's Python-level __new__: this is the hot loop
    for m in _TOKEN_RE.finditer(text):
        kind = m.lastgroup or "punct"
        s = m.group()
        start, end = m.span()
        if has_newline and "\n" in text[prev_end:start]:
            boundary = True
        toks.append(make(_Tok, (s, s.lower(), start, end, kind, boundary)))
        boundary = kind == "punct" and s in _BOUNDARY_PUNCT
        prev_end = end
    return tuple(toks)


@lru_cache(maxsize=8192)
def _fold(s: str) -> str:
    """Lowercase and strip accents so "Dalí" and "Dali" share a key."""
    norm = unicodedata.normalize("NFKD", s.lower())
    return "".join(c for c in norm if not unicodedata.combining(c))


def _strip_possessive(s: str) -> str:
    return _POSSESSIVE_RE.sub("", s)


def _is_cap(t: _Tok) -> bool:
    return t.kind in ("word", "init") and t.text[0].isupper()


def _is_acronym(s: str) -> bool:
    letters = [c for c in s if c.isalpha()]
    return len(letters) >= 2 and all(c.isupper() for c in letters)


def _has_inner_cap(s: str) -> bool:
    return s[0].islower() and s[1:] != s[1:].lower()


class _Span(NamedTuple):
    """A proper-noun span found in a text."""

    text: str
    key: str
    ntok: int
    first: int  # token index of the first word
    last: int
    article: bool  # preceded by "the"
    prev: str  # lowercased word before the span (after any article)
    acronym: bool
    joined: bool  # contains "of", "for", "&"...
    plural: bool


@lru_cache(maxsize=4096)
def _name_spans(toks: tuple[_Tok, ...]) -> tuple[_Span, ...]:
    """Find runs of capitalised words (allowing "of", "van der", initials) that look like names."""
    spans: list[_Span] = []
    n = len(toks)
    i = 0
    while i < n:
        t = toks[i]
        is_start = _is_cap(t) or (t.kind == "word" and _has_inner_cap(t.text))
        if not is_start or t.text == "I":
            i += 1
            continue
        if (
            t.sent_start
            and t.low in _NOT_NAME
            and not _is_acronym(t.text)
            # "New York", "San Diego": a name that starts with a common word
            and not (t.low in _NAME_PREFIXES and i + 1 < n and _is_cap(toks[i + 1]))
        ):
            i += 1
            continue
        if t.low in _PRONOUNS or (
            t.low in _FUNCTION and t.low not in _JOINERS and not _is_acronym(t.text)
        ):
            i += 1
            continue
        last = i
        j = i + 1
        joined = False
        while j < n:
            u = toks[j]
            if toks[j - 1].text.endswith(("'s", "’s")) and j - 1 >= i:
                break  # "Chaudhari's salary": the possessive ends the name
            if _is_cap(u) and u.low not in _PRONOUNS and u.text != "I":
                last = j
                j += 1
            elif (
                u.kind == "word"
                and u.low in _JOINERS
                and j + 1 < n
                and not (last == i and _is_acronym(t.text))  # "CEO of Netflix": two names
                and (
                    _is_cap(toks[j + 1])
                    or (toks[j + 1].low == "the" and j + 2 < n and _is_cap(toks[j + 2]))
                )
            ):
                joined = True
                j += 1
            else:
                break
        first = i
        if t.low in _JOINERS and last == i:
            i += 1
            continue
        if t.low == "the" and last > i:
            first = i + 1  # mid-sentence "The Little Mermaid": keep the article apart
        words = [toks[k].text for k in range(first, last + 1)]
        words[-1] = _strip_possessive(words[-1])
        text = " ".join(words)
        if len(words) == 1 and t.sent_start and not _is_acronym(t.text):
            nxt = toks[last + 1] if last + 1 < n else None
            if (
                t.low in _TIME_WORDS
                or t.low.endswith("ing")
                # "Sickle cell disease is ...": a capitalised common noun, not a name.
                or (
                    nxt is not None
                    and nxt.kind == "word"
                    and nxt.text[0].islower()
                    and nxt.low not in _FUNCTION
                    and nxt.low not in _ADVERBS
                    and not _verb_like(nxt)
                    and not nxt.low.endswith("s")
                )
            ):
                i = last + 1
                continue
        before = first - 1
        article = before >= 0 and toks[before].low == "the"
        if article:
            before -= 1
        prev = toks[before].low if before >= 0 else ""
        lastw = _fold(words[-1])
        spans.append(
            _Span(
                text=text,
                key=_fold(text),
                ntok=len(words),
                first=first,
                last=last,
                article=article,
                prev=prev,
                acronym=len(words) == 1 and _is_acronym(words[0]),
                joined=joined,
                plural=lastw.endswith("s") and not lastw.endswith(("ss", "us", "is")),
            )
        )
        i = last + 1
    return tuple(spans)


def _amounts(toks: tuple[_Tok, ...]) -> list[str]:
    """Numbers with a currency sign, a percent sign or a unit word, and years."""
    out: list[str] = []
    for k, t in enumerate(toks):
        if t.kind != "num":
            continue
        text = t.text
        if text[0] in "$€£¥" or text.endswith("%"):
            if k + 1 < len(toks) and toks[k + 1].low in _UNITS:
                text = f"{text} {toks[k + 1].text}"
            out.append(text)
        elif k + 1 < len(toks) and toks[k + 1].low in _UNITS:
            out.append(f"{text} {toks[k + 1].text}")
        elif _YEAR_RE.fullmatch(text):
            out.append(text)
    return out


def extract_entities(text: str) -> list[str]:
    """Return the salient entities of ``text`` in order of first appearance.

    Entities are proper-noun spans ("Prasad Chaudhari", "Battle of Gettysburg"), acronyms and
    camel-case product names, amounts with a currency, percent sign or unit ("$120,000",
    "5 km"), years, and quoted terms. Sentence-initial function words ("The", "What") are not
    entities. Duplicates are removed case-insensitively, keeping the first spelling. Used to
    check whether an answer repeats what was already said, so it favours precision and speed.
    """
    toks = _tokenize(text)
    found: list[tuple[int, str]] = []
    for m in _QUOTED_RE.finditer(text):
        inner = m.group(1).strip()
        if inner and len(inner.split()) <= 8:
            found.append((m.start(), inner))
    for span in _name_spans(toks):
        if span.key not in _TIME_WORDS:
            found.append((toks[span.first].start, span.text))
    amount_pos: dict[str, int] = {}
    for t in toks:
        if t.kind == "num":
            amount_pos.setdefault(t.text, t.start)
    for amount in _amounts(toks):
        found.append((amount_pos.get(amount.split()[0], len(text)), amount))
    found.sort(key=lambda p: p[0])
    seen: set[str] = set()
    out: list[str] = []
    for _, ent in found:
        key = _fold(ent)
        if key not in seen:
            seen.add(key)
            out.append(ent)
    return out


# --------------------------------------------------------------------------------------------
# Conversation context: who and what the conversation is about
# --------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Entity:
    """A name seen in the history, with the evidence gathered about what it is."""

    display: str
    key: str
    tokens: frozenset[str]
    score: float = 0.0  # recency-weighted salience, for "it/that"
    person: float = 0.0  # evidence that it is the person "he/she" points to
    group: float = 0.0  # evidence that it is a group or plural thing ("they")
    thing: float = 0.0  # evidence that it is a thing or place ("it")
    article: bool = False
    female: float = 0.0
    male: float = 0.0
    forms: dict[str, int] = field(default_factory=dict)
    turns: set[int] = field(default_factory=set)


def _sentences(toks: tuple[_Tok, ...]) -> list[tuple[int, int]]:
    """Token index ranges of the sentences of a text."""
    bounds: list[tuple[int, int]] = []
    start = 0
    for k, t in enumerate(toks):
        if t.kind == "punct" and t.text in ".!?" and k > start:
            bounds.append((start, k + 1))
            start = k + 1
    if start < len(toks):
        bounds.append((start, len(toks)))
    return bounds


def _is_subject(toks: tuple[_Tok, ...], span: _Span, sent_start: int) -> bool:
    """The span starts its clause and a verb-like word follows ("Martin was hired")."""
    first = span.first - (1 if span.article else 0)
    opens = first == sent_start or (first > 0 and toks[first - 1].text == ",")
    if not opens or span.last + 1 >= len(toks):
        return False
    k = span.last + 1
    if toks[k].low in _ADVERBS and k + 1 < len(toks):
        k += 1
    nxt = toks[k]
    return (
        nxt.low in _AUX
        or nxt.low in _PAST_VERBS
        or (nxt.kind == "word" and nxt.text[0].islower() and nxt.low.endswith("ed"))
    )


class _Mention(NamedTuple):
    """One occurrence of a name in a text, with what its context says about it."""

    text: str
    key: str
    article: bool
    subject: bool
    personish: float  # how likely "he/she" could point to it
    groupish: float  # how likely "they" could point to it
    female: bool  # followed by she/her in its sentence (as the sentence subject)
    male: bool


@lru_cache(maxsize=4096)
def _mentions(text: str, places: bool, question: bool) -> tuple[tuple[_Mention, ...], int]:
    """The name occurrences of ``text`` and the index of the first person-like subject.

    Cached per text so that a growing conversation re-reads only its newest turn. ``places``
    marks the answer to a "where" question (its non-subject names are places); ``question``
    marks user text, whose capitalised first word is often not a name.
    """
    toks = _tokenize(text)
    spans = _name_spans(toks)
    out: list[_Mention] = []
    first_subject = -1
    if not spans:
        return (), first_subject
    sents = _sentences(toks)
    prev_loc_end = -2
    for span in spans:
        if span.key in _TIME_WORDS or span.key in _NOT_NAME:
            continue
        sent = next(((a, b) for a, b in sents if a <= span.first < b), (0, len(toks)))
        subject = _is_subject(toks, span, sent[0])
        lastw = span.key.split()[-1]
        before = span.first - (2 if span.article else 1)
        possessive = toks[span.last].text.endswith(("'s", "’s"))
        quoted = before >= 0 and toks[before].text in "\"“'‘"
        loc = not possessive and (
            span.prev in _LOC_PREPS
            or (places and not subject)
            # "Ridgeland, Mississippi": a name right after a place is a place
            or (before >= 0 and toks[before].text == "," and before - 1 == prev_loc_end)
        )
        if loc:
            prev_loc_end = span.last
        personish = 2.0 if subject else 1.0
        if loc:
            personish *= 0.1
        if span.article or span.joined or (span.ntok > 1 and lastw in _ORG_HEADS):
            personish *= 0.1
        if all(w in _TITLES for w in span.key.split()):
            personish *= 0.1  # "Deputy Prime Minister" is a role, not a referent
        if question and span.first >= 1 and toks[span.first - 1].low in _AUX:
            personish *= 2.0  # "When did Kadyrov become ...": the question's subject
        if span.acronym or quoted:
            personish *= 0.2
        if possessive:
            personish *= 1.5
        if span.ntok > 3:
            personish *= 0.3
        if span.ntok >= 2 and personish >= 1.0:
            personish *= 1.2
        if span.ntok == 1 and not subject and toks[span.first].sent_start and question:
            personish *= 0.2  # "Notable people she ...?": capitalised by position
        female = male = False
        if subject:
            after = {toks[k].low for k in range(span.last + 1, sent[1])}
            if sent[1] < len(toks):
                after.add(toks[sent[1]].low)  # "Hill was born ... . She ..."
            female = bool(after & _FEMALE)
            male = bool(after & _MALE)
            if personish >= 1.0 and first_subject < 0:
                first_subject = len(out)
        groupish = 0.3 + (1.0 if span.plural else 0.0) + (0.5 if span.article else 0.0)
        if lastw in _GROUP_HEADS:
            groupish += 1.0
        out.append(
            _Mention(span.text, span.key, span.article, subject, personish, groupish, female, male)
        )
    return tuple(out), first_subject


class _Context:
    """Salience model over the history: who and what the conversation is about."""

    def __init__(self, history: Sequence[Turn]) -> None:
        self.entities: dict[str, _Entity] = {}
        turns = list(enumerate(history))
        if len(turns) > _MAX_TURNS:
            turns = [turns[0], *turns[-(_MAX_TURNS - 1) :]]
        n = len(history)
        for idx, turn in turns:
            age = n - 1 - idx
            q = turn.question.strip()
            if idx == 0 and _is_title_like(q):
                self._add_title(q)
                continue
            qtoks = _tokenize(q)
            where = bool(qtoks) and qtoks[0].low == "where"
            self._add_text(q, idx, age, _QUESTION_WEIGHT, places=False, question=True)
            subj = self._add_text(
                turn.answer[:_ANSWER_CHARS],
                idx,
                age,
                _ANSWER_WEIGHT,
                places=where,
                question=False,
            )
            # "Where did he grow up?" / "Malpas grew up in ...": the person the user calls
            # "he" is the person the answer is about.
            asked = {qtoks[k].low for k in _anaphors(qtoks)} & (_MALE | _FEMALE)
            if subj is not None and asked and qtoks[0].low not in ("who", "whom"):
                slow = _QUESTION_WEIGHT * _SLOW_DECAY**age
                subj.person += slow
                if asked & _FEMALE:
                    subj.female += slow
                if asked & _MALE:
                    subj.male += slow
        self._lowercase_mentions(turns, n)
        self.ranked: list[_Entity] = sorted(self._merged(), key=lambda e: -e.score)

    def _entity(self, text: str, key: str) -> _Entity:
        ent = self.entities.get(key)
        if ent is None:
            ent = _Entity(text, key, frozenset(key.split()))
            self.entities[key] = ent
        ent.forms[text] = ent.forms.get(text, 0) + 1
        return ent

    def _add_title(self, text: str) -> None:
        core = re.sub(r"\s*\(.*?\)\s*", " ", text).strip() or text
        ent = self._entity(core, _fold(core))
        ent.score += 2.0
        ent.person += 3.0
        ent.thing += 2.0
        ent.group += 2.0
        ent.turns.add(0)

    def _add_text(
        self, text: str, idx: int, age: int, role: float, *, places: bool, question: bool
    ) -> _Entity | None:
        """Count the names in ``text``; return the first person-like sentence subject."""
        if not text:
            return None
        mentions, first_subject = _mentions(text, places, question)
        fast = role * _DECAY**age
        slow = role * _SLOW_DECAY**age
        subject_entity = None
        for i, m in enumerate(mentions):
            ent = self._entity(m.text, m.key)
            ent.turns.add(idx)
            ent.article = ent.article or m.article
            ent.female += slow * m.female
            ent.male += slow * m.male
            ent.score += fast * (1.5 if m.subject else 1.0)
            ent.person += slow * m.personish
            ent.group += slow * m.groupish
            ent.thing += fast * (1.0 if m.personish < 0.5 else 0.3)
            if i == first_subject:
                subject_entity = ent
        return subject_entity

    def _lowercase_mentions(self, turns: Sequence[tuple[int, Turn]], n: int) -> None:
        """Count names typed in lowercase ("when was faith hill born?") as mentions."""
        by_last: dict[str, _Entity] = {}
        for ent in self.entities.values():
            if ent.person > 0.5:
                by_last.setdefault(ent.key.split()[-1], ent)
        if not by_last:
            return
        for idx, turn in turns:
            toks = _tokenize(turn.question)
            slow = _QUESTION_WEIGHT * _SLOW_DECAY ** (n - 1 - idx)
            for k, t in enumerate(toks):
                if t.kind != "word" or not t.text.islower():
                    continue
                found = by_last.get(_fold(_strip_possessive(t.text)))
                if found is None or t.low in _FUNCTION or t.low in _FRAME_WORDS:
                    continue
                found.person += slow
                found.score += slow * 0.5
                found.turns.add(idx)
                p = toks[k - 1] if k > 0 else None
                if (
                    len(found.tokens) == 1
                    and p is not None
                    and p.kind == "word"
                    and p.text.islower()
                    and p.low not in _FUNCTION
                    and p.low not in _FRAME_WORDS
                    and len(p.text) > 2
                ):
                    form = f"{p.text.capitalize()} {next(iter(found.forms))}"
                    found.forms[form] = found.forms.get(form, 0) + 1

    def _merged(self) -> list[_Entity]:
        """Fold one-word mentions ("Dali") into the full name ("Salvador Dali")."""
        ents = sorted(self.entities.values(), key=lambda e: -len(e.tokens))
        merged: list[_Entity] = []
        for ent in ents:
            host = None
            if len(ent.tokens) == 1:
                (tok,) = tuple(ent.tokens)
                # "Dali" -> "Salvador Dali", "Salvador" -> "Salvador Dali"; but "Disney" is
                # not "Disney Renaissance", so only person-like hosts absorb a first name.
                cands = [
                    m
                    for m in merged
                    if len(m.tokens) > 1
                    and (
                        tok == m.key.split()[-1] or (tok == m.key.split()[0] and m.person > m.thing)
                    )
                ]
                if cands:
                    host = max(cands, key=lambda m: m.person + m.score)
            if host is None:
                merged.append(ent)
                continue
            host.score += ent.score
            host.person += ent.person
            host.group += ent.group
            host.thing += ent.thing
            host.female += ent.female
            host.male += ent.male
            host.turns |= ent.turns
            for form, count in ent.forms.items():
                host.forms[form] = host.forms.get(form, 0) + count
        for ent in merged:
            bonus = 1.0 + 0.25 * (len(ent.turns) - 1)  # recurring across turns: a main subject
            ent.person *= bonus
            ent.group *= bonus
        return merged


def _is_title_like(q: str) -> bool:
    """A first "question" that is really a title ("Pinhead (Hellraiser)") names the topic."""
    if not q or q.endswith("?") or len(q.split()) > 8:
        return False
    toks = _tokenize(q)
    if not toks or toks[0].low in _WH or toks[0].low in _AUX:
        return False
    caps = sum(1 for t in toks if _is_cap(t))
    words = sum(1 for t in toks if t.kind == "word")
    return caps >= max(1, words // 2)


# --------------------------------------------------------------------------------------------
# Classification
# --------------------------------------------------------------------------------------------


def _clean(message: str) -> str:
    return _SPACE_RE.sub(" ", message).strip()


def _is_no_retrieval(msg: str) -> bool:
    """Chit-chat or a request to reshape the previous answer: nothing to look up."""
    if not msg:
        return True
    return bool(_CHITCHAT_RE.match(msg) or _REFORMAT_RE.match(msg))


@lru_cache(maxsize=4096)
def _anaphors(toks: tuple[_Tok, ...]) -> tuple[int, ...]:
    """Indices of pronouns that point outside the message.

    A pronoun counts only when no proper noun precedes it in the message ("Did Dali ... his
    parents" is self-contained), and "it"/"that"/"there" only in their referring uses
    ("is it true that", "is there", "the one that" are not anaphora).
    """
    out: list[int] = []
    n = len(toks)
    seen_name = False
    names = _name_spans(toks)
    name_starts = {s.first for s in names}
    intro_end = -1
    if _TOPIC_INTRO_RE.match(_join_toks(toks)):
        intro_end = next((k for k, t in enumerate(toks) if t.text in ",;:"), -1)
    stated = 0  # content words in earlier sentences of the message
    sentence_content = 0
    for k, t in enumerate(toks):
        if k in name_starts or k == intro_end:
            seen_name = True
        if t.sent_start and k > 0:
            stated += sentence_content
            sentence_content = 0
        if t.kind != "word":
            continue
        if t.low not in _FUNCTION and t.low not in _FRAME_WORDS:
            sentence_content += 1
        if stated >= 2 and t.low in ("it", "its", "this", "that", "these", "those"):
            continue  # "Guinea pigs are eaten. Is that true?": the antecedent is right there
        low = t.low
        prev = toks[k - 1].low if k > 0 else ""
        nxt = toks[k + 1].low if k + 1 < n else ""
        if low in ("he", "she", "him", "his", "her", "hers", "they", "them", "their", "theirs"):
            if low == "their" and _bound_possessive(toks, k):
                continue
            if not seen_name:
                out.append(k)
        elif low in ("it", "its"):
            if low == "its" and _bound_possessive(toks, k):
                continue
            if _earlier_clause_np(toks, k):
                continue  # "I updated my card, but it shows errors": "it" is my card
            if not seen_name and not _expletive_it(toks, k):
                out.append(k)
        elif low in ("this", "these", "those"):
            if nxt in (
                "week",
                "year",
                "month",
                "morning",
                "evening",
                "afternoon",
                "weekend",
                "season",
                "summer",
                "winter",
                "spring",
                "autumn",
                "fall",
                "century",
            ):
                continue
            if not seen_name or nxt in ("?", ".", "!", "") or nxt in _AUX:
                out.append(k)
        elif low == "that":
            if prev == "so" or nxt in _PRONOUNS - {"that", "this", "it"}:
                continue  # "so that", "that he ..." (complementiser)
            if (
                nxt in ("?", ".", "!", ",", "")
                or prev in _PREPS
                or prev in _AUX
                or prev in ("do", "does", "did", "explain", "elaborate", "mean", "repeat", "")
                or k == 0
                or (toks[k - 1].sent_start and toks[k - 1].kind == "punct")
                or (nxt not in _FUNCTION and prev in _PREPS | _AUX | {""})
            ):
                out.append(k)
        elif low == "there":
            if nxt in _AUX or prev in _AUX or nxt in ("'s", "’s"):
                continue  # "is there", "there are"
            if prev in _PREPS or nxt in ("?", ".", "!", ",", "") or prev not in _FUNCTION:
                out.append(k)
    return tuple(out)


def _bound_possessive(toks: tuple[_Tok, ...], k: int) -> bool:
    """ "Did burlesque stay true to its roots?": "its" is bound by the question's own subject.

    True when the question opens with an auxiliary or wh-word plus auxiliary followed by a
    common-noun subject whose number matches ("its" singular, "their" plural).
    """
    j = 0
    if j < k and toks[j].low in _WH:
        j += 1
    if j >= k or toks[j].low not in _AUX:
        return False
    j += 1
    if j < k and toks[j].low in ("the", "a", "an", "this", "that", "these", "those", "all"):
        j += 1
    words: list[_Tok] = []
    while j < k and toks[j].kind == "word" and toks[j].low not in _FUNCTION:
        words.append(toks[j])
        j += 1
    if not words or _verb_like(words[-1]) or words[-1].low in _FRAME_WORDS:
        return False
    plural = _is_plural_phrase(words[-1].low)
    return plural if toks[k].low == "their" else not plural


_CLAUSE_LINKS = _words("but and because so when if how although though since while")


def _earlier_clause_np(toks: tuple[_Tok, ...], k: int) -> bool:
    """Whether an earlier clause of the message has a noun phrase that token ``k`` can point to.

    "I updated my credit card, but it keeps failing": a possessive or definite noun phrase
    followed by a clause break (comma or linking word) before the pronoun.
    """
    seen_np = False
    for j in range(k):
        t = toks[j]
        if t.low in ("my", "your", "our", "the") and j + 1 < k and toks[j + 1].kind == "word":
            nxt = toks[j + 1]
            seen_np = seen_np or (nxt.low not in _FUNCTION and nxt.low not in _FRAME_WORDS)
        elif seen_np and (t.text == "," or t.low in _CLAUSE_LINKS):
            return True
    return False


def _join_toks(toks: tuple[_Tok, ...]) -> str:
    return " ".join(t.text for t in toks)


def _expletive_it(toks: tuple[_Tok, ...], k: int) -> bool:
    """True for a dummy "it" ("is it possible to", "make it big"), not a referring one."""
    before = [t.low for t in toks[max(0, k - 2) : k]]
    window = " ".join([*before, *(t.low for t in toks[k : k + 5])])
    at = sum(len(w) + 1 for w in before)  # where this "it" starts in the window
    return any(m.start() <= at < m.end() for m in _EXPLETIVE_IT_RE.finditer(window))


def _content_words(toks: tuple[_Tok, ...]) -> list[_Tok]:
    """Tokens that carry meaning: not function words and not question-framing words."""
    return [
        t
        for t in toks
        if t.kind in ("word", "num", "init")
        and t.low not in _FUNCTION
        and t.low not in _FRAME_WORDS
    ]


def _is_keywords(toks: tuple[_Tok, ...]) -> bool:
    """A short keyword fragment rather than a sentence ("data volume", "backups.")."""
    words = [t for t in toks if t.kind != "punct"]
    return (
        0 < len(words) <= 4
        and not any(t.text == "?" for t in toks)
        and not any(t.low in _WH or t.low in _AUX or t.low in _PRONOUNS for t in words)
        and not any(_verb_like(t) for t in words)
    )


def _split_pleasantries(msg: str) -> tuple[str, str]:
    """Split "Thanks! What about BM25?" into ("Thanks! ", "What about BM25?")."""
    m = _CHITCHAT_PREFIX_RE.match(msg)
    if m and m.end() < len(msg):
        return msg[: m.end()], msg[m.end() :]
    return "", msg


def _classify(message: str, history: Sequence[Turn]) -> Classification:
    """:func:`classify` on a whitespace-normalised message."""
    if _is_no_retrieval(message):
        return "no_retrieval"
    if not history:
        return "standalone"
    msg = _split_pleasantries(message)[1]
    toks = _tokenize(msg)
    names = _name_spans(toks)
    switched = _TOPIC_SWITCH_RE.match(msg)
    if switched and names and not _anaphors(toks):
        return "standalone"
    if _anaphors(toks):
        return "follow_up"
    if _WHAT_ABOUT_RE.match(msg) or _BARE_WH_RE.match(msg) or _LEAD_CONJ_RE.match(msg):
        return "follow_up"
    content = _content_words(toks)
    if names:
        if _partial_name(names, history):
            return "follow_up"
        if _CUE_RE.search(msg) and not _has_new_subject(names, history):
            return "follow_up"
        return "standalone"
    if _CUE_RE.search(msg) or _MORE_RE.search(msg):
        return "follow_up"
    if not content:
        return "follow_up"  # "why?", "any others?", "and then?": a fragment
    if _COMPARATIVE_RE.search(msg) and len(content) <= 3:
        return "follow_up"
    return "standalone"


def _full_name(span: _Span, ctx: _Context) -> str | None:
    """The fuller name the history uses for a one-word mention ("Dali" -> "Salvador Dali")."""
    if span.ntok != 1 or span.acronym:
        return None
    people = sorted(ctx.ranked, key=lambda e: -e.person)[:3]
    for ent in people:
        words = ent.key.split()
        if (
            len(words) > 1
            and ent.person > ent.thing
            # a surname alone is common; a first name alone needs he/she evidence
            and (span.key == words[-1] or (span.key == words[0] and (ent.male or ent.female)))
            and not set(words) & _JOINERS
        ):
            return _display(ent)
    return None


def _partial_name(names: Sequence[_Span], history: Sequence[Turn]) -> bool:
    """True when the message names someone by one word that the history spells out in full."""
    ctx = _context(history)
    return any(_full_name(span, ctx) for span in names)


def _has_new_subject(names: Sequence[_Span], history: Sequence[Turn]) -> bool:
    """Whether the message names something the history never mentioned (a topic switch)."""
    known: set[str] = set()
    for ent in _context(history).entities.values():
        known |= ent.tokens
    return any(not (set(s.key.split()) & known) for s in names)


def classify(message: str, history: Sequence[Turn]) -> Classification:
    """Label ``message`` as ``no_retrieval``, ``follow_up`` or ``standalone``.

    ``no_retrieval``: greetings, thanks and acknowledgements, and requests to reformat the
    previous answer ("format that as a table", "make it shorter") - nothing new to look up.
    ``follow_up``: the message needs the conversation to be understood (pronouns without an
    antecedent in the message, fragments such as "and in 2019?" or "why?", cue phrases such as
    "what about", "tell me more", "any others"). ``standalone``: everything else, always when
    ``history`` is empty, and when the message switches to a newly named subject.
    """
    return _classify(_clean(message), history)


# --------------------------------------------------------------------------------------------
# Rewriting
# --------------------------------------------------------------------------------------------


@lru_cache(maxsize=256)
def _context_cached(history: tuple[Turn, ...]) -> _Context:
    return _Context(history)


def _context(history: Sequence[Turn]) -> _Context:
    """The salience model of ``history``, built once per distinct history."""
    return _context_cached(tuple(history))


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


def _display(ent: _Entity) -> str:
    """The fullest short spelling of an entity ("Salvador Dali" over "Dali")."""
    forms = [kv for kv in ent.forms.items() if len(kv[0].split()) <= 4] or list(ent.forms.items())
    best = max(forms, key=lambda kv: (len(kv[0].split()), kv[1]))[0]
    if ent.article and len(ent.forms) >= 1 and not best.lower().startswith("the "):
        return f"the {best}"
    return best


def _coordinated(text: str, ctx: _Context) -> list[str]:
    """People joined by "and"/commas in ``text`` ("Prasad Chaudhari and John Doe").

    Only short lists of person-like names count: "English, French and German" is not who
    "they" are.
    """
    toks = _tokenize(text)
    spans = _name_spans(toks)
    best: list[_Span] = []
    run: list[_Span] = []
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
    best = [s for s in best if s.key.rstrip(".") not in _NAME_SUFFIXES]  # "Buckley, Jr."
    if not 2 <= len(best) <= 4 or not all(_person_like(s, ctx) for s in best):
        return []
    return [s.text for s in best]


def _people(history: Sequence[Turn], ctx: _Context) -> list[str]:
    """Who "they" are: names listed together in the last exchange ("A and B")."""
    last = history[-1]
    return _coordinated(last.answer[:_ANSWER_CHARS], ctx) or _coordinated(last.question, ctx)


def _fuller(name: str, ctx: _Context) -> str:
    """A one-word name spelled out as the history spelled it ("Prasad" -> "Prasad
    Chaudhari"), when exactly one multi-word person name starts or ends with it."""
    key = _fold(name)
    if " " in key:
        return name
    matches = {
        _display(ent)
        for ent in ctx.entities.values()
        if len(ent.key.split()) > 1
        and key in (ent.key.split()[0], ent.key.split()[-1])
        and ent.person >= ent.thing
    }
    return matches.pop() if len(matches) == 1 else name


def _compared(history: Sequence[Turn], ctx: _Context) -> list[str]:
    """Who "Who earns more?" compares: a list in the last exchange or a turn back, else the
    people the last answer names ("A earns $120,000 and B earns $95,000"), spelled out in
    full when an earlier turn did ("Prasad: $120,000" -> "Prasad Chaudhari")."""
    return [_fuller(n, ctx) for n in _compared_names(history, ctx)]


def _compared_names(history: Sequence[Turn], ctx: _Context) -> list[str]:
    found = _people(history, ctx)
    if found:
        return found
    toks = _tokenize(history[-1].answer[:_ANSWER_CHARS])
    names: list[str] = []
    for span in _name_spans(toks):
        if _person_like(span, ctx) and span.text not in names:
            names.append(span.text)
    if 2 <= len(names) <= 4:
        return names
    if len(history) >= 2:
        return _people(history[:-1], ctx)
    return []


def _person_like(span: _Span, ctx: _Context) -> bool:
    """Whether a name looks like a person (for "he/she", lists of people, comparisons)."""
    if span.article or span.acronym or span.joined or span.prev in _LOC_PREPS:
        return False
    ent = ctx.entities.get(span.key)
    if ent is not None and ent.person > ent.thing:
        return True
    return span.ntok >= 2


def _is_plural_phrase(phrase: str) -> bool:
    """Whether the head noun of a phrase is plural ("the salaries of ..." -> True)."""
    words = phrase.split()
    if not words or "of" in words:
        words = words[: words.index("of")] if "of" in words else words
    head = words[-1].lower() if words else ""
    return head.endswith("s") and not head.endswith(("ss", "us", "is", "'s", "’s"))


def _plural_phrase(question: str) -> str | None:
    """A plural noun phrase of a question ("those conversations") that "they" can point to."""
    toks = _tokenize(question)
    for k, t in enumerate(toks):
        if t.low not in ("the", "these", "those", "some", "all", "many", "most") and k != 0:
            continue
        j = k + 1 if k or t.low in _FUNCTION else k
        words: list[str] = []
        while (
            j < len(toks)
            and toks[j].kind == "word"
            and toks[j].low not in _FUNCTION
            and toks[j].low not in _FRAME_WORDS
            and not _verb_like(toks[j])
            and len(words) < 3
        ):
            words.append(toks[j].text)
            j += 1
        if not words:
            continue
        head = words[-1].lower()
        if head.endswith("s") and not head.endswith(("ss", "us", "is")) and head not in _META_NOUNS:
            det = "the " if t.low in ("the", "these", "those") else ""
            return det + " ".join(words)
    return None


def _join_names(names: Sequence[str]) -> str:
    if len(names) <= 2:
        return " and ".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def _question_topic(question: str, ctx: _Context, referents: _Referents | None) -> str | None:
    """The noun phrase a question is about: a named thing first, else a determiner phrase."""
    toks = _tokenize(question)
    if not toks:
        return None
    names = [
        s
        for s in _name_spans(toks)
        if s.key not in _NOT_NAME and not (s.ntok == 1 and toks[s.first].sent_start)
    ]
    things = [s for s in names if not _person_like(s, ctx)]
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
                and toks[j].low not in _FUNCTION
                and toks[j].low not in _FRAME_WORDS
                and not _verb_like(toks[j])
            ):
                text = f"{text} {toks[j].text}"
                j += 1
        return f"the {text}" if s.article else text
    phrase = _det_phrase(toks, referents)
    if phrase:
        return phrase
    if _is_keywords(toks):
        return _strip_end(question.strip())  # a keyword query is its own topic
    m = _DEFINE_RE.match(question.strip())
    if m:
        # "What is retrieval-augmented generation?": the whole object is the topic.
        obj = _strip_end(m.group("obj"))
        otoks = _tokenize(obj)
        if 1 <= len(otoks) <= 6 and not any(t.low in _PRONOUNS or t.low in _AUX for t in otoks):
            return obj
    for s in names:
        ent = ctx.entities.get(s.key)
        if ent is None or not (ent.male or ent.female):  # no he/she: may be a product
            return f"the {s.text}" if s.article else s.text
    return None


def _verb_like(t: _Tok) -> bool:
    """Auxiliaries, common irregular past tenses and "-ed" forms: words that end a noun phrase."""
    return (
        t.low in _AUX
        or t.low in _PAST_VERBS
        or (t.text[0].islower() and len(t.text) > 4 and t.low.endswith("ed"))
    )


def _det_phrase(toks: tuple[_Tok, ...], referents: _Referents | None) -> str | None:
    """Longest "the/his + words (+ of + words)" phrase, pronoun determiners resolved.

    Stops at verb-like words ("the original members returned") and skips phrases about the
    conversation itself ("this article", "the answer"), which name no retrievable topic.
    """
    best: list[str] = []
    n = len(toks)
    for k, t in enumerate(toks):
        if t.low not in _NP_DETS and not t.text.endswith(("'s", "’s")):
            continue
        words: list[str] = []
        j = k + 1
        run = 0
        while j < n and run < 4:
            u = toks[j]
            if (
                u.kind in ("word", "num", "init")
                and u.low not in _FUNCTION
                and u.low not in _ADVERBS
                and not u.low.endswith("ly")
                and not _verb_like(u)
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
        # "Was the album successful?": a trailing adjective is the predicate, not the noun
        while len(words) > 1 and _PREDICATE_ADJ_RE.search(words[-1].lower()):
            words.pop()
        if not words or all(w.lower() in _FRAME_WORDS for w in words):
            continue
        if words[0].lower() in ("most", "least", "best", "worst", "more", "less", "same"):
            continue  # "the most popular": a superlative, not a thing
        head = words[words.index("of") - 1] if "of" in words else words[-1]
        if head.lower() in _META_NOUNS:
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
            while m >= 0 and _is_cap(toks[m]) and toks[m].low not in _NOT_NAME:
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


def _possessive(name: str) -> str:
    return f"{name}'" if name.endswith("s") and not name.endswith("ss") else f"{name}'s"


def _short_answer(turn: Turn) -> str | None:
    """A short answer that names something ("Streetlife Serenade.") is what "it" points to."""
    ans = turn.answer.strip()
    if not ans or len(ans.split()) > 6:
        return None
    toks = _tokenize(ans)
    names = _name_spans(toks)
    words = sum(1 for t in toks if t.kind != "punct")
    if names:
        s = max(names, key=lambda s: s.ntok)
        if 2 * s.ntok >= words:  # the answer is mostly the name, not a description
            return f"the {s.text}" if s.article else s.text
    return None


def _person_for(ranked: Sequence[_Entity], gender: str) -> str | None:
    """The most salient person, skipping those whose pronouns show the other gender."""
    for ent in sorted(ranked, key=lambda e: -e.person):
        if ent.person < _PERSON_MIN:
            break
        if gender == "f" and ent.male > ent.female:
            continue
        if gender == "m" and ent.female > ent.male:
            continue
        return _display(ent)
    return None


def _referents(history: Sequence[Turn]) -> _Referents:
    """Pick the referents for a follow-up to ``history``.

    The topic comes from the latest exchange that has one (a short naming answer to a "what/
    who" question, else the previous question's named thing or noun phrase); people from
    the salience model over the whole history.
    """
    ctx = _context(history)
    ranked = ctx.ranked
    person = _person_for(ranked, "")
    female = _person_for(ranked, "f")
    male = _person_for(ranked, "m")
    last = history[-1]
    people = _people(history, ctx)
    group = _plural_phrase(last.question)
    if group is None:
        group_ent = max(ranked, key=lambda e: e.group, default=None)
        if group_ent and group_ent.group > _PERSON_MIN:
            group = _display(group_ent)
    refs = _Referents(person, female, male, people, group, None, None)
    topic = None
    for turn in reversed(history[-3:]):
        topic = _short_answer(turn) if turn is last and _asks_for_name(turn.question) else None
        topic = topic or _question_topic(turn.question, ctx, refs)
        if topic:
            break
    refs.topic = topic
    refs.place = _place(last)
    best = max(ranked, key=lambda e: e.person + e.score, default=None)
    refs.main = person or (_display(best) if best else None)
    return refs


def _asks_for_name(question: str) -> bool:
    toks = _tokenize(question)
    return bool(toks) and toks[0].low in ("what", "which", "who", "name")


def _place(turn: Turn) -> str | None:
    """Where "there" points: the first name after "in/at/from/to/near" in the last exchange."""
    for text in (turn.answer[:_ANSWER_CHARS], turn.question):
        toks = _tokenize(text)
        for span in _name_spans(toks):
            if span.prev in ("in", "at", "from", "to", "near"):
                name = f"the {span.text}" if span.article else span.text
                return f"{'at' if span.prev == 'at' else 'in'} {name}"
    return None


def _np_after(toks: tuple[_Tok, ...], k: int) -> int:
    """Index one past the noun phrase that starts at ``k`` (content words only)."""
    j = k
    while j < len(toks) and toks[j].kind in ("word", "num") and toks[j].low not in _FUNCTION:
        j += 1
    return j


def _in_question(toks: tuple[_Tok, ...], k: int) -> bool:
    """Whether token ``k`` is in a sentence that ends with a question mark."""
    for t in toks[k:]:
        if t.text in ".!?":
            return t.text == "?"
    return True


def _her_is_object(toks: tuple[_Tok, ...], k: int) -> bool:
    """ "told her" (object) versus "her salary" (possessive)."""
    if k + 1 >= len(toks):
        return True
    nxt = toks[k + 1]
    return nxt.kind == "punct" or nxt.low in _FUNCTION


def _resolve_pronouns(msg: str, refs: _Referents) -> tuple[str, bool]:
    """Replace the first anaphoric pronoun of each kind with its referent."""
    toks = _tokenize(msg)
    anaphors = _anaphors(toks)
    if not anaphors:
        return msg, False
    out: list[str] = []
    pos = 0
    used: set[str] = set()
    skip_until = -1
    changed = False
    low_msg = _fold(msg)
    for k in anaphors:
        if k < skip_until:
            continue
        t = toks[k]
        low = t.low
        repl: str | None = None
        end = t.end
        if low in ("he", "him", "his", "she", "her", "hers"):
            gender = "f" if low in _FEMALE else "m"
            name = (refs.female if gender == "f" else refs.male) or refs.person
            if name and "person" not in used and _fold(name) not in low_msg:
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
                elif refs.group and _fold(refs.group) not in low_msg:
                    repl = _possessive(refs.group) if low in ("their", "theirs") else refs.group
                if repl:
                    used.add("group")
        elif low in ("it", "its", "this", "that", "these", "those"):
            topic = refs.topic
            is_det = (
                low in ("this", "that", "these", "those")
                and k + 1 < len(toks)
                and toks[k + 1].kind == "word"
                and toks[k + 1].low not in _FUNCTION
            )
            if topic and low in ("it", "its", "this", "that") and _is_plural_phrase(topic):
                topic = None  # "How is it created?" cannot point to "the dialog nodes"
            temporal = k > 0 and toks[k - 1].low in _TEMPORAL_PREPS  # "after that"
            if low in ("this", "that") and t.sent_start and not _in_question(toks, k):
                continue  # "That really surprised me.": a comment on the answer
            if (
                topic
                and "topic" not in used
                and not is_det
                and not temporal
                and (_fold(topic) not in low_msg)
            ):
                used.add("topic")
                repl = _possessive(topic) if low == "its" else topic
        elif low == "there" and refs.place and "place" not in used:
            used.add("place")
            repl = refs.place
        if repl is None:
            continue
        if t.sent_start and repl[:1].islower() and k == 0:
            repl = repl[0].upper() + repl[1:]
        out.append(msg[pos : t.start])
        out.append(repl)
        pos = end
        changed = True
    out.append(msg[pos:])
    return "".join(out), changed


def _strip_end(s: str) -> str:
    return _TRAILING_PUNCT_RE.sub("", s)


def _lower_first(s: str) -> str:
    """Lowercase the first word of a question so it can follow "Why": "Why did ..."."""
    toks = _tokenize(s)
    if toks and toks[0].low in _FUNCTION and not _is_acronym(toks[0].text):
        return s[:1].lower() + s[1:]
    return s


def _previous_question(history: Sequence[Turn], refs: _Referents) -> str | None:
    """The latest real question, its own pronouns resolved against the history."""
    for turn in reversed(history):
        q = _clean(turn.question)
        if q and not _is_no_retrieval(q):
            resolved, _ = _resolve_pronouns(q, refs)
            return resolved
    return None


def _what_about(rest: str, prev_q: str | None, refs: _Referents) -> str | None:
    """Map "What about X?" onto the previous question's frame when the mapping is clear."""
    x = _strip_end(rest)
    if not prev_q or not x:
        return None
    prev = _strip_end(prev_q)
    ptoks = _tokenize(prev)
    xtoks = _tokenize(x)
    if not ptoks or ptoks[0].low not in _WH | _AUX:
        return None
    # A year for a year: "and in 2019?" / "what about 2019?".
    xyear = _YEAR_RE.search(x)
    pyear = _YEAR_RE.search(prev)
    if xyear and pyear and len(_content_words(xtoks)) <= 2:
        return f"{prev[: pyear.start()]}{xyear.group()}{prev[pyear.end() :]}?"
    # A name for a name: "What is the capital of France?" + "what about Germany?".
    xnames = _name_spans(xtoks)
    pnames = _name_spans(ptoks)
    if xnames and pnames and len(xnames[0].text.split()) >= len(_content_words(xtoks)):
        p = pnames[-1]
        a = ptoks[p.first].start
        b = ptoks[p.last].start + len(_strip_possessive(ptoks[p.last].text))
        return f"{prev[:a]}{xnames[0].text}{prev[b:]}?"
    # The same head noun: "What is Prasad's salary?" + "her basic salary" -> swap the phrase.
    content = _content_words(xtoks)
    if content:
        head = content[-1].low
        for k in range(len(ptoks) - 1, 0, -1):
            if ptoks[k].low == head:
                s = k
                while s - 1 >= 1 and (
                    (ptoks[s - 1].kind == "word" and ptoks[s - 1].low not in _FUNCTION)
                    or ptoks[s - 1].low in ("the", "a", "an")
                ):
                    s -= 1
                if s <= 1:
                    break
                return f"{prev[: ptoks[s].start]}{x}{prev[ptoks[k].end :]}?"
    # A new noun phrase for a "what is ..." question: "How old is Obama?" + "his wife".
    if ptoks[0].low in _WH and xtoks[0].low not in _PREPS and not any(map(_verb_like, xtoks)):
        for k in range(1, min(4, len(ptoks))):
            if ptoks[k].low in ("is", "are", "was", "were"):
                if all(t.low in _WH or t.low in _FRAME_WORDS for t in ptoks[1:k]):
                    return f"{prev[: ptoks[k].end]} {x}?"
                break
    return None


def _append_topic(msg: str, topic: str, connector: str) -> str:
    """Append ``topic`` to a message, before its final punctuation ("... about BM25?")."""
    body = _strip_end(msg)
    end = msg[len(body) :].strip()
    if body.lower().endswith((" about", " on", " of", " for", " with")):
        return f"{body} {topic}{end}"
    return f"{body} {connector} {topic}{end}"


def _rewrite(msg: str, history: Sequence[Turn]) -> str:
    """Rewrite a follow-up: map fragments onto the previous question, else resolve pronouns."""
    refs = _referents(history)
    prev_q = _previous_question(history, refs)

    m = _WHAT_ABOUT_RE.match(msg)
    if m:
        rtoks = _tokenize(m.group("rest"))
        if rtoks and (rtoks[0].low in _WH or rtoks[0].low in _AUX):
            # "what about why can't I ...?" wraps a full question: keep just that question.
            resolved, _ = _resolve_pronouns(m.group("rest"), refs)
            return resolved[0].upper() + resolved[1:]
        rest, _ = _resolve_pronouns(m.group("rest"), refs)
        mapped = _what_about(rest, prev_q, refs)
        if mapped:
            return mapped
        resolved, changed = _resolve_pronouns(msg, refs)
        topic = refs.topic
        if changed or not topic or _fold(topic) in _fold(msg) or _name_spans(rtoks):
            return resolved  # "What about Romeo and Juliet?" names its own new subject
        return _append_topic(resolved, topic, "for")

    m = _BARE_WH_RE.match(msg)
    if m and prev_q:
        wh = m.group("wh")
        prev = _strip_end(prev_q)
        ptoks = _tokenize(prev)
        if ptoks and ptoks[0].low in _WH:
            body = prev[ptoks[0].end :].lstrip()
            if len(ptoks) > 1 and ptoks[1].low in ("much", "many", "long", "often", "old"):
                body = prev[ptoks[1].end :].lstrip()
            return f"{wh[0].upper()}{wh[1:]} {body}?"
        if ptoks and ptoks[0].low in _AUX:
            return f"{wh[0].upper()}{wh[1:]} {_lower_first(prev)}?"

    lead = _LEAD_CONJ_RE.match(msg)
    if lead and prev_q:
        rest = msg[lead.end() :]
        rtoks = _tokenize(rest)
        is_fragment = (
            bool(rtoks)
            and (rtoks[0].low in _PREPS or len(_content_words(rtoks)) <= 2)
            and not any(t.low in _AUX for t in rtoks)
        )
        if is_fragment:
            rest, _ = _resolve_pronouns(rest, refs)
            rtoks = _tokenize(rest)
            mapped = _what_about(rest, prev_q, refs)
            if mapped:
                return mapped
            if not _name_spans(rtoks):
                return f"{_strip_end(prev_q)} {_strip_end(rest)}?"

    resolved, changed = _resolve_pronouns(msg, refs)
    toks = _tokenize(resolved)
    low = _fold(resolved)

    people = _compared(history, _context(history)) if _COMPARATIVE_RE.search(msg) else []
    if (
        len(people) >= 2
        and toks
        and toks[0].low in ("who", "whose")
        and _COMPARATIVE_RE.search(msg)
        and len(_content_words(toks)) <= 2
        and not any(_fold(p) in low for p in people)
    ):
        return _append_topic(resolved, _join_names(people), "between")

    if not changed:
        names = _name_spans(toks)
        expanded = _expand_partial(resolved, names, history)
        if expanded != resolved:
            return expanded
        topic = refs.topic or refs.main
        if topic and not names and not _anaphors(toks) and _fold(topic) not in low:
            # Only a bare fragment ("any others?", "tell me more") gets the topic appended:
            # a question with its own content words is better left alone than padded.
            content = [t for t in _content_words(toks) if t.low not in _META_NOUNS]
            if not content and _ELSE_RE.search(msg):
                # "any others?" asks the previous question again, minus its answer.
                besides = _besides(prev_q, history[-1].answer[:_ANSWER_CHARS])
                if besides:
                    return besides
                return _append_topic(resolved, refs.main or topic, "about")
            if not content and _MORE_RE.search(msg):
                return _append_topic(resolved, topic, "about")  # "tell me more"
    return resolved


def _besides(prev_q: str | None, answer: str) -> str | None:
    """ "Which services offer 4K?" + "Netflix and Hulu." + "any others?" -> "... besides ..."."""
    if not prev_q:
        return None
    ptoks = _tokenize(prev_q)
    if not ptoks or ptoks[0].low not in _WH:
        return None
    atoks = _tokenize(answer)
    names = [s.text for s in _name_spans(atoks) if _fold(s.text) not in _fold(prev_q)]
    words = sum(1 for t in atoks if t.kind != "punct")
    if not names or len(names) > 4:
        return None
    # only a short answer, or one that is mainly a list of names, says what to exclude
    if words > 8 and (len(names) < 2 or sum(len(n.split()) for n in names) * 2 < words):
        return None
    return f"{_strip_end(prev_q)} besides {_join_names(names)}?"


def _expand_partial(msg: str, names: Sequence[_Span], history: Sequence[Turn]) -> str:
    """Spell out a one-word name ("Dali") as the fuller form the history uses."""
    ctx = _context(history)
    toks = _tokenize(msg)
    for span in names:
        full = _full_name(span, ctx)
        if full is None:
            continue
        if full.lower().startswith("the ") and span.article:
            full = full[4:]
        t = toks[span.first]
        word_end = t.start + len(_strip_possessive(t.text))
        return f"{msg[: t.start]}{full}{msg[word_end:]}"
    return msg


def contextualize(message: str, history: Sequence[Turn]) -> str:
    """Return a standalone version of ``message`` given the earlier ``history`` (oldest first).

    Standalone messages, messages with no history and no-retrieval messages come back
    unchanged (whitespace-normalised). Follow-ups get their pronouns replaced by the most
    salient referent (personal pronouns by the person or the people just listed, "it/that" by
    the previous topic), and fragments are completed from the previous question. The original
    words are kept except replaced pronouns, the output stays short for BM25 and dense
    retrieval, and it is never empty (an empty message yields the previous question, if any).
    """
    msg = _clean(message)
    if not msg:
        for turn in reversed(history):
            if turn.question.strip():
                return _clean(turn.question)
        return "?"
    if not history or _classify(msg, history) != "follow_up":
        return message.strip()
    prefix, core = _split_pleasantries(msg)
    out = _SPACE_RE.sub(" ", _SPACE_PUNCT_RE.sub(r"\1", _rewrite(core, history))).strip()
    if not out:
        return msg
    return prefix + _as_question(out, capitalize=not prefix)


def _as_question(text: str, *, capitalize: bool) -> str:
    """Normalise a rewritten query: capital first letter, and "?" after a bare question."""
    if capitalize and text[0].islower() and not _has_inner_cap(text.split()[0]):
        text = text[0].upper() + text[1:]
    toks = _tokenize(text)
    single = not any(t.text in ".!?" for t in toks)
    if single and toks and (toks[0].low in _WH or toks[0].low in _AUX) and text[-1].isalnum():
        text += "?"
    return text
