"""Unit tests of lang_go.py (run: python3 -m unittest discover -s tools -p '*_test.py')."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import lang_go  # noqa: E402

KLOG = ["klog.ErrorS structured error arg=1", "klog.InfoS|klog.V(2).InfoS structured info",
        "klog.Warningf printf warn", "*recorder.Eventf printf info arg=3 typearg=1"]


def fmts(src, calls, relpath="a.go"):
    return [(e["line"], e["call"], e["level"], e["format"]) for e in lang_go.extract_file(relpath, src, calls)]


class StructuredTest(unittest.TestCase):
    def test_infos_and_errors_keys(self):
        src = ('func (m *managerImpl) f() {\n'
               '\tklog.InfoS("Eviction manager: attempting to reclaim", "resourceName", r)\n'
               '\tklog.ErrorS(err, "Eviction manager: pod failed to evict", "pod", klog.KObj(pod))\n'
               '\tklog.V(2).InfoS("Killing container with a grace period", "pod", p, "gracePeriod", g)\n'
               '\tklog.V(4).InfoS("too verbose to list", "pod", p)\n'
               '}\n')
        self.assertEqual(fmts(src, KLOG), [
            (2, "klog.InfoS", "info", '"Eviction manager: attempting to reclaim" resourceName={}'),
            (3, "klog.ErrorS", "error", '"Eviction manager: pod failed to evict" err={} pod={}'),
            (4, "klog.V(2).InfoS", "info", '"Killing container with a grace period" pod={} gracePeriod={}')])


class PrintfTest(unittest.TestCase):
    def test_conversions_raw_strings_and_comments(self):
        src = ('// klog.Warningf("in a comment %d", 1)\n'
               'func f() {\n'
               '\tklog.Warningf(`raw %q {x}` + " and %5.2f%% done", a, b) /* klog.Warningf("no") */\n'
               '}\n')
        self.assertEqual(fmts(src, KLOG), [(3, "klog.Warningf", "warn", "raw {} {{x}} and {}% done")])

    def test_event_type_sets_the_level(self):
        src = ('func f() {\n'
               '\tm.recorder.Eventf(m.nodeRef, v1.EventTypeWarning, "EvictionThresholdMet", "Attempting to reclaim %s", r)\n'
               '\tm.recorder.Eventf(pod, v1.EventTypeNormal, "Killing", "Stopping container %s", n)\n'
               '}\n')
        self.assertEqual(fmts(src, KLOG), [(2, "m.recorder.Eventf", "warn", "Attempting to reclaim {}"),
                                           (3, "m.recorder.Eventf", "info", "Stopping container {}")])

    def test_sprintf_argument_and_local_variable(self):
        src = ('func f() {\n'
               '\tmsg := fmt.Sprintf("Container %s failed %s probe", n, p)\n'
               '\tmsg += ", will be restarted"\n'
               '\tklog.Warningf(msg)\n'
               '\tklog.Warningf(fmt.Sprintf("pod %q", x) + " gone")\n'
               '}\n')
        self.assertEqual([g[3] for g in fmts(src, KLOG)],
                         ["Container {} failed {} probe, will be restarted", "pod {} gone"])


class ConstTest(unittest.TestCase):
    def test_const_block_typed_and_var_and_field(self):
        src = ('const (\n'
               '\tReason = "Evicted"\n'
               '\tnodeLowMessageFmt = "The node was low on resource: %v. "\n'
               '\tother string = "not listed"\n'
               ')\n'
               'const message string = "Preempted in order to admit critical pod"\n'
               'func f() {\n'
               '\tstatus.Message = nodeLowMessageFmt +\n'
               '\t\t"continued"\n'
               '\tx := Reason\n'
               '}\n')
        got = fmts(src, ["Reason|*MessageFmt|message|status.Message const warn conv=printf"])
        self.assertEqual(got, [(2, "Reason", "warn", "Evicted"),
                               (3, "nodeLowMessageFmt", "warn", "The node was low on resource: {}. "),
                               (6, "message", "warn", "Preempted in order to admit critical pod"),
                               (8, "status.Message", "warn", "The node was low on resource: {}. continued")])


class InputTest(unittest.TestCase):
    def test_bad_entries(self):
        for entry in ("klog.InfoS", "x nostyle info", "x printf loud", "x printf info arg=z", "x printf info what"):
            with self.subTest(entry=entry), self.assertRaises(ValueError):
                lang_go.extract_file("a.go", "", [entry])

    def test_unterminated_input_does_not_crash(self):
        for src in ('klog.InfoS("open', 'klog.InfoS(`raw', "func f() { klog.InfoS(", "/* x", "'\\"):
            with self.subTest(src=src):
                lang_go.extract_file("a.go", src, KLOG)


if __name__ == "__main__":
    unittest.main()
