"""Unit tests of lang_py.py (run: python3 -m unittest discover -s tools -p '*_test.py')."""

import contextlib
import io
import os
import sys
import textwrap
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import lang_py  # noqa: E402

LOGGING = ["*logger.warning|*log.warning logging warn", "*logger.error|*logger.exception logging error",
           "*logger.info logging info"]


def fmts(src, calls, relpath="a.py"):
    src = textwrap.dedent(src)
    return [(e["line"], e["call"], e["level"], e["format"]) for e in lang_py.extract_file(relpath, src, calls)]


class LoggingTest(unittest.TestCase):
    def test_percent_conversions_are_holes_when_arguments_follow(self):
        got = fmts('logger.warning("Sending process %s closing signal %s (%d%%) %(x)s %.2f", pid, sig)\n', LOGGING)
        self.assertEqual(got, [(1, "logger.warning", "warn", "Sending process {} closing signal {} ({}%) {} {}")])

    def test_without_arguments_the_text_is_printed_as_is(self):
        got = fmts('logger.error("100%s done")\n', LOGGING)
        self.assertEqual(got, [(1, "logger.error", "error", "100%s done")])

    def test_receiver_globs_and_levels(self):
        src = '''
        self._logger.warning(f"rank {r} of {n}")
        log.warning("plain")
        logger.exception("boom")
        logger.debug("not listed")
        other.warning("not a logger")
        '''
        got = fmts(src, LOGGING)
        self.assertEqual(got, [(2, "self._logger.warning", "warn", "rank {} of {}"),
                               (3, "log.warning", "warn", "plain"),
                               (4, "logger.exception", "error", "boom")])

    def test_a_message_without_literal_text_is_left_out(self):
        self.assertEqual(fmts('logger.error(e)\nlogger.error(f"{a}{b}")\n', LOGGING), [])

    def test_literal_braces_are_doubled(self):
        got = fmts('logger.info(f"json {{x}} {v}")\nlogger.info("a {b}")\n', LOGGING)
        self.assertEqual([g[3] for g in got], ["json {{x}} {}", "a {{b}}"])

    def test_keyword_message(self):
        got = fmts('logger.info(msg="hello world", extra=1)\n', ["*logger.info logging info kw=msg"])
        self.assertEqual(got, [(1, "logger.info", "info", "hello world")])


class ExpressionTest(unittest.TestCase):
    def test_format_method_concatenation_and_multiplication(self):
        src = '''
        warnings.warn("Rank {} of {:>4}, {{literal}} {name!r}".format(a, b, name=c) + " end " + str(x))
        warnings.warn("=" * 5)
        '''
        got = fmts(src, ["warnings.warn expr warn"])
        self.assertEqual([g[3] for g in got], ["Rank {} of {}, {{literal}} {} end {}", "====="])

    def test_percent_operator(self):
        got = fmts('warnings.warn("world %d, host %s" % (w, h))\n', ["warnings.warn expr warn"])
        self.assertEqual(got[0][3], "world {}, host {}")

    def test_conditional_gives_both_texts(self):
        got = fmts('warnings.warn("a long one" if x else "the other")\n', ["warnings.warn expr warn"])
        self.assertEqual(sorted(g[3] for g in got), ["a long one", "the other"])

    def test_dedent_and_strip(self):
        src = '''
        warnings.warn(textwrap.dedent(f"""
            first {x}
              second
        """).strip())
        '''
        got = fmts(src, ["warnings.warn expr warn"])
        self.assertEqual(got[0][3], "first {}\n  second")


