"""Python message extraction for the catalogue (see extract.py for the driver's interface).

extract_file(relpath, text, calls) -> [{"line", "call", "level", "format"}]

The file is parsed with the standard `ast` module (a file that does not parse is reported on
stderr and gives nothing). Each entry of `calls` names the calls that print a message and how
to read them: "NAME STYLE LEVEL [arg=N] [kw=NAME] [if=KW:SOURCE] [only=GLOB]... [conv=percent|format|template] [bare]"
(whitespace separated). NAME is a glob (fnmatch, case-sensitive) over the callee's dotted
name as written, `|` separating alternatives: "*logger.warning|*log.warning" matches
logger.warning(...), self._logger.warning(...), log.warning(...); a call on a call's result is
spelled with "()": "logging.getLogger().warning". STYLE:

  logging  the message argument (arg=N, default 0, or keyword kw=NAME) is a logging message:
           when the call passes further positional arguments, its %-conversions (%s %d %(x)s
           %.2f) are holes and %% is %, as logging does it; without them the text is printed as is.
  expr     the message argument's value, as is (warnings.warn, rank_zero_warn, helpers that
           print their argument).
  print    print()'s positional arguments joined by its sep= (default " ").
  raise    `raise X(...)` where X's dotted name, or its last component, matches NAME: the
           exception's message argument (arg=N, default 0, or kw=NAME). With the flag `bare`,
           an exception raised without a message (`raise RendezvousTimeoutError`,
           ChildFailedError(name=..., failures=...)) gives its class name as the format: the
           traceback's last line.
  const    not a call: a string assigned to a name that matches NAME (module, class or function
           level, or an attribute such as self.message; "=" or ":" annotated), e.g. a template printed later with .format(); conv=
           turns its %-conversions (percent), str.format fields (format) or string.Template
           $names (template) into holes.

  returns  not a call: the strings a function (or method) whose name matches NAME returns,
           one format per `return` (a __repr__ that a script logs: accelerate's state).

LEVEL is error | warn | info | debug. if=KW:SOURCE keeps only calls whose keyword KW is
written SOURCE (print's file=sys.stderr: "if=file:sys.stderr"). only= limits the entry to
files matching the glob (fnmatch over the relative path; repeatable): logger.debug of the
rendezvous state machine, say, without every other file's debug lines.

How a message expression is read: string literals and f-strings (each {expr} a hole);
`+` concatenation; `"..." % args` (conversions become holes); `"...".format(...)` and
.format_map (fields become holes, {{ }} literal); str * int repetition of a literal;
.strip()/.lstrip()/.rstrip() and textwrap.dedent()/inspect.cleandoc() applied to the text;
`a if c else b` gives both texts as two formats. A name is followed to the strings assigned to
it: in the enclosing function before the call (an assignment on every path to the call
replaces the earlier ones, one on a branch adds an alternative; `name += ...` appends),
else at module level. Anything else (a
variable without a string, a function result, str(x)) is a hole. A message with no literal
text is left out. At most 16 alternatives are kept per message.
"""

from __future__ import annotations

import ast
import fnmatch
import inspect
import re
import string
import sys

from segments import HOLE, HOLE_TEXT, MAX_ALTS, holes_at  # noqa: F401
from segments import norm as _norm
from segments import product as _product
import textwrap

LEVELS = ("error", "warn", "info", "debug")
STYLES = ("logging", "expr", "print", "raise", "const", "returns")



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
        self.kw = None
        self.cond = []
        self.conv = None
        self.only = []
        self.bare = False
        for w in words[3:]:
            if w == "bare" and self.style == "raise":
                self.bare = True
                continue
            k, eq, v = w.partition("=")
            if not eq:
                raise ValueError(f"calls entry {entry!r}: option {w!r} is not KEY=VALUE")
            if k == "arg" and v.isdigit():
                self.arg = int(v)
            elif k == "kw" and v.isidentifier():
                self.kw = v
            elif k == "if" and ":" in v:
                kk, _, src = v.partition(":")
                self.cond.append((kk, src))
            elif k == "only" and v:
                self.only.append(v)
            elif k == "conv" and v in ("percent", "format", "template"):
                self.conv = v
            else:
                raise ValueError(f"calls entry {entry!r}: option {w!r} unknown or malformed")

    def matches(self, name: str) -> bool:
        last = name.rpartition(".")[2]
        for g in self.globs:
            if fnmatch.fnmatchcase(name, g):
                return True
            if self.style == "raise" and fnmatch.fnmatchcase(last, g):
                return True
        return False


def dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return dotted(node.value) + "." + node.attr
    if isinstance(node, ast.Call):
        return dotted(node.func) + "()"
    if isinstance(node, ast.Subscript):
        return dotted(node.value) + "[]"
    return "?"


# ---------------------------------------------------------------------------------------------
# texts: a text is a tuple of segments, each a literal str or HOLE





_PERCENT = re.compile(r"%%|%(?:\([^)]*\))?[-#0 +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[hlL]?[diouxXeEfFgGcrsa]")


def _percent(text: tuple) -> tuple:
    return holes_at(text, _PERCENT)


def _format_fields(text: tuple) -> tuple:
    out = []
    for s in text:
        if s is HOLE:
            out.append(HOLE)
            continue
        try:
            parsed = list(string.Formatter().parse(s))
        except ValueError:  # unbalanced braces: not a format string, printed as is by accident
            out.append(s)
            continue
        for lit, field, _spec, _conv in parsed:
            out.append(lit)
            if field is not None:
                out.append(HOLE)
    return _norm(out)


_TEMPLATE = re.compile(r"\$(?:\$|[_a-zA-Z][_a-zA-Z0-9]*|\{[_a-zA-Z][_a-zA-Z0-9]*\})")


def _template(text: tuple) -> tuple:
    """string.Template: $name and ${name} are holes, $$ is $."""
    return holes_at(text, _TEMPLATE, "$$")


def _apply(text: tuple, fn) -> tuple:
    """Applies a text function (dedent, strip) to a text whose holes are kept as \\0."""
    flat = "".join("\0" if s is HOLE else s for s in text)
    res = fn(flat)
    out = []
    for k, piece in enumerate(res.split("\0")):
        if k:
            out.append(HOLE)
        out.append(piece)
    return _norm(out)


def canonical(text: tuple) -> str:
    return "".join("{}" if s is HOLE else s.replace("{", "{{").replace("}", "}}") for s in text)


def has_literal(text: tuple) -> bool:
    return any(s is not HOLE and s.strip() for s in text)


# ---------------------------------------------------------------------------------------------
# scopes: where a name gets its strings


class Scopes:
    def __init__(self, tree: ast.Module):
        self.parent = {}
        self.block = {}  # statement -> (id of the statement list holding it, index in it)
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parent[child] = node
            for _name, value in ast.iter_fields(node):
                if isinstance(value, list):
                    for k, child in enumerate(value):
                        if isinstance(child, ast.stmt):
                            self.block[child] = (id(value), k)
        self.module = tree
        self._assigns = {}

    def function_of(self, node):
        p = self.parent.get(node)
        while p is not None and not isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            p = self.parent.get(p)
        return p

    def dominates(self, stmt, at) -> bool:
        """`stmt` runs before `at` on every path: `at` lies in a later statement of stmt's own block."""
        where = self.block.get(stmt)
        if where is None:
            return False
        node = at
        while node is not None:
            b = self.block.get(node)
            if b is not None and b[0] == where[0] and b[1] > where[1]:
                return True
            node = self.parent.get(node)
        return False

    def assigns(self, scope):
        """[(lineno, name, op, value, stmt)] of the scope's own statements (not nested functions)."""
        if scope in self._assigns:
            return self._assigns[scope]
        out = []
        body = scope.body if isinstance(scope, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)) else []
        stack = list(body)
        while stack:
            n = stack.pop()
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            if isinstance(n, ast.Assign):
                for t in n.targets:
                    if isinstance(t, ast.Name):
                        out.append((n.lineno, t.id, "=", n.value, n))
            elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.value is not None:
                out.append((n.lineno, n.target.id, "=", n.value, n))
            elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and isinstance(n.op, ast.Add):
                out.append((n.lineno, n.target.id, "+=", n.value, n))
            if isinstance(n, (ast.stmt, ast.excepthandler, ast.match_case)):
                stack.extend(ast.iter_child_nodes(n))
        out.sort(key=lambda x: x[0])
        self._assigns[scope] = out
        return out


