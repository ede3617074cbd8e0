// Unit tests of the error classification that decides a workload's exit code.
#include "exit_codes.hpp"

#include <catch2/catch.hpp>
#include <set>

using namespace hanglab;

TEST_CASE("collective errors: timeout vs comm by the backend's message", "[exit_codes]") {
  CHECK(classify_collective_error(
            "[../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 5000ms for recv "
            "operation to complete") == ErrorClass::kTimeout);
  CHECK(classify_collective_error("NCCL watchdog: Watchdog caught collective operation timeout") ==
        ErrorClass::kTimeout);
  CHECK(classify_collective_error("[../gloo/transport/tcp/pair.cc:598] Connection closed by peer [127.0.0.1]:4242") ==
        ErrorClass::kComm);
  CHECK(classify_collective_error("Read error [127.0.0.1]:52340: Connection reset by peer") == ErrorClass::kComm);
  CHECK(classify_collective_error("Write error: Broken pipe") == ErrorClass::kComm);
}

TEST_CASE("every class has its documented exit code", "[exit_codes]") {
  CHECK(exit_code_for(ErrorClass::kUsage) == 2);
  CHECK(exit_code_for(ErrorClass::kComm) == 10);
  CHECK(exit_code_for(ErrorClass::kTimeout) == 11);
  CHECK(exit_code_for(ErrorClass::kRendezvous) == 12);
  CHECK(exit_code_for(ErrorClass::kData) == 13);
  CHECK(exit_code_for(ErrorClass::kOther) == 1);
  CHECK(std::string(error_class_name(ErrorClass::kTimeout)) == "timeout");
  std::set<int> codes;
  for (const auto& info : exit_code_table()) CHECK(codes.insert(info.code).second);
  CHECK(codes == std::set<int>{0, 1, 2, 10, 11, 12, 13});
}
