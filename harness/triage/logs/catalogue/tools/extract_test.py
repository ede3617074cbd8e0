"""Unit tests of the driver extract.py (run: python3 -m unittest discover -s tools -p '*_test.py')."""

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import extract  # noqa: E402

EMITTER = """emitter = "demo"
version = "1.0"
repo = "example/demo"
rev = "v1.0"
language = "c"
paths = ["src/**/*.c"]
exclude = ["src/test/**"]
calls = ["WARN printf warn", "INFO printf info"]
"""

SOURCE = """void f(int r) {
  WARN("NET/IB : Got completion from peer %s with status=%d\\nsecond line %d\\n\\n", h, s, x);
  INFO(NCCL_INIT, "ok %d", r);
  WARN("%s", other);
}
"""

MEANINGS = """[[m]]
formats = ["NET/IB : Got completion from peer {} with status={}"]
kind = "IbError"
role = "root"
category = "network"
cause = "ib_error"
names = {peer_host = 0}
note = "test"
"""


class Catalogue:
    """A throwaway catalogue + source tree."""

    def __init__(self, meanings=MEANINGS, emitter=EMITTER, source=SOURCE):
        self.tmp = tempfile.TemporaryDirectory()
        root = self.tmp.name
        self.cat = os.path.join(root, "cat")
        self.tree = os.path.join(root, "tree")
        for d in ("emitters", "meanings", "data"):
            os.makedirs(os.path.join(self.cat, d))
        os.makedirs(os.path.join(self.tree, "src", "sub"))
        os.makedirs(os.path.join(self.tree, "src", "test"))
        with open(os.path.join(self.tree, "src", "sub", "a.c"), "w") as f:
            f.write(source)
        with open(os.path.join(self.tree, "src", "test", "t.c"), "w") as f:
            f.write('WARN("from a test %d", 1);\n')
        self.toml = os.path.join(self.cat, "emitters", "demo-1.0.toml")
        with open(self.toml, "w") as f:
            f.write(emitter)
        if meanings is not None:
            with open(os.path.join(self.cat, "meanings", "demo-1.0.toml"), "w") as f:
                f.write(meanings)

    def run(self, *extra):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = extract.main([self.toml, "--tree", self.tree, "--catalogue", self.cat, *extra])
        return rc, out.getvalue(), err.getvalue()

    def data(self):
        with open(os.path.join(self.cat, "data", "demo-1.0.jsonl")) as f:
            return [json.loads(line) for line in f]

    def close(self):
        self.tmp.cleanup()


class GlobTest(unittest.TestCase):
    def test_globs(self):
        g = extract.glob_regex
        self.assertTrue(g("src/**/*.cc").match("src/init.cc"))
        self.assertTrue(g("src/**/*.cc").match("src/a/b/init.cc"))
        self.assertFalse(g("src/*.cc").match("src/a/init.cc"))
        self.assertTrue(g("src/{srun,slurmd}/**").match("src/srun/x.c"))
        self.assertFalse(g("src/{srun,slurmd}/**").match("src/sbatch/x.c"))
        self.assertTrue(g("help-*.txt").match("help-mpi.txt"))


class PartsTest(unittest.TestCase):
    def test_split_trim_drop(self):
        self.assertEqual(extract.split_parts("  a {}\n\n{}\n  b  "), ["a {}", "b"])

    def test_weak(self):
        self.assertTrue(extract.is_weak("ok {}"))
        self.assertTrue(extract.is_weak("------------------------------"))
        self.assertTrue(extract.is_weak("[{}:{}] {} -> {} ({})"))
        self.assertFalse(extract.is_weak("Socket Timeout"))

    def test_literal_and_holes(self):
        self.assertEqual(extract.literal_text("a{}b{{c}}"), "ab{c}")
        self.assertEqual(extract.hole_count("a{}b{{c}}{}"), 2)