class Evaluator:
    def __init__(self, scopes: Scopes):
        self.scopes = scopes
        self.active = set()

    def eval(self, node, at) -> list:
        """The texts `node` can print (at least one: a hole); `at` is the node the value is read at."""
        res = self._eval(node, at)
        return res if res else HOLE_TEXT

    def _eval(self, node, at) -> list:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                return [_norm((node.value,))]
            if isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
                return [_norm((str(node.value),))]
            return HOLE_TEXT
        if isinstance(node, ast.JoinedStr):
            alts = [()]
            for v in node.values:
                if isinstance(v, ast.Constant) and isinstance(v.value, str):
                    alts = _product(alts, [(v.value,)])
                else:
                    alts = _product(alts, HOLE_TEXT)
            return alts
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Add):
                return _product(self.eval(node.left, at), self.eval(node.right, at))
            if isinstance(node.op, ast.Mod) and self._stringish(node.left):
                return _dedupe(_percent(t) for t in self.eval(node.left, at))
            if isinstance(node.op, ast.Mult):
                for s, n in ((node.left, node.right), (node.right, node.left)):
                    if (isinstance(s, ast.Constant) and isinstance(s.value, str) and isinstance(n, ast.Constant)
                            and isinstance(n.value, int) and 0 <= n.value <= 400):
                        return [_norm((s.value * n.value,))]
            return HOLE_TEXT
        if isinstance(node, ast.IfExp):
            return _dedupe(self.eval(node.body, at) + self.eval(node.orelse, at))[:MAX_ALTS]
        if isinstance(node, ast.Name):
            return self._name(node.id, at)
        if isinstance(node, ast.Call):
            return self._call(node, at)
        return HOLE_TEXT

    def _stringish(self, node) -> bool:
        """`node` is text we can read (a literal, a name holding one, a call on one)."""
        if isinstance(node, ast.JoinedStr):
            return True
        if isinstance(node, ast.Constant):
            return isinstance(node.value, str)
        return any(has_literal(t) for t in self.eval(node, node))

    def _call(self, node: ast.Call, at) -> list:
        f = node.func
        if isinstance(f, ast.Attribute):
            recv = f.value
            if f.attr in ("format", "format_map") and self._stringish(recv):
                return _dedupe(_format_fields(t) for t in self.eval(recv, at))
            if f.attr in ("strip", "lstrip", "rstrip") and not node.args and self._stringish(recv):
                return _dedupe(_apply(t, getattr(str, f.attr)) for t in self.eval(recv, at))
        name = dotted(f)
        if name in ("textwrap.dedent", "dedent", "inspect.cleandoc", "cleandoc") and len(node.args) == 1:
            fn = textwrap.dedent if "dedent" in name else inspect.cleandoc
            return _dedupe(_apply(t, fn) for t in self.eval(node.args[0], at))
        return HOLE_TEXT

    def _name(self, name: str, at) -> list:
        key = (name, id(at))
        if key in self.active:
            return HOLE_TEXT
        self.active.add(key)
        try:
            func = self.scopes.function_of(at)
            if func is not None and not isinstance(func, ast.Lambda):
                got = self._resolve(func, name, at)
                if got is not None:
                    return got
                args = func.args
                params = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
                params |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
                if name in params:
                    return HOLE_TEXT
            got = self._resolve(self.scopes.module, name, self.scopes.module)
            return got if got is not None else HOLE_TEXT
        finally:
            self.active.discard(key)

    def _resolve(self, scope, name: str, at):
        """The texts `name` holds where `at` reads it, from the scope's assignments before it.

        An assignment that runs on every path to `at` replaces what came before; one on a branch
        adds an alternative. `name += x` on every path appends to each text; on a branch, the
        texts with and without x are both kept.
        """
        before = getattr(at, "lineno", 1 << 30)
        alts = None
        for line, n, op, value, stmt in self.scopes.assigns(scope):
            if n != name or line >= before:
                continue
            always = self.scopes.dominates(stmt, at)
            if op == "=" and not (isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add)
                                  and isinstance(value.left, ast.Name) and value.left.id == name):
                new = self.eval(value, value)
                alts = new if always or alts is None else _dedupe(alts + new)[:MAX_ALTS]
                continue
            if alts is None:
                continue
            tail = value.right if op == "=" else value  # name = name + x, name += x
            longer = _product(alts, self.eval(tail, value))
            alts = longer if always else _dedupe(alts + longer)[:MAX_ALTS]
        if alts is None:
            return None
        if any(has_literal(t) for t in alts):
            # a name that also holds non-strings (None, a list) is printed as text only where it is text
            return [t for t in alts if has_literal(t)] or HOLE_TEXT
        return HOLE_TEXT


def _dedupe(texts) -> list:
    out = []
    for t in texts:
        if t not in out:
            out.append(t)
    return out


