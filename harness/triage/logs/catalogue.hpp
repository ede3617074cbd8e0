// The message catalogue in C++ (logs/catalogue/README.md is the data's contract): every format an
// emitter of the stack prints, taken from its source at a pinned version, with what it means.
// This header provides
//   - the loader: data/<id>.jsonl lines -> CatalogueEntry (format split into literal segments at its
//     `{}` holes, meaning checked against the triage vocabulary);
//   - the built-in catalogue: the data files are embedded at build time (CMake generates
//     catalogue_data.cpp from harness/triage/logs/catalogue/data/*.jsonl), so the binary needs no
//     data path at run time;
//   - the matcher: a line -> the most specific entry whose literal segments occur in it, in order,
//     inside its emitter's line shape (NCCL's "NCCL WARN <format>", Slurm's "srun: <format>", ...).
//     Entries are indexed by a rare 4-byte anchor of their literal text, so a line costs one filter
//     probe per byte and a few verifications, whatever the number of entries;
//   - the holes a hit captured, and the named ones (rank, host, device, signal, ...) read as values.
// The reader applies a hit's meaning to its LogLine (parse.cpp): that is where the reasoner gets
// what a line means from; it never matches text itself. Internal to hanglab_triage.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace hanglab {

// What one format means (meanings/<id>.toml, merged into the data by extract.py).
struct CatalogueMeaning {
  std::string kind;                  // a LogKind name without its k ("NcclError"), or "Info"
  std::string role;                  // root | echo | exit | benign | context
  std::string category;              // "" = the kind's default
  std::string cause;                 // "" = none
  std::string phase;                 // "" or init | training | checkpoint | eval | data | shutdown
  std::map<std::string, int> names;  // rank, host, device, signal, ... -> hole index (0-based)
  std::string note;
  bool marker = false;  // the emitter prints it only in `phase`: it places its writer there (meanings' `marker = true`)
};

struct CatalogueEntry {
  std::string emitter, version, where, call, level, format;
  int part = 0;
  bool weak = false;  // too generic to match alone: never matched
  std::optional<CatalogueMeaning> meaning;
  // The format split at its holes: segments[i] is the literal text before hole i (after hole i-1);
  // lead_hole: the format begins with a hole; trail_hole: it ends with one. A format of n holes has
  // n + 1 - lead_hole - trail_hole segments, none empty.
  std::vector<std::string> segments;
  bool lead_hole = false;
  bool trail_hole = false;
  int holes = 0;
  size_t literal_chars = 0;
  // "nccl 2.30.7 src/transport/net_ib.cc:1615": where the line was printed from.
  std::string origin() const { return emitter + " " + version + " " + where; }
};

// A line matched to an entry: the holes' text as views into the line.
struct CatalogueHit {
  const CatalogueEntry* entry = nullptr;
  std::vector<std::string_view> holes;
  // The hole a meaning names ("rank", "host", ...), or nullopt when the meaning names none.
  std::optional<std::string_view> named(std::string_view name) const;
  // ... read as a number: the first integer in it (the last one for a leading hole, which also
  // holds the line's prefix); a signal's name (SIGTERM, "Terminated", Signals.SIGHUP) as its number.
  std::optional<long long> named_int(std::string_view name) const;
};

// Splits a canonical format into segments (README "Canonical format": `{}` a hole, `{{`/`}}` a
// literal brace). Throws std::runtime_error on an unbalanced brace.
void split_format(std::string_view format, CatalogueEntry& e);

class Catalogue {
 public:
  // Parses JSON lines (one entry each; blank lines skipped) named `source` in errors. Throws
  // std::runtime_error("source:line: ...") on a line that is not an entry of the contract.
  void add_jsonl(std::string_view text, std::string_view source);
  // Builds the anchor index; call after the last add_jsonl, before match.
  void build_index();

  // The most specific entry (most literal characters) that matches `line`; ties: the first
  // loaded. Only entries with a meaning are matched when meaning_only. `inside`: an emitter whose
  // line shape the caller knows the whole line to be in, without its marker (the line after c10d's
  // "Last error:" is the body of NCCL's last WARN, ncclGetLastError()): its formats start where
  // the message does.
  std::optional<CatalogueHit> match(std::string_view line, bool meaning_only = true,
                                    std::string_view inside = {}) const;

  const std::vector<CatalogueEntry>& entries() const { return entries_; }
  size_t indexed() const { return indexed_; }

 private:
  struct Anchor {
    uint32_t entry;
    uint16_t segment;
    uint16_t offset;  // of the anchor's 4 bytes inside the segment
  };
  bool verify(const CatalogueEntry& e, std::string_view line, std::vector<std::string_view>* holes,
              std::string_view inside) const;
  std::vector<CatalogueEntry> entries_;
  std::unordered_map<uint32_t, std::vector<Anchor>> index_;
  std::vector<uint64_t> filter_;  // 2^16 bits over the anchors' 4-byte keys
  size_t indexed_ = 0;
};

// The catalogue built into this binary (logs/catalogue/data/*.jsonl at build time), loaded and
// indexed on first use. Empty when the build had no data file.
const Catalogue& builtin_catalogue();

// The embedded data files (catalogue_data.cpp, generated): name and text of each.
struct CatalogueBlob {
  const char* name;
  std::string_view text;
};
const std::vector<CatalogueBlob>& builtin_catalogue_blobs();

// Vocabulary checks shared by the loader and the catalogue check (catalogue_check.cpp).
bool catalogue_role(std::string_view role);
bool catalogue_name(std::string_view name);

}  // namespace hanglab
