#!/usr/bin/env python3
"""Extract the message formats of one emitter from its own source; merge their meanings.

    python3 tools/extract.py emitters/<id>.toml (--git-dir DIR | --tree DIR | --remerge) [--check] [--diff OLD_ID]

Reads emitters/<id>.toml (emitter, version, repo, rev, language, paths, exclude, calls), walks
the source tree (a bare git dir from the library's fetch, files read at `rev` with
`git ls-tree` / `git cat-file`; or --tree, a plain directory), hands every selected file to the
language extractor, splits each format into printed lines, merges meanings/<id>.toml and writes
data/<id>.jsonl (sorted, byte-for-byte reproducible). The catalogue folder is the parent of
this tools/ folder (--catalogue overrides).

  --remerge     read no source: take the formats of the committed data/<id>.jsonl as they are
                (where, part, call, level, format, weak), drop their meanings and merge
                meanings/<id>.toml again, exactly as a full run does (same matching, same bytes for
                unchanged formats); for a meanings-only edit when the source tree is not at hand
  --check       write nothing; exit 1 when data/<id>.jsonl would change
  --diff OLD    print the formats added, removed and changed against data/<OLD>.jsonl
                (another version of the same emitter, extracted earlier); writes nothing

Exit: 0 ok; 1 --check found a change, or meanings/<id>.toml lists a format the source no
longer prints (a stale meaning: reported, the data is still written); 2 bad input (one line
naming the file and the key).

The language extractor interface (tools/lang_<language>.py, stable: other extractors are
written against it):

    extract_file(relpath: str, text: str, calls: list[str]) -> list[dict]

  relpath  the file's path relative to the tree root ("src/init.cc")
  text     its content (UTF-8, undecodable bytes replaced)
  calls    the emitter toml's `calls`, unchanged (each extractor defines the syntax of an entry;
           lang_c.py: "NAME STYLE LEVEL [arg=N] [prefix=TEXT]")
  returns  one dict per message the file can print:
           {"line": int (1-based), "call": str (what printed it), "level": "error"|"warn"|"info"|"debug",
            "format": str (canonical: literal text, "{}" for each hole, "{{" "}}" for literal
                           braces; may contain "\\n": the driver splits it into parts)}

The driver does the rest, the same for every language: split on "\\n", trim blanks, drop
parts with no literal character, mark weak (fewer than 8 literal characters), merge meanings.
"""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import json
import os
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field

sys.dont_write_bytecode = True  # the extractors are imported from the source tree: leave it clean
TOOLS = os.path.dirname(os.path.abspath(__file__))
CATALOGUE = os.path.dirname(TOOLS)

WEAK_BELOW = 8        # literal characters
WEAK_LETTERS = 4      # letters: a rule of dashes or "{}: {}" says nothing about what happened
LEVELS = ("error", "warn", "info", "debug")
ROLES = ("root", "echo", "exit", "benign", "context")
PHASES = ("", "init", "training", "checkpoint", "eval", "data", "shutdown")
CATEGORIES = ("", "rendezvous", "collective_mismatch", "rank_exit", "straggler", "data_loading",
              "network", "resource_limit", "none", "unknown")
NAME_KEYS = ("rank", "peer_rank", "world", "host", "peer_host", "device", "pid", "signal", "code",
             "seq", "op", "timeout_ms", "local_rank", "joined", "step", "total_steps", "interface",
             "address", "path", "size", "errno", "reason", "cuda_result")
EMITTER_KEYS = {"emitter", "version", "repo", "rev", "language", "paths", "exclude", "calls", "note"}
MEANING_KEYS = {"formats", "file", "call", "kind", "role", "category", "cause", "phase", "names",
                "note", "example", "marker"}


class BadInput(Exception):
    """One line: file, key, what is wrong."""


# ---------------------------------------------------------------------------------------------
# globs


def glob_regex(pattern: str) -> re.Pattern:
    """A path glob: ** any number of folders, * and ? inside one name, [..] classes, {a,b}."""
    out = []
    i = 0
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            j = pattern.find("]", i + 1)
            if j < 0:
                out.append(re.escape(c))
                i += 1
            else:
                body = pattern[i + 1:j]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = j + 1
        elif c == "{":
            j = pattern.find("}", i + 1)
            if j < 0:
                out.append(re.escape(c))
                i += 1
            else:
                alts = pattern[i + 1:j].split(",")
                out.append("(?:" + "|".join(glob_regex(a).pattern[:-2] for a in alts) + ")")
                i = j + 1
        else:
            out.append(re.escape(c))
            i += 1
    return re.compile("".join(out) + r"\Z")


