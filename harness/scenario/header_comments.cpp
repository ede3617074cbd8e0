#include "scenario/header_comments.hpp"

#include <algorithm>
#include <cctype>

namespace hanglab {

// `# Reproduces: ...` / `# Expected: ...` in the file's opening comment block. A label is
// one word followed by a colon; a label's text continues on the following comment
// lines until an empty comment line, another label, or the end of the block.
void parse_header_comments(std::string_view text, std::string& reproduces, std::string& expected) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  std::string* current = nullptr;
  while (!text.empty()) {
    size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos) {  // blank line: ends a paragraph, not the block
      current = nullptr;
      continue;
    }
    if (line[first] != '#') break;
    std::string_view body = line.substr(first + 1);
    body.remove_prefix(std::min(body.size(), body.find_first_not_of(" \t#")));
    if (body.empty()) {
      current = nullptr;
      continue;
    }
    // A label may carry a parenthesised note: `# Expected (found by running it): ...`.
    size_t colon = body.find(':');
    size_t word_end = colon == std::string_view::npos ? 0 : body.find_first_of(" (", 0);
    if (word_end == std::string_view::npos || word_end > colon) word_end = colon;
    bool note_ok = word_end == colon ||
                   (body.substr(word_end, colon - word_end).find_first_not_of(" ") != std::string_view::npos &&
                    body[body.find_first_not_of(' ', word_end)] == '(' && body[colon - 1] == ')');
    bool is_label = colon != std::string_view::npos && word_end > 0 && note_ok &&
                    std::all_of(body.begin(), body.begin() + word_end,
                                [](char c) { return std::isalpha(static_cast<unsigned char>(c)); });
    if (is_label) {
      std::string label(body.substr(0, word_end));
      std::transform(label.begin(), label.end(), label.begin(), [](unsigned char c) { return std::tolower(c); });
      std::string_view rest = body.substr(colon + 1);
      rest.remove_prefix(std::min(rest.size(), rest.find_first_not_of(" \t")));
      current = label == "reproduces" ? &reproduces : label == "expected" ? &expected : nullptr;
      if (current) {
        if (!current->empty()) *current += ' ';
        *current += rest;
      }
      continue;
    }
    if (current) {
      if (!current->empty()) *current += ' ';
      *current += body;
    }
  }
}

}  // namespace hanglab
