"""C / C++ message extraction for the catalogue (see extract.py for the driver's interface).

extract_file(relpath, text, calls) -> [{"line", "call", "level", "format"}]

Each entry of `calls` names one call (function or macro) whose arguments make a message, and
how to read them: "NAME STYLE LEVEL [arg=N] [nargs=N] [pconv=LETTERS] [only=GLOB]... [member] [prefix=TEXT]" (whitespace separated; prefix= takes
the rest of the entry, spaces included). NAME is matched token by token, so "fmt::format" and
"LOG(ERROR)" work; a NAME ending in ")" also matches further arguments ("LOG(WARNING)" matches
LOG(WARNING, rank) and LOG_FIRST_N(WARNING) matches LOG_FIRST_N(WARNING, 1)). STYLE:

  printf     the first argument that is a string literal (or arg=N) is a printf format:
             %d %s %zu %.3f %m %pJ ... become holes; the other arguments are the values.
  fmt        the same, in fmt/std::format syntax: {} {0} {:>8} become holes, {{ }} literal.
  str        every argument from arg=N (default 0) is printed one after the other
             (c10::str, MakeString, TORCH_CHECK's message after the condition (arg=1)):
             a literal is text, anything else a hole.
  stream     NAME << a << b ...;  (glog LOG(ERROR), std::cerr): operands as in str.
  returns    the string literals NAME's definition returns (ncclGetErrorString): one format each.
  assigns    each statement `NAME = expr;` or `NAME += expr;` is one format (str semantics): a
             message a switch picks into a variable that is printed later as a line of its own
             (torch's getNcclErrorDetailStr `interpret = "ncclRemoteError: ..."`); use only=.
  helptopics not a call: a show_help text file (Open MPI's help-*.txt): each [topic] section is
             one format; call is "show_help:<topic>".
  builder    not extracted on its own: when an argument of another call is NAME(...), it is
             expanded in place with str semantics (MakeString, GLOO_ERROR_MSG); "builder-fmt"
             and "builder-printf" likewise in fmt / printf semantics.

LEVEL is error | warn | info | debug (builders: "-"). member: also obj.NAME(...) / obj->NAME(...)
(a method that raises or logs its argument: Gloo's pair_->signalExceptionExternal(msg)). nargs= keeps only N arguments from arg=
(an exception whose other arguments are not printed as given: NCCLException(api, msg, result)).
pconv= lists the letters that may follow
a %p conversion to make one (Slurm: pconv=AJsS for %pA %pJ %ps %pS). only= limits the call to
files matching the glob (fnmatch; repeatable): for a generic name that prints a message only in
some files (snprintf into the buffer a signal handler writes out). prefix= is text printed before the
format (a macro such as NCCL's INFO_LOC that prepends "%s:%d (%s) "), in the call's own style.

Whatever an argument is that the source does not spell out (a variable, a function result) is
a hole; a local variable assigned a literal or a builder expression earlier in the same file is
followed (name = expr; name += expr; abseil's StrAppend(&name, a, b)). c10::str, fmt::format, std::string(...), std::to_string
are always known. A call whose message has no literal text at all is not a format and is left
out.
"""

from __future__ import annotations

import fnmatch
import re

# ---------------------------------------------------------------------------------------------
# Tokens


class Tok:
    __slots__ = ("kind", "val", "line")

    def __init__(self, kind: str, val: str, line: int):
        self.kind = kind  # id | str | chr | num | op
        self.val = val
        self.line = line

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Tok({self.kind},{self.val!r},{self.line})"


_SIMPLE_ESC = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "a": "\a", "b": "\b", "f": "\f",
               "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?", "e": "\x1b"}

_PUNCT3 = ("<<=", ">>=", "...", "->*", "<=>")
_PUNCT2 = ("::", "->", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "++", "--", "+=", "-=",
           "*=", "/=", "%=", "&=", "|=", "^=", "##", ".*")