# ---------------------------------------------------------------------------------------------
# calls


def _message_arg(node: ast.Call, call: Call):
    pos = [a for a in node.args]
    if call.arg < len(pos) and not any(isinstance(a, ast.Starred) for a in pos[:call.arg + 1]):
        return pos[call.arg]
    if call.kw:
        for k in node.keywords:
            if k.arg == call.kw:
                return k.value
    return None


def _cond_ok(node: ast.Call, call: Call) -> bool:
    for kw, src in call.cond:
        if not any(k.arg == kw and ast.unparse(k.value) == src for k in node.keywords):
            return False
    return True


def _texts_of_call(ev: Evaluator, node: ast.Call, call: Call) -> list:
    if call.style == "print":
        sep = [(" ",)]
        for k in node.keywords:
            if k.arg == "sep":
                sep = ev.eval(k.value, node)
        alts = [()]
        for i, a in enumerate(node.args):
            if i:
                alts = _product(alts, sep)
            alts = _product(alts, HOLE_TEXT if isinstance(a, ast.Starred) else ev.eval(a, node))
        return alts
    arg = _message_arg(node, call)
    if arg is None:
        return []
    texts = ev.eval(arg, node)
    if call.style == "logging":
        extra = len(node.args) > call.arg + 1 or (arg is not None and arg not in node.args and len(node.args) > 0)
        if extra:
            texts = _dedupe(_percent(t) for t in texts)
    return texts


def extract_file(relpath: str, text: str, calls: list[str]) -> list[dict]:
    specs = [c for c in (Call(x) for x in calls)
             if not c.only or any(fnmatch.fnmatchcase(relpath, g) for g in c.only)]
    try:
        tree = ast.parse(text, filename=relpath)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        print(f"lang_py: {relpath}: not parsed ({e}); no formats from it", file=sys.stderr)
        return []
    scopes = Scopes(tree)
    ev = Evaluator(scopes)
    out = []
    seen = set()

    def emit(line, call, level, texts):
        for t in texts:
            if not has_literal(t):
                continue
            fmt = canonical(t)
            key = (line, call, fmt)
            if key in seen:
                continue
            seen.add(key)
            out.append({"line": line, "call": call, "level": level, "format": fmt})

    try:
        _walk(tree, specs, scopes, ev, emit)
    except RecursionError:  # an expression nested deeper than Python's stack (a 5000-term concatenation)
        print(f"lang_py: {relpath}: an expression too deep to read; formats from it may be missing", file=sys.stderr)
    out.sort(key=lambda e: (e["line"], e["call"], e["format"]))
    return out


def _walk(tree, specs, scopes, ev, emit):
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc
            call = exc if isinstance(exc, ast.Call) else None
            name = dotted(call.func if call else exc)
            for c in specs:
                if c.style != "raise" or not c.matches(name) or (call and not _cond_ok(call, c)):
                    continue
                if call is not None and _message_arg(call, c) is not None:
                    emit(exc.lineno, name, c.level, _texts_of_call(ev, call, c))
                elif c.bare and isinstance(exc, (ast.Name, ast.Attribute, ast.Call)):
                    # no message: the traceback's last line is the class name alone
                    emit(exc.lineno, name, c.level, [(name.rpartition(".")[2],)])
                break
        elif isinstance(node, ast.Call):
            name = dotted(node.func)
            for c in specs:
                if c.style in ("logging", "expr", "print") and c.matches(name) and _cond_ok(node, c):
                    emit(node.lineno, name, c.level, _texts_of_call(ev, node, c))
                    break
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for c in specs:
                if c.style == "returns" and c.matches(node.name):
                    for r in ast.walk(node):
                        if isinstance(r, ast.Return) and r.value is not None and scopes.function_of(r) is node:
                            emit(r.lineno, node.name, c.level, ev.eval(r.value, r))
                    break
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if not isinstance(t, (ast.Name, ast.Attribute)) or node.value is None:
                    continue
                tname = dotted(t)
                for c in specs:
                    if c.style == "const" and c.matches(tname):
                        texts = ev.eval(node.value, node.value)
                        if c.conv == "percent":
                            texts = _dedupe(_percent(x) for x in texts)
                        elif c.conv == "format":
                            texts = _dedupe(_format_fields(x) for x in texts)
                        elif c.conv == "template":
                            texts = _dedupe(_template(x) for x in texts)
                        emit(node.lineno, tname, c.level, texts)
                        break
