"""What the format readers share: plain typography."""

from __future__ import annotations

from convrag.documents.blocks import plain_typography


def test_ligatures_odd_spaces_and_soft_hyphens_become_the_characters_they_show() -> None:
    assert plain_typography("ﬁles ﬂow ﬀ ﬃ ﬄ ﬅ ﬆ") == "files flow ff ffi ffl st st"
    assert plain_typography("10\u00a0km\u2009at\u202fnoon\u2003x") == "10 km at noon x"
    assert plain_typography("Ex\u00adample e\u2011mail") == "Example e-mail"


def test_characters_that_mean_something_of_their_own_are_left_as_they_are() -> None:
    """Full NFKC would write these as "m2", "...", "ABC 1", "H" and "(1)"."""
    text = "m² … ＡＢＣ　１ ℌ ⑴ café é ½ ™"
    assert plain_typography(text) == text