def _decode_escapes(body: str) -> str:
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
        if d == "x":
            j = i + 2
            while j < n and body[j] in "0123456789abcdefABCDEF":
                j += 1
            try:
                out.append(chr(int(body[i + 2:j], 16)) if j > i + 2 else "x")
            except (ValueError, OverflowError):
                out.append("?")
            i = j
        elif d in "01234567":
            j = i + 1
            while j < n and j < i + 4 and body[j] in "01234567":
                j += 1
            out.append(chr(int(body[i + 1:j], 8)))
            i = j
        elif d in "uU":
            width = 4 if d == "u" else 8
            hexs = body[i + 2:i + 2 + width]
            try:
                out.append(chr(int(hexs, 16)))
            except (ValueError, OverflowError):
                out.append("?")
            i += 2 + width
        else:
            out.append(_SIMPLE_ESC.get(d, d))
            i += 2
    return "".join(out)


def tokenize(text: str) -> list[Tok]:
    """C/C++ tokens with their line numbers; comments dropped, line continuations joined,
    string literals decoded (raw strings included). Never raises on odd input."""
    toks: list[Tok] = []
    i = 0
    n = len(text)
    line = 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
            continue
        if c == "\\" and i + 1 < n and text[i + 1] in "\r\n":
            i += 1
            continue
        if c in " \t\r\f\v":
            i += 1
            continue
        if c == "/" and i + 1 < n and text[i + 1] == "/":
            # a line comment ends at an unescaped newline
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    line += 1
                    i += 2
                    continue
                i += 1
            continue
        if c == "/" and i + 1 < n and text[i + 1] == "*":
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            line += text.count("\n", i, j)
            i = j
            continue
        # identifiers, with the string prefixes L u U u8 R LR uR u8R UR
        if c.isalpha() or c == "_" or ord(c) > 127:
            j = i + 1
            while j < n and (text[j].isalnum() or text[j] == "_" or ord(text[j]) > 127):
                j += 1
            word = text[i:j]
            if j < n and text[j] == '"' and word in ("R", "LR", "uR", "UR", "u8R"):
                m = re.compile(r'"([^()\\ \t\n]{0,16})\(').match(text, j)
                if m:
                    end_mark = ")" + m.group(1) + '"'
                    k = text.find(end_mark, m.end())
                    k = n if k < 0 else k
                    toks.append(Tok("str", text[m.end():k], line))
                    line += text.count("\n", i, k)
                    i = k + len(end_mark)
                    continue
            if j < n and text[j] in "\"'" and word in ("L", "u", "U", "u8"):
                i = j
                c = text[i]
            else:
                toks.append(Tok("id", word, line))
                i = j
                continue
        if c == '"' or c == "'":
            j = i + 1
            start_line = line
            while j < n and text[j] != c:
                if text[j] == "\\" and j + 1 < n:
                    if text[j + 1] == "\n":
                        line += 1
                    j += 2
                    continue
                if text[j] == "\n":  # unterminated: stop at the end of the line
                    break
                j += 1
            body = text[i + 1:min(j, n)].replace("\\\n", "").replace("\\\r\n", "")
            toks.append(Tok("str" if c == '"' else "chr", _decode_escapes(body), start_line))
            i = j + 1 if j < n and text[j] == c else j
            continue
        if c.isdigit() or (c == "." and i + 1 < n and text[i + 1].isdigit()):
            j = i + 1
            while j < n and (text[j].isalnum() or text[j] in "._'" or
                             (text[j] in "+-" and text[j - 1] in "eEpP")):
                j += 1
            toks.append(Tok("num", text[i:j], line))
            i = j
            continue
        three = text[i:i + 3]
        if three in _PUNCT3:
            toks.append(Tok("op", three, line))
            i += 3
            continue
        two = text[i:i + 2]
        if two in _PUNCT2:
            toks.append(Tok("op", two, line))
            i += 2
            continue
        toks.append(Tok("op", c, line))
        i += 1
    return toks


# ---------------------------------------------------------------------------------------------
# Pieces: a message is a list of ("t", text) and ("h", "") pieces.

HOLE = ("h", "")


def _text(s: str):
    return ("t", s)


