"""The committed catalogue is consistent: every data/<id>.jsonl has an emitters/<id>.toml, is in the
driver's own order and rendering, carries exactly the meanings that meanings/<id>.toml gives its
formats (no stale or ambiguous meaning), and gives every extracted error/warn format a meaning
(issue 24: a test fails when an extracted format has no entry; the 95 % bar is coverage.py's report). Needs no emitter source: re-extraction is extract.py --check's job."""

import glob
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import extract  # noqa: E402

def data_ids():
    return sorted(os.path.basename(p)[:-6] for p in glob.glob(os.path.join(extract.CATALOGUE, "data", "*.jsonl")))


class CatalogueTest(unittest.TestCase):
    def test_there_is_a_catalogue(self):
        self.assertTrue(data_ids(), "no data/*.jsonl")

    def test_each_data_file(self):
        for eid in data_ids():
            with self.subTest(emitter=eid):
                self.check(eid)

    def check(self, eid):
        cat = extract.CATALOGUE
        path = os.path.join(cat, "data", f"{eid}.jsonl")
        em = extract.load_emitter(os.path.join(cat, "emitters", f"{eid}.toml"))
        with open(path, encoding="utf-8") as f:
            text = f.read()
        entries = [json.loads(line) for line in text.splitlines()]
        for e in entries:
            self.assertEqual((e["emitter"], e["version"]), (em.emitter, em.version), e["where"])
            self.assertIn(e["level"], extract.LEVELS)
            self.assertEqual(e.get("weak", False), extract.is_weak(e["format"]), e["format"])
        self.assertEqual(entries, sorted(entries, key=extract.sort_key), "data is not in the driver's order")
        self.assertEqual(extract.render(entries), text, "data is not in the driver's rendering")
        # the meanings file gives exactly these meanings, and none is stale or ambiguous
        remerged = [{k: v for k, v in e.items() if k != "meaning"} for e in entries]
        mpath = os.path.join(cat, "meanings", f"{eid}.toml")
        problems = extract.merge_meanings(remerged, extract.load_meanings(mpath), mpath)
        self.assertEqual(problems, [])
        for a, b in zip(entries, remerged):
            self.assertEqual(a["meaning"], b["meaning"], f"{a['where']} {a['format']!r}: re-run extract.py")
        ew = [e for e in entries if e["level"] in ("error", "warn")]
        unclassified = [f"{e['where']} {e['format']!r}" for e in ew if e["meaning"] is None]
        self.assertEqual(unclassified, [], f"{eid}: error/warn formats without a meaning in meanings/{eid}.toml")


if __name__ == "__main__":
    unittest.main()
