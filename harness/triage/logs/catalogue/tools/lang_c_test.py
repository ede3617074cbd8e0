"""Unit tests of lang_c.py (run: python3 -m unittest discover -s tools -p '*_test.py')."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import lang_c  # noqa: E402


def fmts(text, calls, relpath="a.cc"):
    return [(e["line"], e["call"], e["level"], e["format"]) for e in lang_c.extract_file(relpath, text, calls)]


class PrintfTest(unittest.TestCase):
    def test_conversions_become_holes(self):
        got = fmts('void f() {\n  WARN("Call to %s failed : %d%% %-5.3f %zu %lld %m", a, b);\n}\n',
                   ["WARN printf warn"])
        self.assertEqual(got, [(2, "WARN", "warn", "Call to {} failed : {}% {} {} {} {}")])

    def test_first_string_argument_and_concatenation(self):
        got = fmts('INFO(NCCL_INIT|NCCL_NET, "NET/IB : " "Using %s" "%" PRIu64 " x", dev, n);',
                   ["INFO printf info"])
        self.assertEqual(got, [(1, "INFO", "info", "NET/IB : Using {}{} x")])

    def test_macro_body_with_continuations_and_prefix(self):
        src = ('#define NCCLCHECK(call) do { \\\n'
               '  if (RES != ncclSuccess) { \\\n'
               '    /* Print the back trace*/ \\\n'
               '    INFO_LOC(NCCL_ALL, "-> %d", RES); \\\n'
               '  } } while (0)\n')
        got = fmts(src, ["INFO_LOC printf info prefix=%s:%d (%s) "])
        self.assertEqual(got, [(4, "INFO_LOC", "info", "{}:{} ({}) -> {}")])

    def test_literal_braces_are_doubled(self):
        got = fmts('error("bad json {%s}", s);', ["error printf error"])
        self.assertEqual(got[0][3], "bad json {{{}}}")

    def test_slurm_record_conversion(self):
        got = fmts('error("%pJ: step %u cancelled", job, x);', ["error printf error pconv=AJsS"])
        self.assertEqual(got[0][3], "{}: step {} cancelled")

    def test_record_conversions_only_when_asked(self):
        got = fmts('error("Detected %"PRIu64" oom-kill event(s) in %ps.", n, s);', ["error printf error pconv=AJsS"])
        self.assertEqual(got[0][3], "Detected {} oom-kill event(s) in {}.")
        got = fmts('WARN("ptr %ps", p);', ["WARN printf warn"])
        self.assertEqual(got[0][3], "ptr {}s")

    def test_double_parentheses_and_string_macros(self):
        src = ('#define HOSTFORMAT "[%s:%05d] "\n'
               'BTL_ERROR(("recv failed: %s (%d)", strerror(e), e));\n'
               'snprintf(buf, n, HOSTFORMAT "*** Process received signal ***\\n", h, p);\n'
               'snprintf(buf, n, "%s", x);\n')
        got = fmts(src, ["BTL_ERROR printf error", "snprintf printf error arg=2 only=*/stacktrace.c"],
                   relpath="opal/util/stacktrace.c")
        self.assertEqual([g[3] for g in got], ["recv failed: {} ({})", "[{}:{}] *** Process received signal ***\n"])
        got = fmts(src, ["snprintf printf error arg=2 only=*/stacktrace.c"], relpath="opal/util/other.c")
        self.assertEqual(got, [])

    def test_no_literal_no_format(self):
        self.assertEqual(fmts("WARN(msg);", ["WARN printf warn"]), [])

    def test_members_and_definitions_are_not_calls(self):
        src = ('#define WARN(...) log("%s", __VA_ARGS__)\n'
               'x.WARN("not me %d", 1);\n'
               'other::WARN("nor me");\n'
               '::WARN("but me");\n')
        got = fmts(src, ["WARN printf warn"])
        self.assertEqual([g[3] for g in got], ["but me"])

    def test_comments_and_strings_with_comment_marks(self):
        src = ('// WARN("commented %d");\n/* WARN("block");\n*/\n'
               'WARN("url http://x/*y*/ %s", a); // tail\n')
        got = fmts(src, ["WARN printf warn"])
        self.assertEqual(got, [(4, "WARN", "warn", "url http://x/*y*/ {}")])


class StrStyleTest(unittest.TestCase):
    def test_torch_check_message_after_condition(self):
        src = 'TORCH_CHECK(x > 0, "Expected ", x, " to be positive, got {", y, "}");'
        got = fmts(src, ["TORCH_CHECK str error arg=1"])
        self.assertEqual(got[0][3], "Expected {} to be positive, got {{{}}}")

    def test_nested_builders(self):
        src = ('C10_THROW_ERROR(DistBackendError, c10::str("NCCL error in: ", __FILE__, ":", __LINE__, ", ", '
               'fmt::format("rank {} of {:d}", r, n)));')
        got = fmts(src, ["C10_THROW_ERROR str error arg=1"])
        self.assertEqual(got[0][3], "NCCL error in: {}:{}, rank {} of {}")

    def test_local_variable_followed(self):
        src = ('void f() {\n'
               '  std::string msg = c10::str("Watchdog timed out after ", t, "ms");\n'
               '  msg += " for rank ";\n'
               '  msg += std::to_string(r);\n'
               '  LOG(ERROR) << logPrefix() << msg;\n'
               '}\n')
        got = fmts(src, ["LOG(ERROR) stream error"])
        self.assertEqual(got, [(5, "LOG(ERROR)", "error", "{}Watchdog timed out after {}ms for rank {}")])

    def test_str_append_followed(self):
        # TSL's gRPC status (tsl/distributed_runtime/rpc/grpc_state.h:188-195@google/tsl 2e2b2c7): the message is
        # built with StrAppend(&error_msg, ...) and handed on by a call that prints it
        src = ('void f() {\n'
               '  string error_msg = std::string(s.message());\n'
               '  strings::StrAppend(&error_msg, "\\nAdditional GRPC error information");\n'
               '  if (target_) {\n'
               '    strings::StrAppend(&error_msg, " from remote target ", *target_);\n'
               '  }\n'
               '  absl::StrAppend(&error_msg, " while calling ", method_, ":");\n'
               '  s = errors::CreateWithUpdatedMessage(s, error_msg);\n'
               '}\n')
        got = fmts(src, ["errors::CreateWithUpdatedMessage str error arg=1"])
        self.assertEqual(got, [(8, "errors::CreateWithUpdatedMessage", "error",
                                "{}\nAdditional GRPC error information from remote target {} while calling {}:")])

    def test_parameter_is_not_an_earlier_local(self):
        src = ('void f() {\n'
               '  auto msg = c10::str("connect failed with ", err);\n'
               '  logAndThrow(msg, msg);\n'
               '}\n'
               'void g() {\n'
               '  static auto invalidArgument = [](const std::string& msg) {\n'
               '    TORCH_CHECK(false, "ProcessGroupGloo::broadcast: " + msg);\n'
               '  };\n'
               '}\n')
        got = fmts(src, ["TORCH_CHECK str error arg=1", "logAndThrow str error nargs=1"])
        self.assertEqual([g[3] for g in got], ["connect failed with {}", "ProcessGroupGloo::broadcast: {}"])

    def test_stringstream_followed(self):
        src = ('void f() {\n'
               '  std::stringstream ss;\n'
               "  ss << \"Detected mismatch. Rank \" << r << \" is running \" << fp << '.';\n"
               '  TORCH_CHECK(false, ss.str());\n'
               '}\n')
        got = fmts(src, ["TORCH_CHECK str error arg=1"])
        self.assertEqual(got, [(4, "TORCH_CHECK", "error", "Detected mismatch. Rank {} is running {}.")])

    def test_member_calls_only_when_asked(self):
        src = 'pair_->signalExceptionExternal(GLOO_ERROR_MSG("Connection closed by peer ", p));'
        self.assertEqual(fmts(src, ["signalExceptionExternal str error", "GLOO_ERROR_MSG builder -"]), [])
        got = fmts(src, ["signalExceptionExternal str error member", "GLOO_ERROR_MSG builder -"])
        self.assertEqual(got[0][3], "Connection closed by peer {}")

    def test_nargs(self):
        got = fmts('throw NCCLException(*api, "NCCL Send failed", result, comm);', ["NCCLException str error arg=1 nargs=1"])
        self.assertEqual(got[0][3], "NCCL Send failed")

    def test_stream_operands_and_endl(self):
        src = 'LOG(WARNING) << "a " << (x ? "y" : "z") << " b" << std::endl;'
        got = fmts(src, ["LOG(WARNING) stream warn"])
        self.assertEqual(got[0][3], "a {} b\n")

    def test_stream_name_with_more_arguments(self):
        src = 'LOG(WARNING, rank) << "stalled"; LOG_FIRST_N(ERROR, 1) << "once"; LOG(WARNINGS) << "no";'
        got = fmts(src, ["LOG(WARNING) stream warn", "LOG_FIRST_N(ERROR) stream error"])
        self.assertEqual([g[3] for g in got], ["stalled", "once"])

    def test_throw_qualified(self):
        src = 'throw ::gloo::IoException(GLOO_ERROR_MSG("Timed out waiting ", t, "ms"));'
        got = fmts(src, ["gloo::IoException str error", "GLOO_ERROR_MSG builder -"])
        self.assertEqual(got[0][3], "Timed out waiting {}ms")

    def test_stream_in_macro_bodies_and_across_ifdef(self):
        src = ('#define C10D_ERROR(...) LOG(ERROR) << "[c10d] " << fmt::format(__VA_ARGS__)\n'
               '#define C10D_WARNING(...) LOG(WARNING) << "[c10d] " << fmt::format(__VA_ARGS__)\n'
               'void f() {\n  LOG(ERROR) << "a: " << x\n#ifdef HAS_Y\n      << ", y: " << y\n#endif\n      << ", z: " << z;\n}\n')
        got = fmts(src, ["LOG(ERROR) stream error", "LOG(WARNING) stream warn"])
        self.assertEqual([g[3] for g in got], ["[c10d] {}", "[c10d] {}", "a: {}, y: {}, z: {}"])

    def test_stream_needs_shift(self):
        self.assertEqual(fmts('LOG(ERROR);', ["LOG(ERROR) stream error"]), [])

    def test_builder_spec(self):
        src = 'GLOO_THROW_IO_EXCEPTION(GLOO_ERROR_MSG("Read error ", peer.str(), ": ", strerror(errno)));'
        got = fmts(src, ["GLOO_THROW_IO_EXCEPTION str error", "GLOO_ERROR_MSG builder -"])
        self.assertEqual(got[0][3], "Read error {}: {}")

    def test_fmt_style(self):
        got = fmts('C10D_WARNING("Store {} timed out after {:.2f}s {{ok}}", a, b);', ["C10D_WARNING fmt warn"])
        self.assertEqual(got[0][3], "Store {} timed out after {}s {{ok}}")

    def test_raw_string(self):
        got = fmts('TORCH_WARN(R"(multi\nline "quoted")");', ["TORCH_WARN str warn"])
        self.assertEqual(got[0][3], 'multi\nline "quoted"')
        self.assertEqual(got[0][0], 1)


class ReturnsTest(unittest.TestCase):
    def test_error_strings(self):
        src = ('const char* ncclGetErrorString(ncclResult_t code) {\n'
               '  switch (code) {\n'
               '    case ncclSuccess: return "no error";\n'
               '    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";\n'
               '    default: return "unknown result code";\n'
               '  }\n}\n'
               'void g() { printf("%s", ncclGetErrorString(r)); }\n')
        got = fmts(src, ["ncclGetErrorString returns error"])
        self.assertEqual([g[3] for g in got], ["no error", "unhandled system error (run with NCCL_DEBUG=INFO for details)",
                                               "unknown result code"])
        self.assertEqual(got[1][0], 4)


    def test_assigned_messages(self):
        src = ('std::string detail(int error) {\n'
               '  std::string interpret;\n'
               '  switch (error) {\n'
               '    case 1:\n'
               '      interpret =\n'
               '          "ncclSystemError: System call failed. ";\n'
               '      interpret += "It can be also caused by " + peer + " exiting.";\n'
               '      break;\n'
               '    default: interpret = "Unknown NCCL error!";\n'
               '  }\n'
               '  if (interpret == other) {}\n'
               '  return interpret + err;\n}\n')
        got = fmts(src, ["interpret assigns error"])
        self.assertEqual(got, [(5, "interpret", "error", "ncclSystemError: System call failed. "),
                               (7, "interpret", "error", "It can be also caused by {} exiting."),
                               (9, "interpret", "error", "Unknown NCCL error!")])


class HelpTopicsTest(unittest.TestCase):
    def test_topics(self):
        text = ("# comment\n[mpi-abort]\nMPI_ABORT was invoked on rank %d in communicator %s\n"
                "with errorcode %d.\n#\n[other]\n%s\n")
        got = fmts(text, ["show_help helptopics error"], relpath="help-mpi-api.txt")
        self.assertEqual(got, [(2, "show_help:mpi-abort", "error",
                                "MPI_ABORT was invoked on rank {} in communicator {}\nwith errorcode {}.")])


class RobustnessTest(unittest.TestCase):
    def test_odd_input_never_raises(self):
        for text in ['WARN("unterminated', 'WARN(', 'LOG(ERROR) << ', '"\\', "R\"x(", "}}}))) WARN(((",
                     "\x00\xff WARN(\"%\")", 'u8"a" L"b" WARN(u8"wide %s")']:
            lang_c.extract_file("a.c", text, ["WARN printf warn", "LOG(ERROR) stream error"])

    def test_bad_spec(self):
        with self.assertRaises(ValueError):
            lang_c.extract_file("a.c", "", ["WARN"])
        with self.assertRaises(ValueError):
            lang_c.extract_file("a.c", "", ["WARN printf loud"])


if __name__ == "__main__":
    unittest.main()
