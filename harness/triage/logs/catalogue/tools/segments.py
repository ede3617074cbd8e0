"""Texts as the language readers (lang_py.py, lang_go.py) model them: a tuple of segments, each a
literal str or HOLE (a value the program fills in), with at most MAX_ALTS alternatives per
expression. Shared so the readers agree on one model."""

from __future__ import annotations

import re

MAX_ALTS = 16
HOLE = None  # a segment that is a hole; literal segments are str
HOLE_TEXT = [(HOLE,)]


def norm(segs) -> tuple:
    """Adjacent literals joined, empty ones dropped."""
    out = []
    for s in segs:
        if s is HOLE:
            out.append(HOLE)
        elif s:
            if out and out[-1] is not HOLE:
                out[-1] = out[-1] + s
            else:
                out.append(s)
    return tuple(out)


def product(a: list, b: list) -> list:
    """Every alternative of a followed by every alternative of b, at most MAX_ALTS."""
    out = []
    for x in a:
        for y in b:
            t = norm(x + y)
            if t not in out:
                out.append(t)
            if len(out) >= MAX_ALTS:
                return out
    return out


def holes_at(text: tuple, directive: re.Pattern, escape: str = "%%") -> tuple:
    """The text with each match of a format directive a hole; a match equal to `escape` ('%%',
    string.Template's '$$') stays its one literal character."""
    out = []
    for s in text:
        if s is HOLE:
            out.append(HOLE)
            continue
        pos = 0
        for m in directive.finditer(s):
            out.append(s[pos:m.start()])
            out.append(escape[0] if m.group(0) == escape else HOLE)
            pos = m.end()
        out.append(s[pos:])
    return norm(out)
