// util: rank lists for humans (rank_ranges).
#include <catch2/catch.hpp>

#include "util.hpp"

using hanglab::rank_ranges;

TEST_CASE("rank_ranges writes runs of three or more consecutive ranks as ranges") {
  CHECK(rank_ranges({0, 1, 2, 5}) == "0-2,5");
  CHECK(rank_ranges({}) == "");
  CHECK(rank_ranges({7}) == "7");
  CHECK(rank_ranges({4, 5}) == "4,5");
  CHECK(rank_ranges({1, 3, 5}) == "1,3,5");
  CHECK(rank_ranges({0, 1, 2, 3, 9, 10, 11}) == "0-3,9-11");
  CHECK(rank_ranges({0, 1, 5, 6, 7, 9, 10}) == "0,1,5-7,9,10");
}

TEST_CASE("rank_ranges sorts and drops duplicates") {
  CHECK(rank_ranges({5, 2, 1, 0, 2}) == "0-2,5");
  CHECK(rank_ranges({3, 3, 3}) == "3");
}

TEST_CASE("rank_ranges keeps a 64- and a 16k-rank list one short line") {
  std::vector<int> v;
  for (int r = 0; r < 64; ++r)
    if (r != 37) v.push_back(r);
  CHECK(rank_ranges(v) == "0-36,38-63");
  v.clear();
  for (int r = 0; r < 16384; ++r)
    if (r != 8193) v.push_back(r);
  CHECK(rank_ranges(v) == "0-8192,8194-16383");
}

TEST_CASE("utf8_prefix never cuts a character", "[util]") {
  const std::string beach = "GLHF! \xF0\x9F\x8F\x96\xEF\xB8\x8F";  // "GLHF! " + U+1F3D6 U+FE0F
  CHECK(hanglab::utf8_prefix(beach, 100) == beach);
  CHECK(hanglab::utf8_prefix(beach, 6) == "GLHF! ");
  for (size_t n = 7; n <= 9; ++n) CHECK(hanglab::utf8_prefix(beach, n) == "GLHF! ");  // inside the 4-byte emoji
  CHECK(hanglab::utf8_prefix(beach, 10) == "GLHF! \xF0\x9F\x8F\x96");
  CHECK(hanglab::utf8_prefix(beach, 11) == "GLHF! \xF0\x9F\x8F\x96");
  CHECK(hanglab::utf8_prefix("abc", 0).empty());
}
