#!/usr/bin/env python3
"""Scales a directory of REAL Flight Recorder dumps (harness/testdata/fr/<case>/, written by
torch from real Gloo runs) to an N-rank job, for the FR benchmark of `hanglab bench` and its test.

usage: .venv/bin/python harness/bench/fr_scale.py SRC_DIR OUT_DIR --ranks N
                        [--pg-key as-written|entries] [--culprit-rank R]

Every rank's dump is a real rank's dump: the same keys, entries, entry fields and frames, read
and written back with the standard library's pickle (protocol 2, torch's). The roles come from
the source dumps themselves, never from the case's name:
  - members: the ranks of pg_config; a member with no dump is a missing rank;
  - among the dumps, the ranks whose recorded calls (process group, seq, op, sizes, dtypes) are
    the strict majority's are healthy peers; every other dumped rank is a culprit.
In the N-rank set, the culprits (dumped or missing) sit at ranks R, R+1, ... (default N//2+1)
and keep their own dump or its absence; every other rank gets a healthy peer's dump (cycling
through the peers). Rewritten per rank: pg_config's ranks ("[0, 1, ..., N-1]"); with
--pg-key entries, also pg_config's key, name and desc set to the group the entries name
(process_group = ("0", "default_pg")), the shape NCCL dumps have: torch's Gloo dumps key it
by "" while their entries say "0", which torchfrtrace cannot join (KeyError ('0', rank)).

Files are named as torch names them (rank_<r>). Prints one JSON line: ranks, culprits,
missing, peers used, bytes written. Exit 2 on bad input (a message naming the file).
"""
import argparse
import json
import os
import pickle
import re
import sys


def fail(msg):
    print(f"fr_scale: {msg}", file=sys.stderr)
    sys.exit(2)


def load_dumps(src):
    dumps = {}
    if not os.path.isdir(src):
        fail(f"{src}: not a directory")
    for name in sorted(os.listdir(src)):
        m = re.fullmatch(r"(.*?)(\d+)", name)
        if not m:
            continue
        path = os.path.join(src, name)
        try:
            with open(path, "rb") as f:
                d = pickle.load(f)
        except Exception as e:  # noqa: BLE001 - any unreadable file is bad input
            fail(f"{path}: not a pickled Flight Recorder dump ({type(e).__name__}: {e})")
        if not isinstance(d, dict) or "entries" not in d or "pg_config" not in d:
            fail(f"{path}: not a Flight Recorder dump (no entries / pg_config)")
        dumps[int(m.group(2))] = d
    if not dumps:
        fail(f"{src}: no dump named <prefix><rank>")
    return dumps


def members(dumps):
    ranks = set(dumps)
    for d in dumps.values():
        for cfg in d["pg_config"].values():
            r = cfg.get("ranks", "[]")
            ranks.update(json.loads(r) if isinstance(r, str) else r)
    return sorted(ranks)


def calls(d):
    return tuple((e.get("process_group", ("", ""))[0], e.get("collective_seq_id"), e.get("profiling_name"),
                  repr(e.get("input_sizes")), repr(e.get("input_dtypes"))) for e in d["entries"])


def roles(dumps, world):
    by_calls = {}
    for r, d in sorted(dumps.items()):
        by_calls.setdefault(calls(d), []).append(r)
    groups = sorted(by_calls.values(), key=len, reverse=True)
    if len(groups) > 1 and len(groups[0]) == len(groups[1]):
        fail("no strict majority of the dumps recorded the same calls: cannot tell the healthy peers")
    peers = groups[0]
    culprits = sorted(r for g in groups[1:] for r in g)
    missing = [r for r in world if r not in dumps]
    return peers, culprits, missing


def rewrite(d, n, pg_key):
    out = dict(d)
    # torch writes the ranks as the string "[0, 1, 2]"; a list stays a list.
    as_str = all(isinstance(c.get("ranks", ""), str) for c in d["pg_config"].values())
    ranks = str(list(range(n))) if as_str else list(range(n))
    if pg_key == "entries":
        named = {}
        for e in d["entries"]:
            pg = e.get("process_group")
            if pg:
                named.setdefault(pg[0], pg[1])
        out["pg_config"] = {name: {"name": name, "desc": desc, "ranks": ranks} for name, desc in named.items()}
    else:
        out["pg_config"] = {k: dict(v, ranks=ranks) for k, v in d["pg_config"].items()}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("src")
    ap.add_argument("out")
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--pg-key", choices=["as-written", "entries"], default="as-written")
    ap.add_argument("--culprit-rank", type=int, default=None)
    a = ap.parse_args()
    dumps = load_dumps(a.src)
    world = members(dumps)
    peers, culprits, missing = roles(dumps, world)
    odd = sorted(culprits + missing)
    n = a.ranks
    at = a.culprit_rank if a.culprit_rank is not None else n // 2 + 1
    if n < len(odd) + 1 or at < 0 or at + len(odd) > n:
        fail(f"--ranks {n} / --culprit-rank {at}: no room for {len(odd)} culprit(s) and a healthy peer")
    os.makedirs(a.out, exist_ok=True)
    for f in os.listdir(a.out):
        if re.fullmatch(r"rank_\d+", f):
            os.remove(os.path.join(a.out, f))
    # One rewritten (and pickled) copy per source rank: every target rank of that role gets the same bytes.
    blobs = {r: pickle.dumps(rewrite(d, n, a.pg_key), protocol=2) for r, d in dumps.items()}
    placed = {at + i: src for i, src in enumerate(odd)}
    out_culprits, out_missing, written = [], [], 0
    for r in range(n):
        src = placed.get(r)
        if src is None:
            src = peers[r % len(peers)]
        elif src in missing:
            out_missing.append(r)
            continue
        else:
            out_culprits.append(r)
        with open(os.path.join(a.out, f"rank_{r}"), "wb") as f:
            written += f.write(blobs[src])
    print(json.dumps({"ranks": n, "culprits": out_culprits, "missing": out_missing, "source_peers": peers,
                      "source_culprits": culprits, "source_missing": missing, "pg_key": a.pg_key, "bytes": written}))


if __name__ == "__main__":
    main()