def render(pieces) -> str:
    """Canonical format: literal braces doubled, every hole "{}"."""
    out = []
    for kind, val in pieces:
        if kind == "h":
            out.append("{}")
        else:
            out.append(val.replace("{", "{{").replace("}", "}}"))
    return "".join(out)


_PRINTF_CONV = re.compile(
    r"%(?:(?P<pct>%)|(?P<argn>\d+\$)?[-+ #0']*(?:\*|\d+)?(?:\.(?:\*|\d+)?)?"
    r"(?P<len>hh|h|ll|l|L|q|j|z|Z|t|I64|I32|I)?(?P<conv>[diouxXeEfFgGaAcspnmCS]))")


def printf_pieces(fmt: str, pconv: str = ""):
    """printf format -> pieces. %% is a literal '%'; an unknown conversion is kept as text.
    pconv: letters that may follow %p to make one conversion (Slurm's %pJ "JobId=1", %ps)."""
    out = []
    pos = 0
    for m in _PRINTF_CONV.finditer(fmt):
        if m.start() > pos:
            out.append(_text(fmt[pos:m.start()]))
        if m.group("pct"):
            out.append(_text("%"))
            pos = m.end()
            continue
        out.append(HOLE)
        pos = m.end()
        if pconv and m.group("conv") == "p" and pos < len(fmt) and fmt[pos] in pconv:
            pos += 1
    if pos < len(fmt):
        out.append(_text(fmt[pos:]))
    return out


def fmt_pieces(fmt: str):
    """fmt / std::format string -> pieces."""
    out = []
    buf = []
    i = 0
    n = len(fmt)
    while i < n:
        c = fmt[i]
        if c == "{":
            if i + 1 < n and fmt[i + 1] == "{":
                buf.append("{")
                i += 2
                continue
            j = fmt.find("}", i)
            if j < 0:
                buf.append(fmt[i:])
                break
            if buf:
                out.append(_text("".join(buf)))
                buf = []
            out.append(HOLE)
            i = j + 1
            continue
        if c == "}" and i + 1 < n and fmt[i + 1] == "}":
            buf.append("}")
            i += 2
            continue
        buf.append(c)
        i += 1
    if buf:
        out.append(_text("".join(buf)))
    return out


def merge(pieces):
    """Adjacent text pieces joined."""
    out = []
    for p in pieces:
        if p[0] == "t" and out and out[-1][0] == "t":
            out[-1] = ("t", out[-1][1] + p[1])
        elif p[0] == "t" and p[1] == "":
            continue
        else:
            out.append(p)
    return out


def literal_len(pieces) -> int:
    return sum(len(v.strip()) for k, v in pieces if k == "t")


# ---------------------------------------------------------------------------------------------
# Call specifications


class CallSpec:
    def __init__(self, raw: str):
        self.raw = raw
        rest = raw.lstrip()
        self.prefix = ""
        k = rest.find(" prefix=")
        if k >= 0:
            self.prefix = rest[k + len(" prefix="):]
            rest = rest[:k]
        parts = rest.split()
        if len(parts) < 3:
            raise ValueError(f"call spec {raw!r}: want 'NAME STYLE LEVEL [arg=N] [prefix=TEXT]'")
        self.name, self.style, self.level = parts[0], parts[1], parts[2]
        self.arg = None
        self.pconv = ""
        self.only: list[str] = []
        self.nargs = None
        self.member = False
        for extra in parts[3:]:
            if extra.startswith("arg=") and extra[4:].isdigit():
                self.arg = int(extra[4:])
            elif extra.startswith("pconv="):
                self.pconv = extra[6:]
            elif extra.startswith("nargs=") and extra[6:].isdigit():
                self.nargs = int(extra[6:])
            elif extra.startswith("only="):
                self.only.append(extra[5:])
            elif extra == "member":
                self.member = True
            else:
                raise ValueError(f"call spec {raw!r}: unknown option {extra!r}")
        styles = ("printf", "fmt", "str", "stream", "returns", "assigns", "helptopics", "builder",
                  "builder-fmt", "builder-printf")
        if self.style not in styles:
            raise ValueError(f"call spec {raw!r}: style must be one of {', '.join(styles)}")
        if self.level not in ("error", "warn", "info", "debug", "-"):
            raise ValueError(f"call spec {raw!r}: level must be error|warn|info|debug")
        self.name_toks = [t.val for t in tokenize(self.name)]


