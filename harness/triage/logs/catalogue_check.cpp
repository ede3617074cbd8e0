// catalogue_check: the message catalogue built into triage, checked as triage reads it (the CTest
// unit.catalogue_meanings). Fails (exit 1, one line per problem) when
//   - an extracted error/warn format has no meaning (README: info/debug formats may stay unclassified);
//   - a meaning is not in triage's vocabulary: its kind, role, phase or names (the loader's checks);
//   - a root or exit line would give an answer that triage's cause list lacks (model/causes.hpp):
//     the meaning's category and cause over the kind's defaults, as the reasoner reads them (a root
//     without a category is a rank_exit, without a cause a nonzero_exit);
//   - an echo names a cause no category of the list has.
// Prints the counts per data file: entries, classified, matched alone (not weak), unclassified info/debug.
// usage: catalogue_check [--meanings | --vocabulary] [DATA.jsonl...]   (no file: the catalogue embedded in
// this binary; --meanings checks only the first point and the loader's, --vocabulary only the answers)
//        catalogue_check --match LOG...   each line of the logs with the entry the built-in catalogue
// matches it to and that entry's meaning (what the reader hands the reasoner), for reading a corpus case.
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "triage/logs/catalogue.hpp"
#include "triage/logs/timeline.hpp"
#include "triage/model/causes.hpp"

using namespace hanglab;

namespace {

struct Counts {
  size_t entries = 0, classified = 0, matchable = 0, info_open = 0;
};

// The (category, cause) an answer built on this line would carry (reason/log_death.cpp's set_root).
std::pair<std::string, std::string> answer_of(const CatalogueEntry& e, plainlog::Fail& f) {
  LogEvent ev;
  ev.kind = log_kind_from_name(e.meaning->kind);
  ev.role = e.meaning->role;  // (no ev.catalogue: describe_event would withhold an unlisted answer)
  ev.category = e.meaning->category;
  ev.cause = e.meaning->cause;
  ev.text = e.format;
  plainlog::describe_event(ev, f);
  return {f.category.empty() ? "rank_exit" : f.category, f.cause.empty() ? "nonzero_exit" : f.cause};
}

}  // namespace

// --match: every line of the files and the catalogue entry it matches.
int match_files(int argc, char** argv) {
  const Catalogue& c = builtin_catalogue();
  for (int i = 2; i < argc; ++i) {
    std::ifstream in(argv[i], std::ios::binary);
    if (!in) {
      std::cerr << argv[i] << ":0:0: cannot read\n";
      return 2;
    }
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      const auto hit = c.match(line);
      if (!hit) continue;
      const auto& m = *hit->entry->meaning;
      std::cout << fmt::format("{}:{}: {} [{} {}/{} phase={}] {}\n    {}\n", argv[i], n, hit->entry->origin(), m.role,
                               m.category, m.cause, m.phase, m.kind, line.substr(0, 160));
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--match") return match_files(argc, argv);
  std::vector<std::pair<std::string, std::string>> files;
  bool meanings = true, vocabulary = true;
  int first = 1;
  if (argc > 1 && std::string(argv[1]) == "--meanings")
    vocabulary = false, first = 2;
  else if (argc > 1 && std::string(argv[1]) == "--vocabulary")
    meanings = false, first = 2;
  if (argc > first) {
    for (int i = first; i < argc; ++i) {
      std::ifstream in(argv[i], std::ios::binary);
      if (!in) {
        std::cerr << argv[i] << ":0:0: cannot read\n";
        return 2;
      }
      std::stringstream ss;
      ss << in.rdbuf();
      files.emplace_back(argv[i], ss.str());
    }
  } else {
    for (const auto& b : builtin_catalogue_blobs()) files.emplace_back(b.name, std::string(b.text));
  }
  size_t problems = 0;
  const auto problem = [&](const std::string& where, const std::string& what) {
    std::cout << where << ": " << what << "\n";
    ++problems;
  };
  std::map<std::string, Counts> counts;
  std::set<std::string> unlisted;
  for (const auto& [name, text] : files) {
    Catalogue c;
    try {
      c.add_jsonl(text, name);
    } catch (const std::exception& ex) {
      problem(name, ex.what());
      continue;
    }
    c.build_index();
    Counts& n = counts[name];
    for (const auto& e : c.entries()) {
      ++n.entries;
      const std::string where = fmt::format("{} ({} {}: \"{}\")", name, e.emitter, e.where, e.format);
      if (!e.weak) ++n.matchable;
      if (!e.meaning) {
        if (meanings && (e.level == "error" || e.level == "warn"))
          problem(where, "an extracted " + e.level + " format without a meaning");
        else
          ++n.info_open;
        continue;
      }
      ++n.classified;
      const auto& m = *e.meaning;
      if (!vocabulary) continue;
      if (m.role == "root" || m.role == "exit") {
        plainlog::Fail f;
        const auto [cat, cause] = answer_of(e, f);
        if (!listed_cause(cat, cause)) {
          unlisted.insert(cat + "/" + cause);
          problem(where, fmt::format("its answer {}/{} is not in triage's cause list (model/causes.cpp)", cat, cause));
        }
      } else if (m.role == "echo" && !m.cause.empty()) {
        bool any = false;
        for (const auto& tc : triage_causes()) any |= tc.cause == m.cause;
        if (!any) problem(where, fmt::format("its cause {} is in no category of triage's cause list", m.cause));
      }
    }
  }
  for (const auto& [name, n] : counts)
    std::cout << fmt::format("{}: {} entries, {} classified, {} matched alone (not weak), {} info/debug unclassified\n",
                             name, n.entries, n.classified, n.matchable, n.info_open);
  if (!unlisted.empty()) {
    std::cout << "answers not in the cause list:";
    for (const auto& u : unlisted) std::cout << " " << u;
    std::cout << "\n";
  }
  std::cout << (problems ? fmt::format("catalogue_check: {} problem(s)\n", problems) : "catalogue_check: ok\n");
  return problems ? 1 : 0;
}