class DriverTest(unittest.TestCase):
    def test_extract_merge_and_reproduce(self):
        c = Catalogue()
        try:
            rc, out, err = c.run()
            self.assertEqual(rc, 0, err)
            d = c.data()
            self.assertEqual([(e["where"], e["part"], e["format"]) for e in d], [
                ("src/sub/a.c:2", 0, "NET/IB : Got completion from peer {} with status={}"),
                ("src/sub/a.c:2", 1, "second line {}"),
                ("src/sub/a.c:3", 0, "ok {}"),
            ])
            self.assertEqual(d[0]["meaning"]["cause"], "ib_error")
            self.assertEqual(d[0]["meaning"]["names"], {"peer_host": 0})
            self.assertIsNone(d[1]["meaning"])
            self.assertTrue(d[2]["weak"])
            self.assertNotIn("weak", d[0])
            # reproducible: --check passes, and fails once the data differs
            self.assertEqual(c.run("--check")[0], 0)
            path = os.path.join(c.cat, "data", "demo-1.0.jsonl")
            with open(path, "a") as f:
                f.write("\n")
            self.assertEqual(c.run("--check")[0], 1)
        finally:
            c.close()

    def test_stale_meaning_is_reported(self):
        c = Catalogue(meanings=MEANINGS.replace("status={}", "status={} gone"))
        try:
            rc, out, err = c.run()
            self.assertEqual(rc, 1)
            self.assertIn("stale meaning", err)
        finally:
            c.close()

    def test_ambiguous_meanings_are_reported_and_file_restricts(self):
        other = MEANINGS.replace('cause = "ib_error"', 'cause = "other"')
        c = Catalogue(meanings=MEANINGS + other)
        try:
            rc, _, err = c.run()
            self.assertEqual(rc, 1)
            self.assertIn("ambiguous", err)
        finally:
            c.close()
        c = Catalogue(meanings=MEANINGS + other.replace("[[m]]\n", '[[m]]\nfile = "src/**/a.c"\n'))
        try:
            rc, _, err = c.run()
            self.assertEqual(rc, 0, err)
            self.assertEqual(c.data()[0]["meaning"]["cause"], "other")
        finally:
            c.close()

    def test_bad_input_is_one_line_exit_2(self):
        for bad in (MEANINGS.replace('role = "root"', 'role = "cause"'),
                    MEANINGS.replace('kind = "IbError"', 'kind = "NoSuchKind"'),
                    MEANINGS.replace("peer_host = 0", "peer_host = 5"),
                    MEANINGS + "colour = 1\n",
                    "[[m]\n"):
            c = Catalogue(meanings=bad)
            try:
                rc, _, err = c.run()
                self.assertEqual(rc, 2, bad)
                self.assertEqual(len(err.strip().splitlines()), 1, err)
                self.assertFalse(os.path.exists(os.path.join(c.cat, "data", "demo-1.0.jsonl")))
            finally:
                c.close()
        c = Catalogue(emitter=EMITTER.replace('language = "c"', 'language = "c"\nspeed = 1'))
        try:
            self.assertEqual(c.run()[0], 2)
        finally:
            c.close()

    def test_marker_only_on_a_context_meaning_with_a_phase(self):
        # `marker = true`: the emitter prints the line only in its phase (catalogue README); written into the
        # data only when true, refused on a failure's meaning or without a phase.
        ctx = MEANINGS.replace('kind = "IbError"', 'kind = "InitBegin"').replace('role = "root"', 'role = "context"')
        ctx = ctx.replace('category = "network"\n', "").replace('cause = "ib_error"\n', "")
        for meanings, rc_want, marker in ((ctx.replace('note = "test"', 'phase = "init"\nmarker = true\nnote = "test"'), 0, True),
                                          (ctx.replace('note = "test"', 'phase = "init"\nnote = "test"'), 0, None),
                                          (ctx.replace('note = "test"', 'marker = true\nnote = "test"'), 2, None),
                                          (MEANINGS.replace('note = "test"', 'phase = "init"\nmarker = true\nnote = "test"'), 2, None),
                                          (ctx.replace('note = "test"', 'phase = "init"\nmarker = "yes"\nnote = "test"'), 2, None)):
            c = Catalogue(meanings=meanings)
            try:
                rc, _, err = c.run()
                self.assertEqual(rc, rc_want, meanings + err)
                if rc == 0:
                    got = [e["meaning"] for e in c.data() if e["meaning"]]
                    self.assertEqual(len(got), 1)
                    self.assertEqual(got[0].get("marker"), marker)
            finally:
                c.close()

    def test_diff(self):
        c = Catalogue()
        try:
            self.assertEqual(c.run()[0], 0)
            os.rename(os.path.join(c.cat, "data", "demo-1.0.jsonl"), os.path.join(c.cat, "data", "demo-0.9.jsonl"))
            with open(os.path.join(c.tree, "src", "sub", "a.c"), "w") as f:
                f.write(SOURCE.replace("ok %d", "ok now %d").replace("second line", "2nd line"))
            rc, out, _ = c.run("--diff", "demo-0.9")
            self.assertEqual(rc, 0)
            self.assertIn("0 added, 0 removed, 2 changed", out)
            self.assertIn("~ src/sub/a.c:3 [info] ok now {}", out)
        finally:
            c.close()

    def test_remerge_reads_no_source_and_matches_a_full_run(self):
        c = Catalogue()
        try:
            self.assertEqual(c.run()[0], 0)
            path = os.path.join(c.cat, "data", "demo-1.0.jsonl")
            remerge = [c.toml, "--remerge", "--catalogue", c.cat]

            def run_remerge(*extra):
                out, err = io.StringIO(), io.StringIO()
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                    rc = extract.main(remerge + list(extra))
                return rc, err.getvalue()

            self.assertEqual(run_remerge("--check"), (0, ""))  # unchanged meanings: same bytes
            # a meanings edit: --check sees it, --remerge writes what a full run writes
            with open(os.path.join(c.cat, "meanings", "demo-1.0.toml"), "w") as f:
                f.write(MEANINGS.replace('category = "network"\ncause = "ib_error"',
                                         'category = "unknown"\ncause = "unknown"')
                        + MEANINGS.replace("NET/IB : Got completion from peer {} with status={}", "ok {}")
                                  .replace('names = {peer_host = 0}', 'file = "src/sub/*.c"'))
            self.assertEqual(run_remerge("--check")[0], 1)
            shutil.rmtree(c.tree)  # no source at all
            self.assertEqual(run_remerge()[0], 0)
            with open(path, encoding="utf-8") as f:
                remerged = f.read()
            self.assertEqual(run_remerge("--check"), (0, ""))
            d = c.data()
            self.assertEqual(d[0]["meaning"]["cause"], "unknown")
            self.assertEqual(d[2]["meaning"]["cause"], "ib_error")
            self.assertTrue(d[2]["weak"])
            self.assertIsNone(d[1]["meaning"])
        finally:
            c.close()
        c = Catalogue(meanings=MEANINGS.replace('category = "network"\ncause = "ib_error"',
                                                'category = "unknown"\ncause = "unknown"')
                      + MEANINGS.replace("NET/IB : Got completion from peer {} with status={}", "ok {}")
                                .replace('names = {peer_host = 0}', 'file = "src/sub/*.c"'))
        try:
            self.assertEqual(c.run()[0], 0)
            with open(os.path.join(c.cat, "data", "demo-1.0.jsonl"), encoding="utf-8") as f:
                self.assertEqual(f.read(), remerged)  # byte for byte what the full run gives
            # a stale meaning is reported as in a full run; no data file is bad input
            with open(os.path.join(c.cat, "meanings", "demo-1.0.toml"), "a") as f:
                f.write(MEANINGS.replace("status={}", "status={} gone"))
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                rc = extract.main([c.toml, "--remerge", "--catalogue", c.cat])
            self.assertEqual(rc, 1)
            self.assertIn("stale meaning", err.getvalue())
            os.remove(os.path.join(c.cat, "data", "demo-1.0.jsonl"))
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                self.assertEqual(extract.main([c.toml, "--remerge", "--catalogue", c.cat]), 2)
        finally:
            c.close()

    def test_git_dir(self):
        c = Catalogue()
        try:
            git = ["git", "-C", c.tree, "-c", "user.name=t", "-c", "user.email=t@t"]
            subprocess.run(git + ["init", "-q"], check=True)
            subprocess.run(git + ["add", "."], check=True)
            subprocess.run(git + ["commit", "-qm", "x"], check=True)
            subprocess.run(git + ["tag", "v1.0"], check=True)
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                rc = extract.main([c.toml, "--git-dir", os.path.join(c.tree, ".git"), "--catalogue", c.cat])
            self.assertEqual(rc, 0, err.getvalue())
            self.assertEqual(len(c.data()), 3)
        finally:
            c.close()


if __name__ == "__main__":
    unittest.main()
