// classify_cli.cpp: what a command-line program's own error line means, one of classify_text's families:
// Python argparse's usage error and a name resolver's failure printed outside any exception.
#include <string>

#include "triage/logs/parse_parts.hpp"

namespace hanglab::logparse {

namespace {

// argparse's own messages that ArgumentParser.error() prints after "%(prog)s: error: " (Lib/argparse.py@v3.11.7:
// parse_args 1871 "unrecognized arguments: %s", _parse_known_args 2142 "the following arguments are required: %s",
// 2157 "one of the arguments %s is required", _parse_optional 2263 "ambiguous option: %(option)s could match
// %(matches)s", 2327 "unexpected option string: %s"; an ArgumentError's text, 776 "argument %(argument_name)s:
// %(message)s", for a bad value, count or combination).
constexpr sv kArgparseMessages[] = {"unrecognized arguments: ", "the following arguments are required: ",
                                    "one of the arguments ", "ambiguous option: ", "unexpected option string: "};

// The ArgumentError messages that follow "argument X: " (Lib/argparse.py@v3.11.7: 2552 invalid choice, 2541
// "invalid %(type)s value", 2199-2201 "expected one argument" and its kin, 1971 "not allowed with argument",
// 2021/2035 "ignored explicit argument").
constexpr sv kArgumentErrors[] = {"invalid choice: ", "invalid ", "expected ", "not allowed with argument ",
                                  "ignored explicit argument "};

bool argparse_message(sv msg) {
  for (sv k : kArgparseMessages)
    if (starts(msg, k)) return true;
  if (!starts(msg, "argument ")) return false;
  const size_t colon = msg.find(": ", 9);
  if (colon == npos) return false;
  const sv what = msg.substr(colon + 2);
  for (sv k : kArgumentErrors)
    if (starts(what, k)) return true;
  return false;
}

}  // namespace

// ArgumentParser.error(): print_usage() to stderr, then "%(prog)s: error: %(message)s" and exit(2)
// (Lib/argparse.py:2619-2630@v3.11.7). prog is the program's name, one token (sys.argv[0]'s basename: "train.py").
// The program never ran: a usage error at start-up, exit status 2. An unrecognized "--local-rank=N" /
// "--local_rank=N" is the argument torch's launcher adds to every worker it starts (torch/distributed/run.py:1076
// @2.15.0 `cmd_args.append(f"--local-rank={macros.local_rank}")` without --use-env; "--local_rank" before 2.0):
// every worker got it and rejects it alike (o.word "launcher_argument").
bool argparse_usage_error(sv m, LogLine& o) {
  const size_t k = m.find(": error: ");
  if (k == npos || k == 0) return false;
  const sv head = trim(m.substr(0, k));
  const size_t sp = head.find_last_of(" \t");
  const sv prog = sp == npos ? head : head.substr(sp + 1);
  if (prog.empty() || prog.size() > 128 || prog.find_first_of("[]()'\"") != npos) return false;
  const sv msg = m.substr(k + 9);
  if (!argparse_message(msg)) return false;
  o.kind = LogKind::kUsageError;
  o.code = 2;
  o.phase = "init";  // parse_args runs before the program's own work: nothing of it ran
  if (starts(msg, "unrecognized arguments: ") && (has(msg, "--local-rank=") || has(msg, "--local_rank=")))
    o.word = "launcher_argument";
  return true;
}

// A name resolver's failure, by the texts the C libraries give getaddrinfo's errors (gai_strerror): glibc's
// EAI_NONAME "Name or service not known", EAI_AGAIN "Temporary failure in name resolution", EAI_NODATA "No address
// associated with hostname" (sysdeps/posix/gai_strerror-strs.h), musl's EAI_NONAME "Name does not resolve" and
// EAI_NODATA "Name has no usable address" (src/network/gai_strerror.c), the BSDs' and macOS's EAI_NONAME "nodename
// nor servname provided, or not known"; and busybox nslookup's own "nslookup: can't resolve 'HOST'" (its applet name,
// then the message; the musl text follows it in Alpine-based images).
bool resolver_failure(sv m) {
  static constexpr sv kTexts[] = {"Name or service not known", "Temporary failure in name resolution",
                                  "No address associated with hostname", "Name does not resolve",
                                  "Name has no usable address", "nodename nor servname"};
  for (sv t : kTexts)
    if (has(m, t)) return true;
  return starts(trim(m), "nslookup: can't resolve '");
}

}  // namespace hanglab::logparse
