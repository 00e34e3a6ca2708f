"""Text a reader of an HTML page never sees: hidden by an attribute, by an inline style,
or by a rule of the page's own style sheet. Such text is not the page's, and may carry
instructions meant for a model only, so it is never indexed.

The techniques: no display, no visibility, zero opacity, text of 1 px or less, a
transparent colour, white (or black) text on the same background, and text moved far off
screen (a large negative position or indent) or clipped to nothing. A style sheet's rules
count when their selector is one simple selector (``.name``, ``#name``, ``tag``,
``tag.name``, ``tag#name``), outside any ``@media`` block (a print-only rule hides
nothing on screen).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

_HIDING = re.compile(
    r"display\s*:\s*none"
    r"|visibility\s*:\s*(?:hidden|collapse)"
    r"|opacity\s*:\s*0(?:\.0*)?\s*(?:!important)?\s*(?:;|$)"
    r"|font-size\s*:\s*(?:0(?:\.\d+)?|1(?:\.0*)?)\s*(?:px|pt)?\s*(?:!important)?\s*(?:;|$)"
    r"|font-size\s*:\s*0(?:\.0*)?\s*(?:em|rem|%)\s*(?:;|$)"
    r"|(?<![-\w])color\s*:\s*(?:transparent|rgba\([^)]*,\s*0(?:\.0*)?\s*\))"
    r"|(?:left|top|right|text-indent|margin-left|margin-top)\s*:\s*-\d{3,}(?:\.\d+)?\s*(?:px|em|rem|pt)?"
    r"|clip\s*:\s*rect\(\s*0(?:px)?[\s,]+0(?:px)?[\s,]+0(?:px)?[\s,]+0(?:px)?\s*\)"
    r"|clip-path\s*:\s*inset\(\s*50%",
    re.I,
)
_COLOUR = re.compile(r"(?<![-\w])color\s*:\s*([^;!]+)", re.I)
_BACKGROUND = re.compile(r"background(?:-color)?\s*:\s*([^;!]+)", re.I)
_WHITE = frozenset({"#fff", "#ffffff", "white", "rgb(255,255,255)"})
_BLACK = frozenset({"#000", "#000000", "black", "rgb(0,0,0)"})
_SIMPLE_SELECTOR = re.compile(r"^([a-z][a-z0-9]*)?(?:([.#])([\w-]+))?$", re.I)


def hides(style: str) -> bool:
    """Whether CSS declarations ``style`` make an element's text unseen."""
    if _HIDING.search(style):
        return True
    colour, background = _COLOUR.search(style), _BACKGROUND.search(style)
    if colour is None or background is None:
        return False
    fore, back = (re.sub(r"\s+", "", m.group(1)).lower() for m in (colour, background))
    return any(fore in same and back.split()[0] in same for same in (_WHITE, _BLACK))


def _top_level_rules(css: str) -> list[tuple[str, str]]:
    """The ``(selectors, declarations)`` of ``css``'s rules outside any ``@`` block."""
    rules, depth, start, selector = [], 0, 0, ""
    for i, char in enumerate(css):
        if char == "{":
            if depth == 0:
                selector, start = css[start:i], i + 1
            depth += 1
        elif char == "}" and depth:
            depth -= 1
            if depth == 0:
                if not selector.strip().startswith("@"):
                    rules.append((selector, css[start:i]))
                start = i + 1
    return rules


def _hidden_selectors(soup: Any) -> list[tuple[str | None, str | None, str | None]]:
    """The simple selectors of the page's style sheets whose rules hide, each as
    ``(tag, "." or "#", name)``."""
    css = "\n".join(style.get_text() for style in soup.find_all("style"))
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    found = []
    for selectors, declarations in _top_level_rules(css):
        if not hides(declarations):
            continue
        for selector in selectors.split(","):
            match = _SIMPLE_SELECTOR.match(selector.strip())
            if match is not None and (match[1] or match[3]):
                found.append((match[1], match[2], match[3]))
    return found


def _matches(tag: Any, selector: tuple[str | None, str | None, str | None]) -> bool:
    name, kind, value = selector
    if name is not None and tag.name != name.lower():
        return False
    if kind == ".":
        return value in (tag.get("class") or [])
    if kind == "#":
        return bool(tag.get("id") == value)
    return True


def unseen_test(soup: Any) -> Callable[[Any], bool]:
    """Whether an element of ``soup`` is unseen: ``hidden``, ``aria-hidden="true"``, an
    inline style that hides it, or a hiding rule of the page's style sheets that selects
    it (read before the style sheets are dropped)."""
    selectors = _hidden_selectors(soup)

    def unseen(tag: Any) -> bool:
        if tag.name in ("html", "body"):
            return False
        if tag.has_attr("hidden") or str(tag.get("aria-hidden") or "").lower() == "true":
            return True
        return hides(str(tag.get("style") or "")) or any(_matches(tag, s) for s in selectors)

    return unseen
