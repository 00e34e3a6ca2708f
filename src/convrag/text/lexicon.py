"""Word lists shared by entity extraction, classification and rewriting.

Closed-class English words (wh-words, auxiliaries, prepositions, determiners, pronouns) and a
few small open lists (titles, organisation heads, units, irregular past tenses). They are what
tells a name from a capitalised sentence opener, a referring pronoun from question framing, and
a topic word from filler. General English, not tuned to any data set; every entry is lowercase
and every list a frozenset, because the lists are consulted for each token of every turn.
"""

from __future__ import annotations

import re


def _words(text: str) -> frozenset[str]:
    """A word list from whitespace-separated words, as a frozenset for constant-time lookups."""
    return frozenset(text.split())


WH = _words("what who whom whose which when where why how")
AUX = _words(
    """is are was were be been being am do does did done have has had having can could will
    would shall should may might must isn't aren't wasn't weren't don't doesn't didn't
    haven't hasn't hadn't can't couldn't won't wouldn't shouldn't"""
)
PREPS = _words(
    """about above across after against along amid among around as at before behind below
    beneath beside besides between beyond by despite during except for from in inside into
    like near of off on onto out outside over past per since than through throughout till to
    toward towards under underneath unlike until up upon via with within without"""
)
# Prepositions after which a name is a place ("born in Raleigh").
LOC_PREPS = _words("in at from into near across throughout outside inside within")
DETS = _words(
    """the a an this that these those his her its their my your our some any each every no
    another other such all both either neither which what whose"""
)
CONJ = _words("and or but nor so yet also then because if while although though")
PRONOUNS = _words(
    """i me my mine myself you your yours yourself we us our ours ourselves he him his himself
    she her hers herself it its itself they them their theirs themselves this that these those
    one ones there here someone something anyone anything everyone everything nobody nothing
    somebody anybody everybody"""
)
# Verbs and adverbs that frame a question rather than carry its topic.
FRAME_WORDS = _words(
    """tell know think explain describe mean say said give list show find get got let please
    make made go went happen happened happens occur occurred more most less least else very
    much many really just only even still ever never not also too again any some lot lots
    kind sort type way thing things something anything interesting important other others
    another different same well now later first last next new old good best better bad
    worse worst like know thanks thank yes no ok okay can could would should see explaining
    clarifying sharing helpful great cool nice sure understand understood got info little bit"""
)
# Words that carry grammar, not a topic.
FUNCTION_WORDS = (
    WH
    | AUX
    | PREPS
    | DETS
    | CONJ
    | PRONOUNS
    | _words("not no yes to there here as than then so very just")
)
NOT_SUBJECT = FUNCTION_WORDS | FRAME_WORDS
"""Words of a question that are not what it is about ("how", "could", "tell", "happen")."""

_WORD = re.compile(r"\w+(?:'\w+)*")  # "can't" and "Chaudhari's" stay one word


def subject_words(query: str) -> str:
    """``query`` without the words that are not what it is about (:data:`NOT_SUBJECT`),
    or ``query`` itself when nothing else is left ("What is it?")."""
    kept = [w for w in _WORD.findall(query) if w.lower() not in NOT_SUBJECT]
    return " ".join(kept) if kept else query


# Capitalised words that start sentences without being names.
NOT_NAME = (
    FUNCTION_WORDS
    | FRAME_WORDS
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
NAME_PREFIXES = _words(
    "new old great good best first north south east west upper lower little big san los las"
)
# "after that" points to an event of the answer, not to a retrievable thing.
TEMPORAL_PREPS = _words("after before since following until till like")
# Adjectives that follow their noun ("the plans available"): never a phrase's head.
POSTNOMINAL = _words("available possible applicable accessible eligible responsible")
# Months, days and seasons: capitalised, but not entities.
TIME_WORDS = _words(
    """january february march april may june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday mondays tuesdays wednesdays
    thursdays fridays saturdays sundays spring summer autumn fall winter
    today yesterday tomorrow"""
)
# Words that name a time, for telling two times apart from a time and a place.
TIME_NOUNS = TIME_WORDS | _words(
    "week weeks weekend weekends weekday weekdays morning mornings afternoon afternoons "
    "evening evenings night nights holiday holidays"
)
# Lowercase words allowed inside a name: "Battle of Gettysburg", "Ludwig van Beethoven".
JOINERS = _words("of de da di du del della des van von der den la le y for & the")
# Last words of names that are organisations, places or works, not people.
ORG_HEADS = _words(
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
ADVERBS = _words(
    """also later then first eventually never often soon finally initially subsequently
    again still once twice always only quickly briefly ever just really even usually very
    too currently already"""
)
# Irregular past tenses, so that "Gonzalez grew up" reads as subject + verb.
PAST_VERBS = _words(
    """became began grew went won wrote made took left came met said had got gave saw sang
    led fought ran built bought brought sold told thought knew found kept lost became held
    spent taught chose fell felt rose stood sent broke drove flew forgot hid hit lay put
    quit read rode set shot spoke struck swam threw understood woke wore"""
)
# Role words: a name made only of these ("Prime Minister") is a role, not a referent.
TITLES = _words(
    """president vice prime minister deputy senator governor king queen prince princess duke
    duchess emperor empress pope general captain chairman chairwoman ceo director secretary
    mayor judge justice chief lord sir lady doctor professor representative ambassador
    commander colonel lieutenant sergeant admiral bishop archbishop cardinal saint mr mrs ms
    dr st"""
)
# Words that open a noun phrase worth reusing as a topic.
NP_DETS = _words("the a an his her its their this that these those")
# Nouns that refer to the conversation, not to a topic one could retrieve.
META_NOUNS = _words(
    """article section page text passage answer answers question questions paragraph document
    documents topic subject response reply info information detail details thing things one
    ones part parts rest list example examples"""
)
# Suffixes that follow a name after a comma ("Buckley, Jr."): not a second name.
NAME_SUFFIXES = _words("jr sr ii iii iv")
# Last words of names of groups ("they"), not of people ("he/she").
GROUP_HEADS = _words("band group clan team brothers sisters family crew duo trio")
# Pronouns that show whom "she" or "he" refers to.
FEMALE = _words("she her hers herself")
MALE = _words("he him his himself")
# Words after a number that make it an amount worth extracting ("5 km", "2 million").
UNITS = _words(
    """% percent per cent km kg g mg m cm mm mi miles mile meters metres feet ft inches lb lbs
    pounds tons tonnes million billion trillion thousand usd eur gbp dollars euros gb mb kb tb
    ghz mhz ms seconds minutes hours days weeks months years kw mw w v"""
)
# Words that open a new clause: "I updated my card, but it fails" links "it" to the card.
CLAUSE_LINKS = _words("but and because so when if how although though since while")
LY_ADJECTIVES = _words(
    "daily weekly monthly quarterly yearly hourly nightly early only friendly elderly"
)
"""Words in "-ly" that are adjectives after a determiner ("the daily meal allowance"), where
other "-ly" words are adverbs that end a noun phrase."""