def parse_calls(calls: list[str]) -> list[CallSpec]:
    return [CallSpec(c) for c in calls]


# Builders every C++ emitter shares.
_BUILTIN_BUILDERS = {
    ("c10", "::", "str"): "str",
    ("fmt", "::", "format"): "fmt",
    ("std", "::", "format"): "fmt",
    ("fmt", "::", "sprintf"): "printf",
    ("std", "::", "string"): "str",
    ("std", "::", "string_view"): "str",
}

_KEYWORDS = {"throw", "return", "else", "case", "do", "new", "co_return", "co_yield", "sizeof"}


# ---------------------------------------------------------------------------------------------
# Expression reading


def _match_close(toks: list[Tok], i: int) -> int:
    """toks[i] is an opening bracket; index of its match (or len(toks))."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    stack = [pairs[toks[i].val]]
    j = i + 1
    while j < len(toks) and stack:
        v = toks[j].val if toks[j].kind == "op" else None
        if v in pairs:
            stack.append(pairs[v])
        elif v in (")", "]", "}"):
            if v == stack[-1]:
                stack.pop()
            else:  # unbalanced (a macro body): give up at the first mismatch
                return j
            if not stack:
                return j
        j += 1
    return len(toks)


def split_top(toks: list[Tok], sep: str) -> list[list[Tok]]:
    """Split a token list at top-level `sep` tokens (commas, <<, +)."""
    out: list[list[Tok]] = [[]]
    depth = 0
    for t in toks:
        if t.kind == "op":
            if t.val in ("(", "[", "{"):
                depth += 1
            elif t.val in (")", "]", "}"):
                depth -= 1
            elif t.val == sep and depth == 0:
                out.append([])
                continue
        out[-1].append(t)
    return out


class FileReader:
    """Reads the calls of one file."""

    def __init__(self, relpath: str, text: str, specs: list[CallSpec]):
        self.relpath = relpath
        self.toks = tokenize(text)
        self.specs = specs
        self.builders = dict(_BUILTIN_BUILDERS)
        for s in specs:
            if s.style.startswith("builder"):
                self.builders[tuple(s.name_toks)] = s.style.split("-", 1)[1] if "-" in s.style else "str"
        self._assign_cache: dict[str, list[tuple[int, str, list[Tok]]]] | None = None

    # -- names --------------------------------------------------------------------------------
    def _name_at(self, i: int, names) -> tuple | None:
        """The longest name of `names` (tuples of token values) starting at token i; a name
        ending in ")" matches without its ")" when more arguments follow (a ",")."""
        best = None
        for name in names:
            k = len(name)
            if name[-1] == ")" and "(" in name and i + k <= len(self.toks) and \
                    self.toks[i + k - 1].val == "," and \
                    all(self.toks[i + m].val == name[m] and self.toks[i + m].kind != "str" for m in range(k - 1)):
                if best is None or k > len(best):
                    best = name
                continue
            if i + k <= len(self.toks) and all(self.toks[i + m].val == name[m] and
                                               self.toks[i + m].kind != "str"
                                               for m in range(k)):
                if best is None or k > len(best):
                    best = name
        return best

    # -- local variables ----------------------------------------------------------------------
    def _assignments(self):
        """Where each local name is set: name = expr; name += expr; name << a << b; (a
        stringstream); StrAppend(&name, a, b); TYPE name; (a declaration, which starts it empty);
        TYPE name(expr)."""
        if self._assign_cache is not None:
            return self._assign_cache
        cache: dict[str, list[tuple[int, str, list[Tok]]]] = {}
        toks = self.toks
        n = len(toks)

        def until_end(j):
            depth = 0
            while j < n:
                v = toks[j].val if toks[j].kind == "op" else None
                if v in ("(", "[", "{"):
                    depth += 1
                elif v in (")", "]", "}"):
                    if depth == 0:
                        break
                    depth -= 1
                elif v in (";", ",") and depth == 0:
                    break
                j += 1
            return j

        appended: set[int] = set()
        for i in range(n - 1):
            t = toks[i]
            if t.kind != "id":
                continue
            nxt = toks[i + 1]
            prev = toks[i - 1] if i > 0 else None
            if t.val == "StrAppend" and nxt.val == "(" and i + 4 < n and toks[i + 2].val == "&" and \
                    toks[i + 3].kind == "id" and toks[i + 4].val == ",":
                # abseil's StrAppend(&name, a, b, ...) (absl:: or TSL's strings::) appends StrCat(a, b, ...)
                # to name: a += of every argument after the first
                end = _match_close(toks, i + 1)
                cache.setdefault(toks[i + 3].val, []).append((i + 3, "append", toks[i + 5:end]))
                appended.add(i + 3)  # not a parameter "(&name," below
                continue
            if i in appended:
                continue
            if nxt.kind != "op":
                continue
            if nxt.val == ";" and prev is not None and (
                    (prev.kind == "id" and prev.val not in _KEYWORDS) or prev.val in (">", "&", "*")):
                cache.setdefault(t.val, []).append((i, "decl", []))
                continue
            if nxt.val in (")", ",") and prev is not None and (
                    (prev.kind == "id" and prev.val not in _KEYWORDS) or prev.val in ("&", "*")):
                # a parameter "const std::string& msg)": its value is the caller's, a hole;
                # without this a lambda's parameter would take an earlier local's text
                cache.setdefault(t.val, []).append((i, "param", []))
                continue
            if nxt.val == "<<" and (prev is None or prev.val in (";", "{", "}")):
                j = until_end(i + 2)
                cache.setdefault(t.val, []).append((i, "<<", toks[i + 2:j]))
                continue
            if nxt.val not in ("=", "+=", "(", "{"):
                continue
            if nxt.val in ("(", "{"):
                # a declaration "std::string msg("...")": the previous token is a type name
                if prev is None or prev.kind != "id" or prev.val in _KEYWORDS or prev.val in ("else",):
                    if not (prev is not None and prev.kind == "op" and prev.val in (">", "&", "*")):
                        continue
                end = _match_close(toks, i + 1)
                expr = toks[i + 2:end]
                op = "="
            else:
                j = until_end(i + 2)
                expr = toks[i + 2:j]
                op = nxt.val
            if expr or op == "=":
                cache.setdefault(t.val, []).append((i, op, expr))
        self._assign_cache = cache
        return cache

    def _resolve(self, name: str, at: int, depth: int):
        """Pieces of local variable `name` as set before token `at` (within ~2000 tokens): its
        last assignment or declaration, then the += and << that follow it."""
        if depth > 3:
            return None
        entries = [e for e in self._assignments().get(name, []) if e[0] < at and at - e[0] < 2000]
        base = None
        for k in range(len(entries) - 1, -1, -1):
            if entries[k][1] in ("=", "decl", "param"):
                base = k
                break
        if base is None or entries[base][1] == "param":
            return None
        pieces = []
        for k in range(base, len(entries)):
            op, expr = entries[k][1], entries[k][2]
            if op == "<<" or op == "append":
                for operand in split_top(expr, "<<" if op == "<<" else ","):
                    if operand:
                        pieces.extend(self.eval(operand, "str", depth + 1))
            elif expr:
                pieces.extend(self.eval(expr, "str", depth + 1))
        return pieces if pieces else None

    # -- evaluation ---------------------------------------------------------------------------
    def _literal_run(self, toks: list[Tok], style: str):
        """Adjacent literals with macro pieces between ("a" PRIu64 "b", HOSTFORMAT "x"): text,
        or None. A macro the file defines as a string literal is its text."""
        if not toks or not any(t.kind == "str" for t in toks):
            return None
        if not all(t.kind in ("str", "id") for t in toks):
            return None
        if toks[0].kind == "id" and toks[0].val not in self._str_macros() and \
                not toks[0].val.startswith("PRI") and len(toks) > 1 and toks[1].kind != "str":
            return None
        out = []
        for t in toks:
            if t.kind == "str":
                out.append(_text(t.val))
            elif style == "printf" and t.val.startswith("PRI"):
                out.append(_text("llu"))  # <inttypes.h>: "%" PRIu64 is one conversion
            elif t.val in self._str_macros():
                out.append(_text(self._str_macros()[t.val]))
            else:
                out.append(HOLE)
        return out

    def _str_macros(self) -> dict[str, str]:
        """#define NAME "literal" ... of this file (object-like, literals only)."""
        if hasattr(self, "_macros"):
            return self._macros
        self._macros = {}
        toks = self.toks
        for i in range(len(toks) - 3):
            if toks[i].val == "#" and toks[i + 1].val == "define" and toks[i + 2].kind == "id" and \
                    toks[i + 3].kind == "str" and toks[i + 3].line == toks[i + 2].line:
                j = i + 3
                text = []
                while j < len(toks) and toks[j].kind == "str" and toks[j].line == toks[i + 2].line:
                    text.append(toks[j].val)
                    j += 1
                self._macros.setdefault(toks[i + 2].val, "".join(text))
        return self._macros

    def eval(self, toks: list[Tok], style: str, depth: int = 0):
        """Pieces of one expression that is printed. Text pieces of a printf/fmt expression are
        still in that syntax (the caller parses them)."""
        while toks and toks[0].kind == "op" and toks[0].val == "(" and _match_close(toks, 0) == len(toks) - 1:
            toks = toks[1:-1]
        if not toks:
            return []
        run = self._literal_run(toks, style)
        if run is not None:
            return run
        if len(toks) == 1 and toks[0].kind == "chr":
            return [_text(toks[0].val)]
        if len(toks) == 1 and toks[0].kind == "id":
            if toks[0].val in ("endl",):
                return [_text("\n")]
            resolved = self._resolve(toks[0].val, self._index_of(toks[0]), depth)
            if resolved is not None:
                return resolved if style == "str" else _escape_for(resolved, style)
            return [HOLE]
        if len(toks) == 3 and toks[0].val == "std" and toks[1].val == "::" and toks[2].val == "endl":
            return [_text("\n")]
        # a + concatenation with at least one known operand
        parts = split_top(toks, "+")
        if len(parts) > 1 and all(parts):
            pieces = []
            known = False
            for p in parts:
                pp = self.eval(p, style, depth)
                if any(k == "t" for k, _ in pp):
                    known = True
                pieces.extend(pp)
            return pieces if known else [HOLE]
        # a builder call: c10::str(...), fmt::format(...), MakeString(...), ...
        if toks[0].kind == "op" and toks[0].val == "::":
            toks = toks[1:]
        name = self._name_at_list(toks, self.builders)
        if name is not None and len(toks) > len(name) and toks[len(name)].val == "(" and \
                _match_close(toks, len(name)) == len(toks) - 1:
            bstyle = self.builders[name]
            args = split_top(toks[len(name) + 1:-1], ",")
            inner = self.message(args, bstyle, None, depth + 1)
            if not inner:
                return [HOLE]  # fmt::format(__VA_ARGS__), c10::str(x): printed, but not spelled out here
            return inner if style == "str" else _escape_for(inner, style)
        # x.c_str(), std::string(x).c_str(), x.str()
        if len(toks) >= 4 and toks[-1].val == ")" and toks[-2].val == "(" and toks[-3].val in ("c_str", "str", "data") \
                and toks[-4].val in (".", "->"):
            return self.eval(toks[:-4], style, depth)
        return [HOLE]

    def _index_of(self, tok: Tok) -> int:
        # tokens are unique objects: find by identity (cached map)
        if not hasattr(self, "_idx"):
            self._idx = {id(t): k for k, t in enumerate(self.toks)}
        return self._idx.get(id(tok), len(self.toks))

    @staticmethod
    def _name_at_list(toks: list[Tok], names) -> tuple | None:
        best = None
        for name in names:
            k = len(name)
            if len(toks) > k and all(toks[m].val == name[m] and toks[m].kind != "str" for m in range(k)):
                if best is None or k > len(best):
                    best = name
        return best

    def message(self, args: list[list[Tok]], style: str, arg: int | None, depth: int = 0, prefix: str = "",
                pconv: str = ""):
        """Pieces of a whole message from a call's argument list."""
        if len(args) == 1 and len(args[0]) > 2 and args[0][0].val == "(" and \
                _match_close(args[0], 0) == len(args[0]) - 1:
            args = split_top(args[0][1:-1], ",")  # BTL_ERROR(("fmt", ...)): a macro's double parentheses
        if style in ("printf", "fmt"):
            idx = arg
            if idx is None:
                idx = next((k for k, a in enumerate(args) if a and a[0].kind == "str"), None)
                if idx is None:
                    # a format held in a variable or built by a builder
                    idx = next((k for k, a in enumerate(args) if a and any(
                        p[0] == "t" for p in self.eval(a, style, depth))), None)
            if idx is None or idx >= len(args):
                return []
            raw = merge(_prefix_pieces(prefix) + self.eval(args[idx], style, depth))
            out = []
            for k, v in raw:
                if k == "h":
                    out.append(HOLE)
                else:
                    out.extend(printf_pieces(v, pconv) if style == "printf" else fmt_pieces(v))
            return merge(out)
        # str
        start = arg or 0
        out = [_text(prefix)] if prefix else []
        for a in args[start:]:
            if a:
                out.extend(self.eval(a, "str", depth))
        return merge(out)

    # -- the calls of the file ----------------------------------------------------------------
    def calls(self):
        toks = self.toks
        names = {}
        for s in self.specs:
            if s.style.startswith("builder") or s.style == "helptopics":
                continue
            names.setdefault(tuple(s.name_toks), s)
        results = []
        n = len(toks)
        for i in range(n):
            t = toks[i]
            if t.kind != "id" and not (t.kind == "op" and t.val == "::"):
                continue
            name = self._name_at(i, names)
            if name is None:
                continue
            prev = toks[i - 1] if i > 0 else None
            if prev is not None and prev.kind == "op" and prev.val in (".", "->") and not names[name].member:
                continue
            if prev is not None and prev.kind == "op" and prev.val == "::" and i >= 2 and \
                    ((toks[i - 2].kind == "id" and toks[i - 2].val not in _KEYWORDS) or toks[i - 2].val == ">"):
                continue  # a member of another namespace or class (other::error(...))
            if prev is not None and prev.kind == "id" and prev.val == "define":
                continue
            spec = names[name]
            j = i + len(name)
            if name[-1] == ")" and "(" in name:
                # "LOG(WARNING)" also matches LOG(WARNING, rank): skip to the call's own ")"
                open_at = i + name.index("(")
                j = _match_close(toks, open_at) + 1
            if spec.style == "returns":
                results.extend(self._returns(spec, j))
                continue
            if spec.style == "assigns":
                if j < n and toks[j].kind == "op" and toks[j].val in ("=", "+="):
                    end = j + 1
                    depth = 0
                    while end < n:
                        v = toks[end].val if toks[end].kind == "op" else None
                        if v in ("(", "[", "{"):
                            depth += 1
                        elif v in (")", "]", "}"):
                            if depth == 0:
                                break
                            depth -= 1
                        elif v == ";" and depth == 0:
                            break
                        end += 1
                    pieces = merge(self.eval(toks[j + 1:end], "str"))
                    if literal_len(pieces) > 0:
                        results.append({"line": t.line, "call": spec.name, "level": spec.level,
                                        "format": render(pieces)})
                continue
            if spec.style == "stream":
                if j >= n or toks[j].val != "<<":
                    continue
                end = j
                depth = 0
                while end < n:
                    v = toks[end].val if toks[end].kind == "op" else None
                    if v in ("(", "[", "{"):
                        depth += 1
                    elif v in (")", "]", "}"):
                        if depth == 0:
                            break
                        depth -= 1
                    elif v == ";" and depth == 0:
                        break
                    elif v == "#" and end + 1 < n and toks[end + 1].val in ("define", "undef"):
                        break  # a macro body without ";" ends at the next #define
                    end += 1
                ops = split_top(toks[j + 1:end], "<<")
                pieces = ([_text(spec.prefix)] if spec.prefix else [])
                for o in ops:
                    if o:
                        pieces.extend(self.eval(o, "str"))
                pieces = merge(pieces)
            else:
                if j >= n or toks[j].val != "(":
                    continue
                close = _match_close(toks, j)
                args = split_top(toks[j + 1:close], ",")
                if spec.style == "str" and not spec.prefix and args and len(args) == 1 and not args[0]:
                    continue
                if spec.nargs is not None:
                    args = args[:(spec.arg or 0) + spec.nargs]
                pieces = self.message(args, spec.style, spec.arg, 0, spec.prefix, spec.pconv)
            if literal_len(pieces) == 0:
                continue
            results.append({"line": t.line, "call": spec.name, "level": spec.level, "format": render(pieces)})
        return results

    def _returns(self, spec: CallSpec, j: int):
        """The literals a function definition NAME(...) { ... } returns."""
        toks = self.toks
        n = len(toks)
        if j >= n or toks[j].val != "(":
            return []
        close = _match_close(toks, j)
        k = close + 1
        while k < n and toks[k].kind == "id":  # const noexcept override
            k += 1
        if k >= n or toks[k].val != "{":
            return []
        end = _match_close(toks, k)
        out = []
        m = k + 1
        while m < end:
            if toks[m].kind == "id" and toks[m].val == "return":
                e = m + 1
                while e < end and toks[e].val != ";":
                    e += 1
                pieces = merge(self.eval(toks[m + 1:e], "str"))
                if literal_len(pieces) > 0:
                    out.append({"line": toks[m].line, "call": spec.name, "level": spec.level,
                                "format": render(pieces)})
                m = e
            m += 1
        return out


