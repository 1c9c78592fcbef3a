"""E-mail text as the thread shows it: plain text, HTML reduced to text, quoted history folded.

HTML is never rendered. ``nh3`` (the Ammonia sanitiser) first reduces it to
a few block tags with no attributes, dropping scripts, styles and their
content; that well-formed remainder is then walked once to text, with a
``> `` before each line of a ``<blockquote>``. The page shows the result as
text (escaped by the template), so nothing a sender wrote becomes markup.

``split_quoted`` separates what a person wrote from the history their mail
client quoted below it (lines starting ``>``, and the ``On ... wrote:``
line before them), so the thread can fold that part.
"""

from __future__ import annotations

import re
import unicodedata
from html.parser import HTMLParser

import nh3

TEXT_MAX = 100_000  # characters kept of one message's text; the rest is cut with a note
BLOCKS = frozenset({"p", "div", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "hr", "table", "ul", "ol"})
KEPT_TAGS = BLOCKS | {"br", "blockquote"}
DROPPED_WITH_CONTENT = {"script", "style", "head", "title", "template", "noscript"}
_BLANK_RUNS = re.compile(r"\n{3,}")
_ATTRIBUTION = re.compile(
    r"^\s*(On .{1,200} wrote:|.{1,200}(schrieb|a écrit|escribió|написал)\s*.{0,80}:|"
    r"-+\s*Original Message\s*-+|.{0,80}(のメッセージ|写道)[:：]?)\s*$",
    re.IGNORECASE,
)


class _ToText(HTMLParser):
    """Sanitised HTML to text: block ends become line breaks, a blockquote's lines get ``> ``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lines: list[str] = [""]
        self.depth = 0

    def _break(self) -> None:
        self.lines.append("")

    def handle_starttag(self, tag, attrs):
        if tag == "blockquote":
            self._break()
            self.depth += 1
        elif tag in BLOCKS or tag == "br":
            self._break()

    def handle_endtag(self, tag):
        if tag == "blockquote":
            self.depth = max(0, self.depth - 1)
            self._break()
        elif tag in BLOCKS:
            self._break()

    def handle_data(self, data):
        for index, piece in enumerate(data.split("\n")):
            if index:
                self._break()
            if not self.lines[-1] and self.depth:
                self.lines[-1] = "> " * self.depth
            self.lines[-1] += " ".join(piece.split()) if piece.strip() else ""

    def text(self) -> str:
        return "\n".join(line.rstrip() for line in self.lines)


def html_to_text(html: str) -> str:
    """The text of an HTML e-mail body, through the sanitiser first; never HTML."""
    cleaned = nh3.clean(
        html, tags=set(KEPT_TAGS), attributes={}, clean_content_tags=DROPPED_WITH_CONTENT, strip_comments=True
    )
    parser = _ToText()
    parser.feed(cleaned)
    parser.close()
    return parser.text()


def clean(text: str) -> str:
    """``text`` with normalised line breaks, no control or bidi-override characters but tab and line break,
    runs of blank lines shortened, cut at ``TEXT_MAX``."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    kept = "".join(char for char in text if char in "\n\t" or unicodedata.category(char) not in ("Cc", "Cf", "Cs"))
    kept = _BLANK_RUNS.sub("\n\n", kept).strip("\n")
    if len(kept) > TEXT_MAX:
        kept = kept[:TEXT_MAX] + "\n[…]"
    return kept


def split_quoted(text: str) -> tuple[str, str]:
    """``(what was written, the quoted history below it)``: the history starts at an ``On ... wrote:`` line
    followed by quoted lines, or at the first line of the last run of ``>`` lines; empty when none."""
    lines = text.split("\n")
    start = len(lines)
    while start > 0 and (lines[start - 1].startswith(">") or not lines[start - 1].strip()):
        start -= 1
    if start == len(lines) or not any(line.startswith(">") for line in lines[start:]):
        return text, ""
    if start > 0 and _ATTRIBUTION.match(lines[start - 1]):
        start -= 1
    written = "\n".join(lines[:start]).rstrip()
    return (written, "\n".join(lines[start:]).strip("\n")) if written else (text, "")
