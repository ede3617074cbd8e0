"""Go message extraction for the catalogue (see extract.py for the driver's interface): the kubelet.

extract_file(relpath, text, calls) -> [{"line", "call", "level", "format"}]

The file is tokenized (comments, interpreted "..." and raw `...` strings, runes, identifiers,
punctuation); calls are found by their dotted name as written, a call inside the chain spelled
with its literal argument or "()": klog.InfoS, klog.V(2).InfoS, m.recorder.Eventf,
klog.V(x).InfoS -> "klog.V().InfoS". Each entry of `calls` is
"NAME STYLE LEVEL [arg=N] [typearg=N] [only=GLOB]... [conv=printf]" (whitespace separated);
NAME is a glob (fnmatch), `|` separating alternatives. STYLE:

  printf      the argument arg=N (default 0) is a printf format (klog.Infof, recorder.Eventf
              arg=3): %v %s %d %q %.2f become holes, %% is %.
  structured  klog's structured calls: the message is argument arg=N (InfoS: 0, ErrorS: 1) and the
              rest are key/value pairs; klog prints `"msg" key1=value1 key2=value2`, and ErrorS an
              `err=...` first: the format is `"msg" err={} key1={} ...` (err only with arg=1).
  expr        the argument's text as is (recorder.Event's message, arg=3).
  const       not a call: a string constant or variable whose name matches NAME (`const` and `var`
              blocks, `name = ...`, `name := ...`, a struct field `x.Message = ...`);
              conv=printf makes its conversions holes (a *MessageFmt used with fmt.Sprintf).

LEVEL is error | warn | info | debug; typearg=N takes the level from an event-type argument
instead (v1.EventTypeWarning: warn, v1.EventTypeNormal: info). only= limits the entry to
files matching the glob (fnmatch over the relative path; repeatable).

How an argument is read: string literals; `+` concatenation; fmt.Sprintf(f, ...) (f's
conversions become holes); a name is followed to the string it is given in the same function
before the call (`name := ...`, `name = ...`, then `name += ...` appended; flow-insensitive), else
to a constant or variable of the file. Anything else is a hole. A message with no literal text
is left out.
"""

from __future__ import annotations

import fnmatch
import re
import sys

from segments import HOLE, HOLE_TEXT, MAX_ALTS, holes_at  # noqa: F401
from segments import norm as _norm
from segments import product as _product

LEVELS = ("error", "warn", "info", "debug")
STYLES = ("printf", "structured", "expr", "const")


class Tok:
    __slots__ = ("kind", "val", "line")

    def __init__(self, kind, val, line):
        self.kind = kind  # id | str | chr | num | op
        self.val = val
        self.line = line

    def __repr__(self):  # pragma: no cover - debugging aid
        return f"Tok({self.kind},{self.val!r},{self.line})"


_ESC = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v", "\\": "\\",
        "'": "'", '"': '"'}
_OPS3 = ("<<=", ">>=", "...", "&^=", "&&=")
_OPS2 = (":=", "==", "!=", "<=", ">=", "&&", "||", "<-", "++", "--", "+=", "-=", "*=", "/=", "%=",
         "&=", "|=", "^=", "<<", ">>", "&^")


def _unescape(body: str) -> str:
    out = []
    i = 0
    n = len(body)
    while i < n:
        c = body[i]
        if c != "\\" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        d = body[i + 1]
        if d in _ESC:
            out.append(_ESC[d])
            i += 2
        elif d == "x" and i + 3 < n + 1:
            try:
                out.append(chr(int(body[i + 2:i + 4], 16)))
            except ValueError:
                out.append(body[i:i + 4])
            i += 4
        elif d in "uU":
            k = 4 if d == "u" else 8
            try:
                out.append(chr(int(body[i + 2:i + 2 + k], 16)))
            except ValueError:
                out.append(body[i:i + 2 + k])
            i += 2 + k
        elif d in "01234567":
            try:
                out.append(chr(int(body[i + 1:i + 4], 8)))
            except ValueError:
                out.append(body[i:i + 4])
            i += 4
        else:
            out.append(d)
            i += 2
    return "".join(out)


