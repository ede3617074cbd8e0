// A small YAML emitter for generated Kubernetes manifests: nlohmann::ordered_json in, block-style
// YAML 1.2 out (also read correctly by YAML 1.1 parsers: PyYAML, kubectl's sigs.k8s.io/yaml).
//
// Why not a YAML library: the manifests are built as JSON data (the same objects `--format json`
// prints and the schema test compares against), and what is needed is only the emitting half with
// one rule that must hold: every string reads back as the same string, never as a number, a bool,
// a null, a date, a comment or a second key. A string is written plain only when it is made of
// [A-Za-z0-9_./-] characters, starts with a letter, '/' or '_', and is not one of YAML 1.1's
// bool/null words (yes, no, on, off, y, n, true, false, null, in any case); every other string is
// double-quoted with YAML's own escapes (\" \\ \n \t \r \xXX \uXXXX), non-ASCII kept as UTF-8 except
// the characters YAML treats as line breaks or forbids (C1 controls, U+2028, U+2029, U+FEFF), which
// are escaped; invalid UTF-8 becomes U+FFFD. Numbers, bools and null are written as themselves.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hanglab {

// One scalar string as YAML: plain when that is unambiguous, else double-quoted.
std::string yaml_string(const std::string& s);

// One document (no leading "---"), each line ending in '\n'.
std::string to_yaml(const nlohmann::ordered_json& doc);

// Several documents separated by "---" lines.
std::string to_yaml_stream(const std::vector<nlohmann::ordered_json>& docs);

}  // namespace hanglab
