// A data-only reader of Python pickles (protocols 0-5), for torch's Flight Recorder dumps: the
// file `torch._C._distributed_c10d._dump_fr_trace` writes and torchfrtrace reads is a pickle of
// dicts, lists, tuples, strings, numbers, booleans and None.
//
// Why hand-written: no maintained C++ library reads pickles short of LibTorch's own unpickler,
// and triage must stay a pure, fast function of its input (no Python process, no LibTorch in the
// harness; 1,024 dumps are read in well under a second). The subset is small and checked: every
// length against the bytes left, depth and size bounded, and anything that would build an
// object (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, NEWOBJ, INST, OBJ, PERSID, EXT) is refused, which
// also makes reading an untrusted pickle safe. Fuzzed with the log reader (triage_fuzz).
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

namespace hanglab::fr {

// Decodes one pickle into JSON (tuples and sets become arrays, bytes a "<N bytes>" string, dict
// keys that are not strings their JSON text). Throws std::runtime_error("byte N: ...") on
// anything else: truncation, an unknown or refused opcode, a bound exceeded.
nlohmann::json read_pickle(std::string_view bytes);

}  // namespace hanglab::fr
