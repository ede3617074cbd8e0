#include "export/yaml.hpp"

#include <cctype>
#include <cstdio>

namespace hanglab {

namespace {

using nlohmann::ordered_json;

bool is_reserved_word(const std::string& s) {
  std::string l;
  for (char c : s) l += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* w : {"y", "n", "yes", "no", "on", "off", "true", "false", "null"})
    if (l == w) return true;
  return false;
}

bool plain_ok(const std::string& s) {
  if (s.empty()) return false;
  const unsigned char c0 = static_cast<unsigned char>(s[0]);
  // No leading digit, '.', '-', '+': numbers (1e3, .5, 0x1F, 1_000, -1), dates (2026-12-03),
  // '.inf'/'.nan' and block indicators all start that way.
  if (!(std::isalpha(c0) || c0 == '/' || c0 == '_')) return false;
  for (unsigned char c : s)
    if (!(std::isalnum(c) || c == '_' || c == '.' || c == '/' || c == '-')) return false;
  return !is_reserved_word(s);
}

void append_u(std::string& out, unsigned cp) {
  char buf[12];
  std::snprintf(buf, sizeof buf, "\\u%04X", cp);
  out += buf;
}

// Decodes one UTF-8 sequence at s[i]; returns its length, 0 if invalid.
size_t utf8_decode(const std::string& s, size_t i, unsigned& cp) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  size_t n = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  cp = n == 2 ? c & 0x1F : n == 3 ? c & 0x0F : c & 0x07;
  for (size_t k = 1; k < n; ++k) {
    const unsigned char d = static_cast<unsigned char>(s[i + k]);
    if ((d & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (d & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return n;
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\t': out += "\\t"; break;
        case '\r': out += "\\r"; break;
        default:
          if (c < 0x20 || c == 0x7F) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02X", c);
            out += buf;
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    unsigned cp = 0;
    const size_t n = utf8_decode(s, i, cp);
    if (n == 0) {
      append_u(out, 0xFFFD);
      ++i;
      continue;
    }
    // Line breaks in YAML 1.1 (NEL, LS, PS) and characters it does not allow in a stream.
    if ((cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 || cp == 0xFEFF || cp == 0xFFFE || cp == 0xFFFF)
      append_u(out, cp);
    else
      out.append(s, i, n);
    i += n;
  }
  return out + "\"";
}

std::string scalar(const ordered_json& v) {
  if (v.is_string()) return yaml_string(v.get<std::string>());
  if (v.is_null()) return "null";
  if (v.is_object()) return "{}";  // only reached for empty containers
  if (v.is_array()) return "[]";
  return v.dump();  // numbers, bools
}

bool is_block(const ordered_json& v) { return (v.is_object() || v.is_array()) && !v.empty(); }

void emit(const ordered_json& v, int indent, std::string& out);

// A mapping's entries at `indent`; the first line's indentation is already written when
// `first_inline` (a mapping that is a sequence item: "- key: value").
void emit_map(const ordered_json& m, int indent, bool first_inline, std::string& out) {
  bool first = true;
  for (auto it = m.begin(); it != m.end(); ++it) {
    if (!(first && first_inline)) out.append(indent, ' ');
    first = false;
    out += yaml_string(it.key()) + ":";
    const ordered_json& val = it.value();
    if (val.is_object() && !val.empty()) {
      out += "\n";
      emit_map(val, indent + 2, false, out);
    } else if (val.is_array() && !val.empty()) {
      out += "\n";
      emit(val, indent, out);  // sequences under a key sit at the key's indentation (kubectl style)
    } else {
      out += " " + scalar(val) + "\n";
    }
  }
}

void emit(const ordered_json& v, int indent, std::string& out) {
  if (v.is_object() && !v.empty()) {
    emit_map(v, indent, false, out);
    return;
  }
  if (v.is_array() && !v.empty()) {
    for (const auto& item : v) {
      out.append(indent, ' ');
      out += "- ";
      if (item.is_object() && !item.empty()) {
        emit_map(item, indent + 2, true, out);
      } else if (item.is_array() && !item.empty()) {
        out += "\n";
        emit(item, indent + 2, out);
      } else {
        out += scalar(item) + "\n";
      }
    }
    return;
  }
  out.append(indent, ' ');
  out += scalar(v) + "\n";
}

}  // namespace

std::string yaml_string(const std::string& s) { return plain_ok(s) ? s : quoted(s); }

std::string to_yaml(const ordered_json& doc) {
  std::string out;
  emit(doc, 0, out);
  return out;
}

std::string to_yaml_stream(const std::vector<ordered_json>& docs) {
  std::string out;
  for (size_t i = 0; i < docs.size(); ++i) {
    if (i > 0) out += "---\n";
    out += to_yaml(docs[i]);
  }
  return out;
}

}  // namespace hanglab