def selected(path: str, include: list[re.Pattern], exclude: list[re.Pattern]) -> bool:
    return any(p.match(path) for p in include) and not any(p.match(path) for p in exclude)


# ---------------------------------------------------------------------------------------------
# inputs


@dataclass
class Emitter:
    path: str
    id: str
    emitter: str
    version: str
    repo: str
    rev: str
    language: str
    paths: list[str]
    exclude: list[str]
    calls: list[str]


def _load_toml(path: str) -> dict:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except OSError as e:
        raise BadInput(f"{path}: cannot read: {e.strerror}")
    except tomllib.TOMLDecodeError as e:
        raise BadInput(f"{path}: {e}")


def load_emitter(path: str) -> Emitter:
    d = _load_toml(path)
    for k in d:
        if k not in EMITTER_KEYS:
            raise BadInput(f"{path}: key {k}: unknown (known: {', '.join(sorted(EMITTER_KEYS))})")
    for k in ("emitter", "version", "repo", "rev", "language"):
        if not isinstance(d.get(k), str) or not d[k]:
            raise BadInput(f"{path}: key {k}: missing or not a non-empty string")
    for k in ("paths", "calls", "exclude"):
        v = d.get(k, [])
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v) or (k != "exclude" and not v):
            raise BadInput(f"{path}: key {k}: want a list of strings")
    if not re.fullmatch(r"[a-z]+", d["language"]):
        raise BadInput(f"{path}: key language: {d['language']!r} is not a language name")
    eid = os.path.splitext(os.path.basename(path))[0]
    return Emitter(path, eid, d["emitter"], d["version"], d["repo"], d["rev"], d["language"],
                   d["paths"], d.get("exclude", []), d["calls"])


def load_language(language: str):
    mod_path = os.path.join(TOOLS, f"lang_{language}.py")
    if not os.path.exists(mod_path):
        raise BadInput(f"language {language}: no extractor {mod_path}")
    spec = importlib.util.spec_from_file_location(f"lang_{language}", mod_path)
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, TOOLS)
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(TOOLS)
    return mod


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def git_files(git_dir: str, rev: str, em: Emitter):
    """(relpath, text) of the selected blobs of `rev`, sorted by path."""
    inc = [glob_regex(p) for p in em.paths]
    exc = [glob_regex(p) for p in em.exclude]
    try:
        listing = subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "-r", "-z", rev],
                                 check=True, capture_output=True).stdout
    except (subprocess.CalledProcessError, OSError) as e:
        err = getattr(e, "stderr", b"") or b""
        raise BadInput(f"{em.path}: key rev: {rev} not readable in {git_dir}: {_decode(err).strip() or e}")
    blobs = []
    for rec in listing.split(b"\0"):
        if not rec:
            continue
        meta, _, name = rec.partition(b"\t")
        mode, kind, sha = meta.split(b" ")
        path = _decode(name)
        if kind == b"blob" and mode != b"120000" and selected(path, inc, exc):
            blobs.append((path, sha.decode()))
    blobs.sort()
    if not blobs:
        return []
    proc = subprocess.run(["git", "--git-dir", git_dir, "cat-file", "--batch"],
                          input=b"".join(s.encode() + b"\n" for _, s in blobs),
                          check=True, capture_output=True)
    out = proc.stdout
    pos = 0
    files = []
    for path, _ in blobs:
        nl = out.index(b"\n", pos)
        header = out[pos:nl].split(b" ")
        size = int(header[2])
        files.append((path, _decode(out[nl + 1:nl + 1 + size])))
        pos = nl + 1 + size + 1
    return files


def tree_files(root: str, em: Emitter):
    inc = [glob_regex(p) for p in em.paths]
    exc = [glob_regex(p) for p in em.exclude]
    if not os.path.isdir(root):
        raise BadInput(f"--tree {root}: not a directory")
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for fn in filenames:
            full = os.path.join(dirpath, fn)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            if os.path.islink(full) or not selected(rel, inc, exc):
                continue
            with open(full, "rb") as f:
                files.append((rel, _decode(f.read())))
    files.sort()
    return files


# ---------------------------------------------------------------------------------------------
# formats


def literal_text(fmt: str) -> str:
    """The literal characters of a canonical format (holes removed, braces undoubled)."""
    return re.sub(r"\{\{|\}\}|\{\}", lambda m: {"{{": "{", "}}": "}", "{}": ""}[m.group(0)], fmt)


def hole_count(fmt: str) -> int:
    return len(re.findall(r"\{\{|\}\}|\{\}", fmt)) - len(re.findall(r"\{\{|\}\}", fmt))