def tokenize(text: str) -> list[Tok]:
    toks = []
    i = 0
    n = len(text)
    line = 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c in " \t\r\f\v":
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            line += text.count("\n", i, j)
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"' and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            toks.append(Tok("str", _unescape(text[i + 1:min(j, n)]), line))
            i = j + 1
        elif c == "`":
            j = text.find("`", i + 1)
            j = n if j < 0 else j
            toks.append(Tok("str", text[i + 1:j].replace("\r", ""), line))
            line += text.count("\n", i, j)
            i = j + 1
        elif c == "'":
            j = i + 1
            while j < n and text[j] != "'" and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            toks.append(Tok("chr", text[i + 1:j], line))
            i = j + 1
        elif c.isalpha() or c == "_":
            j = i + 1
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            toks.append(Tok("id", text[i:j], line))
            i = j
        elif c.isdigit():
            j = i + 1
            while j < n and (text[j].isalnum() or text[j] in "._"):
                j += 1
            toks.append(Tok("num", text[i:j], line))
            i = j
        else:
            for op in _OPS3 + _OPS2:
                if text.startswith(op, i):
                    toks.append(Tok("op", op, line))
                    i += len(op)
                    break
            else:
                toks.append(Tok("op", c, line))
                i += 1
    return toks


# ---------------------------------------------------------------------------------------------
# texts: tuples of segments (a literal str or HOLE)




_PRINTF = re.compile(r"%%|%[-+# 0]*(?:\*|\d+)?(?:\.(?:\*|\d+))?(?:\[\d+\])?[vTtbcdoOqxXUeEfFgGsp]")


def _printf(text: tuple) -> tuple:
    return holes_at(text, _PRINTF)


def canonical(text: tuple) -> str:
    return "".join("{}" if s is HOLE else s.replace("{", "{{").replace("}", "}}") for s in text)


def has_literal(text: tuple) -> bool:
    return any(s is not HOLE and s.strip() for s in text)


def _dedupe(texts):
    out = []
    for t in texts:
        if t not in out:
            out.append(t)
    return out


# ---------------------------------------------------------------------------------------------
# structure


class File:
    def __init__(self, toks: list[Tok]):
        self.toks = toks
        self.match = {}
        stack = []
        for k, t in enumerate(toks):
            if t.kind == "op" and t.val in "([{":
                stack.append(k)
            elif t.kind == "op" and t.val in ")]}" and stack:
                o = stack.pop()
                self.match[o] = k
                self.match[k] = o
        # function bodies: the `{` after `func` at brace depth 0 .. its `}`
        self.funcs = []
        depth = 0
        for k, t in enumerate(toks):
            if t.kind == "op" and t.val == "{":
                depth += 1
            elif t.kind == "op" and t.val == "}":
                depth -= 1
            elif t.kind == "id" and t.val == "func" and depth == 0:
                j = k + 1
                while j < len(toks) and not (toks[j].kind == "op" and toks[j].val == "{"):
                    if toks[j].kind == "op" and toks[j].val in "([" and j in self.match:
                        j = self.match[j]
                    j += 1
                if j < len(toks) and j in self.match:
                    self.funcs.append((j, self.match[j]))

    def func_of(self, k):
        for a, b in self.funcs:
            if a < k < b:
                return a, b
        return None

    def is_op(self, k, val):
        return 0 <= k < len(self.toks) and self.toks[k].kind == "op" and self.toks[k].val == val

    def call_name(self, k):
        """Dotted name of the call whose `(` is token k, or None."""
        toks = self.toks
        j = k - 1
        if j < 0 or toks[j].kind != "id":
            return None
        parts = [toks[j].val]
        while self.is_op(j - 1, ".") and j - 2 >= 0:
            p = toks[j - 2]
            if p.kind == "id":
                parts.append(".")
                parts.append(p.val)
                j -= 2
            elif self.is_op(j - 2, ")") and (j - 2) in self.match:
                o = self.match[j - 2]
                inner = toks[o + 1:j - 2]
                arg = inner[0].val if len(inner) == 1 and inner[0].kind == "num" else ""
                if o - 1 < 0 or toks[o - 1].kind != "id":
                    return None
                parts.append(".")
                parts.append(f"({arg})")
                parts.append(toks[o - 1].val)
                j = o - 1
            else:
                break
        if j - 1 >= 0 and toks[j - 1].kind == "id" and toks[j - 1].val == "func":
            return None  # a declaration
        return "".join(reversed(parts))

    def args(self, k):
        """Top-level argument token ranges [(a, b)) of the call whose `(` is token k."""
        end = self.match.get(k)
        if end is None:
            return []
        out = []
        a = k + 1
        j = a
        while j < end:
            t = self.toks[j]
            if t.kind == "op" and t.val in "([{" and j in self.match:
                j = self.match[j] + 1
                continue
            if t.kind == "op" and t.val == ",":
                out.append((a, j))
                a = j + 1
            j += 1
        if a < end:
            out.append((a, end))
        return out


