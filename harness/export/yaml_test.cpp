// The YAML emitter: what is written plain, what is quoted and how, block layout.
#include <catch2/catch.hpp>

#include "export/yaml.hpp"

using hanglab::to_yaml;
using hanglab::to_yaml_stream;
using hanglab::yaml_string;
using nlohmann::ordered_json;

TEST_CASE("plain strings stay plain") {
  for (const char* s : {"torchrun", "batch/v1", "app.kubernetes.io/name", "hanglab-net-kill-node", "/dev/shm",
                        "_x", "eth0", "INFO"})
    CHECK(yaml_string(s) == s);
}

TEST_CASE("strings YAML would read as something else are quoted") {
  // numbers, YAML 1.1 bools and nulls, dates, empty
  for (const char* s : {"1", "0", "12", "1.5", ".5", "1e3", "0x1F", "1_000", "-1", "+1", ".inf", "2026-12-03",
                        "yes", "No", "ON", "off", "y", "N", "true", "False", "null", "NULL", "", "~"})
    CHECK(yaml_string(s) == std::string("\"") + s + "\"");
}

TEST_CASE("indicators, blanks, comments and mapping syntax are quoted") {
  CHECK(yaml_string("a b") == "\"a b\"");
  CHECK(yaml_string("key: value") == "\"key: value\"");
  CHECK(yaml_string("a #b") == "\"a #b\"");
  CHECK(yaml_string("-x") == "\"-x\"");
  CHECK(yaml_string("--steps=12") == "\"--steps=12\"");
  CHECK(yaml_string("*alias") == "\"*alias\"");
  CHECK(yaml_string("&anchor") == "\"&anchor\"");
  CHECK(yaml_string("!tag") == "\"!tag\"");
  CHECK(yaml_string("[a]") == "\"[a]\"");
  CHECK(yaml_string("{a}") == "\"{a}\"");
  CHECK(yaml_string("|") == "\"|\"");
  CHECK(yaml_string(">") == "\">\"");
  CHECK(yaml_string("%r") == "\"%r\"");
  CHECK(yaml_string("@x") == "\"@x\"");
  CHECK(yaml_string("`x`") == "\"`x`\"");
  CHECK(yaml_string("$(RANK)") == "\"$(RANK)\"");
  CHECK(yaml_string("'single'") == "\"'single'\"");
  CHECK(yaml_string("trailing ") == "\"trailing \"");
}

TEST_CASE("escapes: quotes, backslashes, controls, line breaks") {
  CHECK(yaml_string("say \"hi\"") == R"("say \"hi\"")");
  CHECK(yaml_string("C:\\path") == R"("C:\\path")");
  CHECK(yaml_string("a\nb") == R"("a\nb")");
  CHECK(yaml_string("a\tb\r") == R"("a\tb\r")");
  CHECK(yaml_string(std::string("a\0b", 3)) == R"("a\x00b")");
  CHECK(yaml_string("\x1b[0m") == R"("\x1B[0m")");
  CHECK(yaml_string("del\x7f") == R"("del\x7F")");
}

TEST_CASE("non-ASCII: UTF-8 kept, YAML line breaks and BOM escaped, invalid bytes replaced") {
  CHECK(yaml_string("caf\xC3\xA9") == "\"caf\xC3\xA9\"");                 // é: kept
  CHECK(yaml_string("\xF0\x9F\x98\x80") == "\"\xF0\x9F\x98\x80\"");        // U+1F600: kept
  CHECK(yaml_string("a\xC2\x85" "b") == R"("a\u0085b")");                  // NEL
  CHECK(yaml_string("a\xE2\x80\xA8" "b") == R"("a\u2028b")");              // LINE SEPARATOR
  CHECK(yaml_string("\xEF\xBB\xBFx") == R"("\uFEFFx")");                   // BOM
  CHECK(yaml_string("bad\xFF") == R"("bad\uFFFD")");
  CHECK(yaml_string("\xC0\xAF") == R"("\uFFFD\uFFFD")");                   // overlong '/'
  CHECK(yaml_string("\xED\xA0\x80") == R"("\uFFFD\uFFFD\uFFFD")");         // a surrogate
}

TEST_CASE("block layout as kubectl writes it") {
  ordered_json doc = {{"apiVersion", "v1"},
                      {"kind", "Service"},
                      {"metadata", {{"name", "x"}, {"labels", ordered_json::object()}}},
                      {"spec",
                       {{"ports", ordered_json::array({{{"name", "rdzv"}, {"port", 29400}}, {{"port", 1}}})},
                        {"args", ordered_json::array({"--nnodes", "2"})},
                        {"flag", true},
                        {"none", nullptr},
                        {"empty", ordered_json::array()}}}};
  CHECK(to_yaml(doc) ==
        "apiVersion: v1\n"
        "kind: Service\n"
        "metadata:\n"
        "  name: x\n"
        "  labels: {}\n"
        "spec:\n"
        "  ports:\n"
        "  - name: rdzv\n"
        "    port: 29400\n"
        "  - port: 1\n"
        "  args:\n"
        "  - \"--nnodes\"\n"
        "  - \"2\"\n"
        "  flag: true\n"
        "  none: null\n"
        "  empty: []\n");
}

TEST_CASE("nested mappings inside sequence items, and document streams") {
  ordered_json doc = {{"env", ordered_json::array({{{"name", "A"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "x"}}}}}}})}};
  CHECK(to_yaml(doc) ==
        "env:\n"
        "- name: A\n"
        "  valueFrom:\n"
        "    fieldRef:\n"
        "      fieldPath: x\n");
  CHECK(to_yaml_stream({{{"a", 1}}, {{"b", 2}}}) == "a: 1\n---\nb: 2\n");
}
