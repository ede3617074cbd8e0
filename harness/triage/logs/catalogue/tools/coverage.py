#!/usr/bin/env python3
"""Coverage of the message catalogue: classified / extracted per emitter (data/<id>.jsonl).

    python3 tools/coverage.py [--markdown] [--min PERCENT] [--catalogue DIR] [ID ...]

Counted per data file (one emitter at one version): its error/warn entries (one printed line
of one format at one place), those with a meaning, and the percentage; info/debug entries
count only when they carry a meaning (the ones a catalogue chose to include), shown apart.
Weak entries (too generic to match alone) are counted like the others and shown apart.

--min P exits 1 when an emitter's error/warn coverage is under P percent (the bar of issue 24
is 95). --markdown prints the table for the catalogue README.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

TOOLS = os.path.dirname(os.path.abspath(__file__))
CATALOGUE = os.path.dirname(TOOLS)


def count(path: str) -> dict:
    c = {"ew": 0, "ew_cls": 0, "info_cls": 0, "info": 0, "weak": 0, "roles": {}}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            e = json.loads(line)
            m = e.get("meaning")
            if e.get("weak"):
                c["weak"] += 1
            if e["level"] in ("error", "warn"):
                c["ew"] += 1
                c["ew_cls"] += m is not None
            else:
                c["info"] += 1
                c["info_cls"] += m is not None
            if m is not None:
                c["roles"][m["role"]] = c["roles"].get(m["role"], 0) + 1
    return c


def pct(a: int, b: int) -> float:
    return 100.0 * a / b if b else 100.0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("ids", nargs="*", help="data ids (default: every data/*.jsonl)")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--min", type=float, default=None)
    ap.add_argument("--catalogue", default=CATALOGUE)
    args = ap.parse_args(argv)
    data_dir = os.path.join(args.catalogue, "data")
    ids = args.ids or sorted(f[:-6] for f in os.listdir(data_dir) if f.endswith(".jsonl"))
    rows = []
    for i in ids:
        path = os.path.join(data_dir, f"{i}.jsonl")
        if not os.path.exists(path):
            print(f"coverage: no {path}", file=sys.stderr)
            return 2
        rows.append((i, count(path)))
    under = [i for i, c in rows if args.min is not None and pct(c["ew_cls"], c["ew"]) < args.min]
    if args.markdown:
        print("| emitter | error/warn classified | % | info/debug included (of extracted) | weak | root / echo / exit / benign / context |")
        print("| --- | ---: | ---: | ---: | ---: | --- |")
        for i, c in rows:
            r = c["roles"]
            roles = " / ".join(str(r.get(k, 0)) for k in ("root", "echo", "exit", "benign", "context"))
            print(f"| {i} | {c['ew_cls']} / {c['ew']} | {pct(c['ew_cls'], c['ew']):.1f} | "
                  f"{c['info_cls']} / {c['info']} | {c['weak']} | {roles} |")
    else:
        for i, c in rows:
            print(f"{i:32} error/warn {c['ew_cls']:5} / {c['ew']:<5} ({pct(c['ew_cls'], c['ew']):5.1f} %)  "
                  f"info/debug included {c['info_cls']:4} of {c['info']:<5} weak {c['weak']}")
    for i in under:
        print(f"coverage: {i} is under {args.min:g} %", file=sys.stderr)
    return 1 if under else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