class Evaluator:
    def __init__(self, f: File):
        self.f = f
        self.active = set()

    def eval(self, a, b, at) -> list:
        """The texts the expression toks[a:b] can be, read at token `at`."""
        toks = self.f.toks
        operands = []
        s = a
        j = a
        while j < b:
            t = toks[j]
            if t.kind == "op" and t.val in "([{" and j in self.f.match:
                j = self.f.match[j] + 1
                continue
            if t.kind == "op" and t.val == "+":
                operands.append((s, j))
                s = j + 1
            j += 1
        operands.append((s, b))
        alts = [()]
        for x, y in operands:
            alts = _product(alts, self._operand(x, y, at))
        return alts or HOLE_TEXT

    def _operand(self, a, b, at) -> list:
        toks = self.f.toks
        while b - a >= 2 and self.f.is_op(a, "(") and self.f.match.get(a) == b - 1:
            a, b = a + 1, b - 1
        if b - a == 1:
            t = toks[a]
            if t.kind == "str":
                return [_norm((t.val,))]
            if t.kind == "id":
                return self._name(t.val, at)
            return HOLE_TEXT
        if b - a >= 3 and self.f.is_op(b - 1, ")") and self.f.match.get(b - 1, -1) > a:
            o = self.f.match[b - 1]
            name = self.f.call_name(o)
            if name in ("fmt.Sprintf", "fmt.Errorf", "errors.Errorf") and o - 2 >= a - 1:
                args = self.f.args(o)
                if args:
                    return _dedupe(_printf(t) for t in self.eval(args[0][0], args[0][1], at))
            if name in ("fmt.Sprint", "errors.New", "fmt.Sprintln", "string") :
                args = self.f.args(o)
                alts = [()]
                for x, y in args:
                    alts = _product(alts, self.eval(x, y, at))
                return alts
        return HOLE_TEXT

    def _name(self, name, at) -> list:
        key = (name, at)
        if key in self.active:
            return HOLE_TEXT
        self.active.add(key)
        try:
            fn = self.f.func_of(at)
            if fn is not None:
                got = self._resolve(name, fn[0], at)
                if got is not None:
                    return got
            got = self._resolve(name, 0, len(self.f.toks), top_only=True)
            return got if got is not None else HOLE_TEXT
        finally:
            self.active.discard(key)

    def assignments(self, name, lo, hi, top_only=False):
        """(op, value range) of `name = / := / += expr` and `const name [type] = expr` in [lo, hi)."""
        toks = self.f.toks
        out = []
        for k in range(lo, hi):
            t = toks[k]
            if t.kind != "id" or t.val != name or self.f.is_op(k - 1, "."):
                continue
            if top_only and self.f.func_of(k) is not None:
                continue
            j = k + 1
            if j < len(toks) and toks[j].kind == "id" and j + 1 < len(toks) and self.f.is_op(j + 1, "="):
                j += 1  # a typed const/var: name string = "..."
            if j < len(toks) and toks[j].kind == "op" and toks[j].val in ("=", ":=", "+="):
                end = self._expr_end(j + 1)
                out.append((toks[j].val, j + 1, end))
        return out

    def _expr_end(self, a):
        """End of the expression that starts at a: the end of its line, unless a `+` or `(` carries it on."""
        toks = self.f.toks
        n = len(toks)
        j = a
        while j < n:
            t = toks[j]
            if t.kind == "op" and t.val in "([{" and j in self.f.match:
                last = self.f.match[j]
            elif t.kind == "op" and t.val in (")", "}", "]", ";", ","):
                return j
            else:
                last = j
            j = last + 1
            if j >= n or toks[j].line != toks[last].line:
                if toks[last].kind == "op" and toks[last].val in ("+", "(", ","):
                    continue
                return j
        return j

    def _resolve(self, name, lo, hi, top_only=False):
        alts = None
        for op, a, b in self.assignments(name, lo, hi, top_only):
            if op in ("=", ":="):
                new = self.eval(a, b, a)
                alts = _dedupe((alts or []) + new)[:MAX_ALTS] if alts and not top_only else new
            elif alts is not None:
                alts = _product(alts, self.eval(a, b, a))
        if alts is None:
            return None
        lit = [t for t in alts if has_literal(t)]
        return lit or HOLE_TEXT


# ---------------------------------------------------------------------------------------------
# calls


