// duplicate_rank: the chosen rank is launched with another rank's RANK (two nodes with
// the same node_rank, a copy-pasted launch line), so one rank exists twice and another
// not at all. Environment only: RANK and LOCAL_RANK are set before exec.
//
// Needs nothing of the workload. Manifested when the launch slot of a targeted rank ran
// under the other identity: its trace `start` names the duplicated RANK (or, without a
// trace, it never completed init).
#include "hook_injector.hpp"
#include "network_common.hpp"

namespace hanglab {

namespace {

std::vector<KeyDoc> dup_keys() {
  return {{"as_rank", "int", "(the rank below, 1 for rank 0)",
           "the RANK the chosen ranks take (default: the rank below each, or 1 for rank 0); must differ from the rank"}};
}

class DuplicateRank : public Injector {
 public:
  void configure(const FaultSpec& spec, const std::string& file) override {
    reject_unknown_keys(spec, file, dup_keys());
    ranks_ = spec.ranks;
    auto v = read_fault_key(spec, file, dup_keys()[0]);
    if (v.is_null()) return;
    const toml::node& node = *spec.table.get("as_rank");
    as_rank_ = v.get<int>();
    if (*as_rank_ < 0) throw config_error_at(file, node, spec.key_prefix() + ".as_rank", "must be >= 0");
    if (is_targeted(ranks_, *as_rank_))
      throw config_error_at(file, node, spec.key_prefix() + ".as_rank",
                            "is one of the fault's own ranks: a rank taking its own RANK changes nothing");
    // world_size is only known at launch: the upper bound is checked in prepare_rank.
  }

  void prepare_rank(int rank, LaunchSpec& spec) override {
    if (!is_targeted(ranks_, rank)) return;
    const int as = as_rank_ ? *as_rank_ : (rank == 0 ? 1 : rank - 1);
    const int ws = spec.env.count("WORLD_SIZE") ? env_int_of(spec, "WORLD_SIZE") : as + 1;
    if (as >= ws)
      throw std::runtime_error("duplicate_rank: as_rank " + std::to_string(as) + " is out of range for world_size " +
                               std::to_string(ws));
    spec.env["RANK"] = std::to_string(as);
    spec.env["LOCAL_RANK"] = std::to_string(as);
    started_as_[rank] = as;
    applied_ += (applied_.empty() ? "" : "; ") + std::string("rank ") + std::to_string(rank) + " started as RANK=" +
                std::to_string(as);
  }

  Manifest manifested(const RunFactsView& run) const override {
    for (const auto& [slot, as] : started_as_) {
      for (const auto* e : run.events(slot, "start"))
        if (e->value("rank", -1) == as)
          return {true, "launch slot " + std::to_string(slot) + " ran as RANK " + std::to_string(as) +
                            " (its trace `start` says rank " + std::to_string(as) + "): RANK " +
                            std::to_string(as) + " twice, RANK " + std::to_string(slot) + " missing"};
      if (run.events(slot, "start").empty())
        if (std::string e = rank_kept_out_of_init(run, slot, "RANK"); !e.empty()) return {true, e};
    }
    return {false, started_as_.empty() ? std::string("no rank was launched with another RANK")
                                       : "no targeted launch slot was seen running under the duplicated RANK"};
  }

  std::string fire(Job&) override { return applied_ + " (nobody is RANK " + missing() + ")"; }

 private:
  std::string missing() const {
    std::string out;
    for (int r : ranks_) out += (out.empty() ? "" : ",") + std::to_string(r);
    return out;
  }

  std::vector<int> ranks_;
  std::optional<int> as_rank_;
  std::string applied_;
  std::map<int, int> started_as_;  // launch slot -> the RANK it was given
};

}  // namespace

InjectorInfo duplicate_rank_info() {
  return {"duplicate_rank", "the chosen ranks are launched with another rank's RANK: one rank twice, one missing",
          "environment (RANK, LOCAL_RANK) set before exec (acts from launch: leave at_step/at_s out)", dup_keys(),
          [] { return std::make_unique<DuplicateRank>(); }};
}

}  // namespace hanglab