def is_weak(fmt: str) -> bool:
    """Too generic to match alone: few literal characters, or hardly any letters."""
    lit = literal_text(fmt).strip()
    return len(lit) < WEAK_BELOW or sum(c.isalpha() for c in lit) < WEAK_LETTERS


def split_parts(fmt: str) -> list[str]:
    parts = []
    for p in fmt.split("\n"):
        p = p.strip(" \t\r\f\v")
        if p and literal_text(p).strip():
            parts.append(p)
    return parts


def extract(em: Emitter, files) -> list[dict]:
    lang = load_language(em.language)
    entries = []
    for rel, text in files:
        found = lang.extract_file(rel, text, em.calls)
        for e in found:
            if e.get("level") not in LEVELS:
                raise BadInput(f"{em.path}: key calls: extractor gave level {e.get('level')!r} at {rel}:{e.get('line')}")
            for k, p in enumerate(split_parts(e["format"])):
                rec = {"emitter": em.emitter, "version": em.version, "where": f"{rel}:{int(e['line'])}",
                       "part": k, "call": e["call"], "level": e["level"], "format": p}
                if is_weak(p):
                    rec["weak"] = True
                entries.append(rec)
    entries.sort(key=sort_key)
    return entries


def sort_key(r: dict):
    path, _, line = r["where"].rpartition(":")
    return (path, int(line), r["part"], r["call"], r["format"])


# ---------------------------------------------------------------------------------------------
# meanings


@dataclass
class Meaning:
    index: int  # 1-based [[m]] number
    formats: list[str]
    files: list[re.Pattern] | None
    call: str | None
    value: dict
    used: set = field(default_factory=set)


def log_kinds() -> set[str] | None:
    """LogKind names (without k) from parse.hpp, when the catalogue sits in the repo."""
    hpp = os.path.join(os.path.dirname(CATALOGUE), "parse.hpp")
    try:
        with open(hpp) as f:
            text = f.read()
    except OSError:
        return None
    m = re.search(r"enum class LogKind[^{]*\{(.*?)\};", text, re.S)
    if not m:
        return None
    body = re.sub(r"//[^\n]*", "", m.group(1))
    names = {w.strip()[1:] for w in body.split(",") if w.strip().startswith("k")}
    names.add("Info")  # a benign or context line that is no LogKind of its own
    return names


def load_meanings(path: str) -> list[Meaning]:
    if not os.path.exists(path):
        return []
    d = _load_toml(path)
    for k in d:
        if k != "m":
            raise BadInput(f"{path}: key {k}: unknown (only [[m]] tables)")
    kinds = log_kinds()
    out = []
    for i, m in enumerate(d.get("m", []), start=1):
        where = f"{path}: [[m]] #{i}"
        if not isinstance(m, dict):
            raise BadInput(f"{where}: not a table")
        for k in m:
            if k not in MEANING_KEYS:
                raise BadInput(f"{where}: key {k}: unknown (known: {', '.join(sorted(MEANING_KEYS))})")
        fm = m.get("formats")
        if not isinstance(fm, list) or not fm or not all(isinstance(x, str) and x for x in fm):
            raise BadInput(f"{where}: key formats: want a non-empty list of formats")
        for k in ("kind", "role"):
            if not isinstance(m.get(k), str):
                raise BadInput(f"{where}: key {k}: missing")
        if kinds is not None and m["kind"] not in kinds:
            raise BadInput(f"{where}: key kind: {m['kind']!r} is no LogKind of parse.hpp (nor Info)")
        if m["role"] not in ROLES:
            raise BadInput(f"{where}: key role: {m['role']!r} not one of {', '.join(ROLES)}")
        for k, allowed in (("category", CATEGORIES), ("phase", PHASES)):
            v = m.get(k, "")
            if not isinstance(v, str) or v not in allowed:
                shown = ", ".join(a or '""' for a in allowed)
                raise BadInput(f"{where}: key {k}: {v!r} not one of {shown}")
        for k in ("cause", "note", "call"):
            if k in m and not isinstance(m[k], str):
                raise BadInput(f"{where}: key {k}: want a string")
        if "cause" in m and m["cause"] and not re.fullmatch(r"[a-z][a-z0-9_]*", m["cause"]):
            raise BadInput(f"{where}: key cause: {m['cause']!r} is not a snake_case cause")
        names = m.get("names", {})
        if not isinstance(names, dict):
            raise BadInput(f"{where}: key names: want a table {{name = hole index}}")
        for nk, nv in names.items():
            if nk not in NAME_KEYS:
                raise BadInput(f"{where}: key names.{nk}: unknown (known: {', '.join(NAME_KEYS)})")
            if not isinstance(nv, int) or isinstance(nv, bool) or nv < 0:
                raise BadInput(f"{where}: key names.{nk}: want a hole index >= 0")
        for f in fm:
            for nk, nv in names.items():
                if nv >= hole_count(f):
                    raise BadInput(f"{where}: key names.{nk}: hole {nv} but format {f!r} has {hole_count(f)}")
        files = m.get("file")
        if files is not None:
            if isinstance(files, str):
                files = [files]
            if not isinstance(files, list) or not all(isinstance(x, str) for x in files):
                raise BadInput(f"{where}: key file: want a path (glob) or a list of them")
            files = [glob_regex(x) for x in files]
        example = m.get("example")
        if example is not None and not (isinstance(example, str) or
                                        (isinstance(example, list) and all(isinstance(x, str) for x in example))):
            raise BadInput(f"{where}: key example: want a string or a list of strings")
        marker = m.get("marker", False)
        if not isinstance(marker, bool):
            raise BadInput(f"{where}: key marker: want true or false")
        if marker and (m["role"] != "context" or not m.get("phase")):
            raise BadInput(f"{where}: key marker: only a context meaning with a phase marks one")
        value = {"kind": m["kind"], "role": m["role"], "category": m.get("category", ""),
                 "cause": m.get("cause", ""), "phase": m.get("phase", ""), "names": dict(sorted(names.items())),
                 "note": m.get("note", "")}
        if marker:
            value["marker"] = True
        if example is not None:
            value["example"] = example
        out.append(Meaning(i, fm, files, m.get("call"), value))
    return out


