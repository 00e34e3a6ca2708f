"""The look of a line of text that starts a list item or a table row: the PDF reader and
the chunker keep such a line on its own (:mod:`convrag.documents`), and an extractive
answer quotes a list item by item (:mod:`convrag.text.units`)."""

from __future__ import annotations

import re

LIST_ITEM = re.compile(r"^(?:[-*•◦▪·–]\s|\(?\d{1,3}[.)]\s|\(?[a-z][.)]\s|\|)")
"""A line that starts a list item or a table row."""
