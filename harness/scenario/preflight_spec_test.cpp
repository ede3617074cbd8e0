// The [preflight] table: a valid one loads with every key; each class of bad input is a ConfigError
// naming the key at its line:col, before anything runs.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "scenario/scenario.hpp"

using namespace hanglab;

namespace {

std::filesystem::path write(const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() / ("hanglab_preflight_spec_test." + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto p = dir / "s.toml";
  std::ofstream(p, std::ios::trunc) << text;
  return p;
}

LoadOptions options() {
  LoadOptions o;
  o.known_workloads = {"torch_ddp"};
  o.known_faults = {"tiny_shm", "partition"};
  return o;
}

const char* const kJob = R"(
[workload]
name = "torch_ddp"
world_size = 4
[topology]
nodes = 2
)";

std::string error_of(const std::string& tail) {
  try {
    load_scenario(write(std::string(kJob) + tail), options());
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("a [preflight] table loads with every key") {
  const Scenario sc = load_scenario(write(std::string(kJob) + R"(
[[fault]]
kind = "tiny_shm"
ranks = [2]
[preflight]
deadline_s = 12
args = ["--loader-workers", "2"]
fail = ["shm.capacity"]
nodes = [1]
echoes = ["rendezvous.arrive"]
ckpt = false
)"),
                                    options());
  REQUIRE(sc.preflight);
  CHECK(sc.preflight->deadline_s == 12);
  CHECK(sc.preflight->fail == std::vector<std::string>{"shm.capacity"});
  CHECK(sc.preflight->nodes == std::vector<int>{1});
  CHECK(sc.preflight->echoes == std::vector<std::string>{"rendezvous.arrive"});
  CHECK(sc.preflight->args.size() == 2);
  CHECK_FALSE(sc.preflight->ckpt);
  CHECK_FALSE(load_scenario(write(kJob), options()).preflight);
}

TEST_CASE("[preflight] bad input names the key at its line") {
  CHECK_THAT(error_of("[preflight]\nfail = [\"shm.capacty\"]\nnodes = [1]\n"),
             Catch::Contains("s.toml:8:9:") && Catch::Contains("preflight.fail") && Catch::Contains("unknown check \"shm.capacty\""));
  CHECK_THAT(error_of("[preflight]\nfail = [\"shm.capacity\"]\nnodes = [2]\n"),
             Catch::Contains("preflight.nodes") && Catch::Contains("0..1"));
  CHECK_THAT(error_of("[preflight]\nfail = [\"shm.capacity\"]\n"), Catch::Contains("preflight.nodes: missing"));
  CHECK_THAT(error_of("[preflight]\ndeadline_s = 0\n"), Catch::Contains("preflight.deadline_s"));
  CHECK_THAT(error_of("[preflight]\nfrob = 1\n"), Catch::Contains("preflight.frob: unknown key"));
  CHECK_THAT(error_of("[preflight]\n[expect]\noutcome = \"hang\"\n"), Catch::Contains("[expect] does not apply"));
  CHECK_THAT(error_of("[[fault]]\nkind = \"tiny_shm\"\nranks = [3]\n[preflight]\n"),
             Catch::Contains("fault[0].ranks") && Catch::Contains("not the first rank of its node"));
  CHECK_THAT(error_of("[[fault]]\nkind = \"partition\"\nnodes = [1]\nat_s = 2\n[preflight]\n"),
             Catch::Contains("fault[0].at_s") && Catch::Contains("acts from launch"));
}