class NamesTest(unittest.TestCase):
    def test_local_variable_is_followed_with_appends(self):
        src = '''
        def f(x):
            msg = f"The node {x} failed"
            msg += " to join."
            raise RuntimeError(msg)
        '''
        got = fmts(src, ["* raise error"])
        self.assertEqual(got, [(5, "RuntimeError", "error", "The node {} failed to join.")])

    def test_a_later_assignment_on_every_path_replaces_the_earlier_one(self):
        src = '''
        def f(n):
            msg = "first message"
            logger.info(msg)
            msg = "second message"
            logger.info(msg)
        '''
        got = fmts(src, LOGGING)
        self.assertEqual(got, [(4, "logger.info", "info", "first message"),
                               (6, "logger.info", "info", "second message")])

    def test_branch_assignments_are_alternatives(self):
        src = '''
        def f(n):
            if n:
                msg = "one branch"
            else:
                msg = "other branch"
            try:
                pass
            except E:
                msg = "in the handler"
                logger.error(msg)
            logger.info(msg)
        '''
        got = fmts(src, LOGGING)
        self.assertIn((11, "logger.error", "error", "in the handler"), got)
        self.assertEqual(sorted(g[3] for g in got if g[0] == 12),
                         ["in the handler", "one branch", "other branch"])

    def test_conditional_append_keeps_both(self):
        src = '''
        def f(n):
            msg = "base text"
            if n:
                msg += " and a hint"
            logger.error(msg)
        '''
        self.assertEqual(sorted(g[3] for g in fmts(src, LOGGING)), ["base text", "base text and a hint"])

    def test_parameter_is_a_hole_and_module_constant_is_followed(self):
        src = '''
        PREFIX = "torchrun says"
        def f(msg):
            logger.warning(msg)
            logger.warning(PREFIX + ": " + msg)
        '''
        got = fmts(src, LOGGING)
        self.assertEqual(got, [(5, "logger.warning", "warn", "torchrun says: {}")])


class StylesTest(unittest.TestCase):
    def test_raise_with_arg_and_bare(self):
        src = '''
        raise RendezvousTimeoutError
        raise ValueError
        raise mod.ChildFailedError(name=n, failures=f)
        raise NCCLError(code, "bad thing happened")
        raise X("a message") from e
        '''
        got = fmts(src, ["Rendezvous*|ChildFailedError raise error bare", "NCCLError raise error arg=1",
                         "* raise error"])
        self.assertEqual(got, [(2, "RendezvousTimeoutError", "error", "RendezvousTimeoutError"),
                               (4, "mod.ChildFailedError", "error", "ChildFailedError"),
                               (5, "NCCLError", "error", "bad thing happened"),
                               (6, "X", "error", "a message")])

    def test_print_to_stderr_joins_arguments(self):
        src = '''
        print("Killing subprocess", pid, "now", file=sys.stderr)
        print("to stdout", pid)
        print("a", "b", sep="-", file=sys.stderr)
        '''
        got = fmts(src, ["print print error if=file:sys.stderr"])
        self.assertEqual([g[3] for g in got], ["Killing subprocess {} now", "a-b"])

    def test_const_template_and_attribute(self):
        src = '''
        _T = """[${idx}]:
          rank : ${rank} $$5"""
        class P:
            def f(self):
                self.message = f"Signal {-self.exitcode} received by PID {self.pid}"
        '''
        got = fmts(src, ["_T const error conv=template", "self.message const error"])
        self.assertEqual(got, [(2, "_T", "error", "[{}]:\n  rank : {} $5"),
                               (6, "self.message", "error", "Signal {} received by PID {}")])

    def test_returns_of_a_named_function(self):
        src = '''
        class S:
            def __repr__(self):
                def inner():
                    return "not this one"
                if self.x:
                    return f"Num processes: {self.n}\\n" f"Process index: {self.i}"
                return "plain"
        '''
        got = fmts(src, ["__repr__ returns info"])
        self.assertEqual(got, [(7, "__repr__", "info", "Num processes: {}\nProcess index: {}"),
                               (8, "__repr__", "info", "plain")])

    def test_only_limits_an_entry_to_files(self):
        calls = ["*logger.debug logging debug only=pkg/rdzv/*"]
        self.assertEqual(len(fmts('logger.debug("joined the round")\n', calls, "pkg/rdzv/a.py")), 1)
        self.assertEqual(fmts('logger.debug("joined the round")\n', calls, "pkg/other/a.py"), [])


class InputTest(unittest.TestCase):
    def test_bad_calls_entries(self):
        for entry in ("logger.warning", "x nostyle warn", "x expr loud", "x expr warn arg=a", "x expr warn what"):
            with self.subTest(entry=entry), self.assertRaises(ValueError):
                lang_py.extract_file("a.py", "", [entry])

    def test_deep_input_does_not_crash(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            for n in (600, 5000):
                src = "logger.warning(" + "+".join(['"ab"'] * n) + ")\n"
                lang_py.extract_file("deep.py", src, ["*logger.warning logging warn"])
            lang_py.extract_file("deep.py", "x = " + "(" * 10000 + ")" * 10000 + "\n", ["print print error"])

    def test_a_file_that_does_not_parse_gives_nothing_and_says_so(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            got = lang_py.extract_file("bad.py", "print 'py2'\n", ["print print error"])
        self.assertEqual(got, [])
        self.assertIn("bad.py", err.getvalue())


if __name__ == "__main__":
    unittest.main()