def merge_meanings(entries: list[dict], meanings: list[Meaning], path: str) -> list[str]:
    """Sets each entry's meaning; returns the problems (ambiguous or stale meanings)."""
    by_format: dict[str, list[Meaning]] = {}
    for m in meanings:
        for f in m.formats:
            by_format.setdefault(f, []).append(m)
    problems = []
    for e in entries:
        cands = []
        file = e["where"].rpartition(":")[0]
        for m in by_format.get(e["format"], []):
            if m.files is not None and not any(p.match(file) for p in m.files):
                continue
            if m.call is not None and m.call != e["call"]:
                continue
            cands.append(m)
        if not cands:
            e["meaning"] = None
            continue
        best = max((m.files is not None) + (m.call is not None) for m in cands)
        top = [m for m in cands if (m.files is not None) + (m.call is not None) == best]
        if len({json.dumps(m.value, sort_keys=True) for m in top}) > 1:
            problems.append(f"{path}: [[m]] #{', #'.join(str(m.index) for m in top)}: ambiguous meanings for "
                            f"{e['where']} {e['format']!r} (restrict one with file = or call =)")
        for m in cands:  # a general meaning shadowed by a file-specific one is still in use
            m.used.add(e["format"])
        e["meaning"] = top[0].value
    for m in meanings:
        for f in m.formats:
            if f not in m.used:
                problems.append(f"{path}: [[m]] #{m.index}: stale meaning: no extracted format {f!r}")
    return problems


# ---------------------------------------------------------------------------------------------
# output


def render(entries: list[dict]) -> str:
    out = []
    for e in entries:
        rec = {k: e[k] for k in ("emitter", "version", "where", "part", "call", "level", "format")}
        if e.get("weak"):
            rec["weak"] = True
        rec["meaning"] = e.get("meaning")
        out.append(json.dumps(rec, ensure_ascii=False, separators=(",", ":")))
    return "".join(line + "\n" for line in out)


def read_data(path: str) -> list[dict]:
    out = []
    with open(path, encoding="utf-8") as f:
        for k, line in enumerate(f, start=1):
            if line.strip():
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise BadInput(f"{path}:{k}:{e.colno}: not JSON: {e.msg}")
    return out


def remerge_entries(em: Emitter, path: str) -> list[dict]:
    """The formats of the existing data/<id>.jsonl, meanings dropped, as extract() would give them."""
    if not os.path.exists(path):
        raise BadInput(f"--remerge: no {path} (run a full extraction first)")
    entries = []
    for k, d in enumerate(read_data(path), start=1):
        for key in ("emitter", "version", "where", "part", "call", "level", "format"):
            if key not in d:
                raise BadInput(f"{path}:{k}: key {key}: missing")
        if (d["emitter"], d["version"]) != (em.emitter, em.version):
            raise BadInput(f"{path}:{k}: emitter {d['emitter']} {d['version']} is not {em.path}'s "
                           f"{em.emitter} {em.version}")
        rec = {key: d[key] for key in ("emitter", "version", "where", "part", "call", "level", "format")}
        if is_weak(rec["format"]):  # recomputed as extract() does, so a changed bar applies too
            rec["weak"] = True
        entries.append(rec)
    entries.sort(key=sort_key)
    return entries