def _prefix_pieces(prefix: str):
    return [_text(prefix)] if prefix else []


def _escape_for(pieces, style: str):
    """Pieces of a str-evaluated value used inside a printf/fmt format: its text is literal, so
    escape it for the format parser that runs next."""
    out = []
    for k, v in pieces:
        if k == "h":
            out.append(HOLE)
        elif style == "printf":
            out.append(_text(v.replace("%", "%%")))
        else:
            out.append(_text(v.replace("{", "{{").replace("}", "}}")))
    return out


# ---------------------------------------------------------------------------------------------
# show_help text files

_TOPIC = re.compile(r"^\[([^\]]+)\]\s*$")


def help_topics(text: str, spec: CallSpec):
    """Open MPI's help-*.txt: '#' lines are comments, '[topic]' starts a topic, the lines up to
    the next topic are its printf-style text."""
    out = []
    topic = None
    topic_line = 0
    body: list[str] = []

    def flush():
        if topic is None:
            return
        fmt = "\n".join(body).strip("\n")
        pieces = merge(printf_pieces(fmt, spec.pconv))
        if literal_len(pieces) > 0:
            out.append({"line": topic_line, "call": "show_help:" + topic, "level": spec.level,
                        "format": render(pieces)})

    for k, ln in enumerate(text.split("\n"), start=1):
        m = _TOPIC.match(ln)
        if m:
            flush()
            topic = m.group(1)
            topic_line = k
            body = []
            continue
        if ln.startswith("#"):
            continue
        if topic is not None:
            body.append(ln)
    flush()
    return out


# ---------------------------------------------------------------------------------------------


def extract_file(relpath: str, text: str, calls: list[str]) -> list[dict]:
    specs = [s for s in parse_calls(calls) if not s.only or any(fnmatch.fnmatchcase(relpath, g) for g in s.only)]
    if relpath.endswith(".txt"):
        hs = [s for s in specs if s.style == "helptopics"]
        return help_topics(text, hs[0]) if hs else []
    reader = FileReader(relpath, text, specs)
    out = reader.calls()
    out.sort(key=lambda e: (e["line"], e["call"], e["format"]))
    return out