class Call:
    def __init__(self, entry: str):
        words = entry.split()
        if len(words) < 3:
            raise ValueError(f"calls entry {entry!r}: want 'NAME STYLE LEVEL [options]'")
        self.entry = entry
        self.globs = words[0].split("|")
        self.style = words[1]
        self.level = words[2]
        if self.style not in STYLES:
            raise ValueError(f"calls entry {entry!r}: style {self.style!r} not one of {', '.join(STYLES)}")
        if self.level not in LEVELS:
            raise ValueError(f"calls entry {entry!r}: level {self.level!r} not one of {', '.join(LEVELS)}")
        self.arg = 0
        self.typearg = None
        self.only = []
        self.conv = None
        for w in words[3:]:
            k, eq, v = w.partition("=")
            if k == "arg" and eq and v.isdigit():
                self.arg = int(v)
            elif k == "typearg" and eq and v.isdigit():
                self.typearg = int(v)
            elif k == "only" and eq and v:
                self.only.append(v)
            elif k == "conv" and v == "printf":
                self.conv = v
            else:
                raise ValueError(f"calls entry {entry!r}: option {w!r} unknown or malformed")

    def matches(self, name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, g) for g in self.globs)


def _structured(ev: Evaluator, f: File, args, call: Call, at) -> list:
    a, b = args[call.arg]
    msgs = ev.eval(a, b, at)
    keys = []
    rest = args[call.arg + 1:]
    for k in range(0, len(rest) - 1, 2):
        x, y = rest[k]
        keys.append(canonical(t) if (t := ev.eval(x, y, at)[0]) and HOLE not in t else None)
    tail = (" err=",) + (HOLE,) if call.arg == 1 else ()
    out = []
    for m in msgs:
        if not has_literal(m):
            continue
        segs = ('"',) + m + ('"',) + tail
        for key in keys:
            segs += (f" {key}=",) if key else (" ", HOLE, "=")
            segs += (HOLE,)
        out.append(_norm(segs))
    return out


def extract_file(relpath: str, text: str, calls: list[str]) -> list[dict]:
    specs = [c for c in (Call(x) for x in calls)
             if not c.only or any(fnmatch.fnmatchcase(relpath, g) for g in c.only)]
    f = File(tokenize(text))
    ev = Evaluator(f)
    toks = f.toks
    out = []
    seen = set()

    def emit(line, name, level, texts):
        for t in texts:
            if not has_literal(t):
                continue
            fmt = canonical(t)
            if (line, name, fmt) in seen:
                continue
            seen.add((line, name, fmt))
            out.append({"line": line, "call": name, "level": level, "format": fmt})

    for k, t in enumerate(toks):
        if t.kind == "op" and t.val == "(":
            name = f.call_name(k)
            if name is None:
                continue
            for c in specs:
                if c.style == "const" or not c.matches(name):
                    continue
                args = f.args(k)
                if c.arg >= len(args):
                    break
                level = c.level
                if c.typearg is not None and c.typearg < len(args):
                    x, y = args[c.typearg]
                    typ = "".join(tk.val for tk in toks[x:y])
                    level = "warn" if "Warning" in typ else "info" if "Normal" in typ else level
                if c.style == "structured":
                    texts = _structured(ev, f, args, c, k)
                else:
                    a, b = args[c.arg]
                    texts = ev.eval(a, b, k)
                    if c.style == "printf":
                        texts = _dedupe(_printf(x) for x in texts)
                emit(t.line, name, level, texts)
                break
        elif t.kind == "id":
            consts = [c for c in specs if c.style == "const"]
            if not consts:
                continue
            name = t.val
            j = k
            while f.is_op(j - 1, ".") and j - 2 >= 0 and toks[j - 2].kind == "id":
                name = toks[j - 2].val + "." + name
                j -= 2
            if f.is_op(k + 1, "."):
                continue  # not the last part of a selector
            nxt = k + 1
            if nxt < len(toks) and toks[nxt].kind == "id" and f.is_op(nxt + 1, "="):
                nxt += 1
            if not (nxt < len(toks) and toks[nxt].kind == "op" and toks[nxt].val in ("=", ":=")):
                continue
            for c in consts:
                if c.matches(name):
                    end = ev._expr_end(nxt + 1)
                    texts = ev.eval(nxt + 1, end, nxt + 1)
                    if c.conv == "printf":
                        texts = _dedupe(_printf(x) for x in texts)
                    emit(t.line, name, c.level, texts)
                    break
    out.sort(key=lambda e: (e["line"], e["call"], e["format"]))
    return out


if __name__ == "__main__":  # pragma: no cover - a debugging aid: python3 lang_go.py FILE CALL...
    src = open(sys.argv[1], encoding="utf-8", errors="replace").read()
    for e in extract_file(sys.argv[1], src, sys.argv[2:]):
        print(e)