def diff(old: list[dict], new: list[dict]) -> list[str]:
    """Formats added, removed and changed (same file and call, similar text) between versions."""
    def key(e):
        return (e["call"], e["format"])

    old_keys = {}
    for e in old:
        old_keys.setdefault(key(e), []).append(e)
    new_keys = {}
    for e in new:
        new_keys.setdefault(key(e), []).append(e)
    removed = [old_keys[k][0] for k in sorted(old_keys) if k not in new_keys]
    added = [new_keys[k][0] for k in sorted(new_keys) if k not in old_keys]
    changed = []
    for a in list(added):
        afile = a["where"].rpartition(":")[0]
        best, score = None, 0.0
        for r in removed:
            if r["call"] != a["call"] or r["where"].rpartition(":")[0] != afile:
                continue
            s = difflib.SequenceMatcher(None, r["format"], a["format"]).ratio()
            if s > score:
                best, score = r, s
        if best is not None and score >= 0.6:
            changed.append((best, a))
            removed.remove(best)
            added.remove(a)
    lines = [f"{len(added)} added, {len(removed)} removed, {len(changed)} changed"]
    for r, a in changed:
        had = r.get("meaning")
        lines.append(f"~ {a['where']} [{a['level']}] {a['format']}")
        lines.append(f"    was {r['where']}: {r['format']}" + (f"   (meaning: {had['kind']}/{had['role']})" if had else ""))
    for a in added:
        lines.append(f"+ {a['where']} [{a['level']}] {a['format']}")
    for r in removed:
        had = r.get("meaning")
        lines.append(f"- {r['where']} [{r['level']}] {r['format']}" + (f"   (meaning: {had['kind']}/{had['role']})" if had else ""))
    return lines


def shown_path(path: str) -> str:
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("emitter_toml")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--git-dir", help="a (bare) git dir: files are read at the toml's rev")
    src.add_argument("--tree", help="a plain source tree")
    src.add_argument("--remerge", action="store_true",
                     help="read no source: re-merge the meanings into the formats of the existing data")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if the data would change")
    ap.add_argument("--diff", metavar="OLD_ID", help="print the changes against data/OLD_ID.jsonl")
    ap.add_argument("--catalogue", default=CATALOGUE, help="the catalogue folder (default: this script's parent)")
    args = ap.parse_args(argv)
    try:
        em = load_emitter(args.emitter_toml)
        out_path = os.path.join(args.catalogue, "data", f"{em.id}.jsonl")
        if args.remerge:
            entries = remerge_entries(em, out_path)
            files = sorted({e["where"].rpartition(":")[0] for e in entries})
        else:
            files = git_files(args.git_dir, em.rev, em) if args.git_dir else tree_files(args.tree, em)
            if not files:
                raise BadInput(f"{em.path}: key paths: no file of the source matches")
            entries = extract(em, files)
        mpath = os.path.join(args.catalogue, "meanings", f"{em.id}.toml")
        problems = merge_meanings(entries, load_meanings(mpath), shown_path(mpath))
        text = render(entries)
        if args.diff:
            old_path = os.path.join(args.catalogue, "data", f"{args.diff}.jsonl")
            if not os.path.exists(old_path):
                raise BadInput(f"--diff {args.diff}: no {old_path}")
            print("\n".join(diff(read_data(old_path), entries)))
            return 0
    except BadInput as e:
        print(f"extract: {e}", file=sys.stderr)
        return 2
    for p in problems:
        print(p, file=sys.stderr)
    rc = 1 if problems else 0
    if args.check:
        try:
            with open(out_path, encoding="utf-8") as f:
                current = f.read()
        except OSError:
            current = None
        if current != text:
            print(f"extract: {shown_path(out_path)} is not what the source gives "
                  f"(re-run without --check)", file=sys.stderr)
            return 1
        return rc
    os.makedirs(os.path.dirname(out_path), exist_ok=True)
    tmp = out_path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, out_path)
    n_err = sum(1 for e in entries if e["level"] in ("error", "warn"))
    n_cls = sum(1 for e in entries if e["level"] in ("error", "warn") and e["meaning"] is not None)
    print(f"{shown_path(out_path)}: {len(entries)} formats from {len(files)} files; "
          f"error/warn classified {n_cls}/{n_err}")
    return rc


if __name__ == "__main__":
    import signal

    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `--diff ... | head` ends quietly
    sys.exit(main(sys.argv[1:]))
