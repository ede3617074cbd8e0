// Unit tests of the training loop's plain-C++ MLP: gradients against finite
// differences, deterministic init, SGD lowers the loss.
#include "mlp.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

using hanglab::Mlp;

namespace {

struct Data {
  std::vector<float> x;
  std::vector<float> y;
};

Data make_data(int rows, int dim, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  Data d;
  for (int r = 0; r < rows; ++r) {
    float t = 0;
    for (int i = 0; i < dim; ++i) {
      d.x.push_back(n(rng));
      t += 0.3f * static_cast<float>(i % 3 - 1) * d.x.back();
    }
    d.y.push_back(t);
  }
  return d;
}

}  // namespace

TEST_CASE("parameters are laid out like torch.nn.Sequential of Linear layers", "[mlp]") {
  const Mlp m(16, 64, 2, 1);
  REQUIRE(m.num_tensors() == 6);  // W0 b0 W1 b1 W2 b2
  CHECK(m.param(0).size() == 64 * 16);
  CHECK(m.param(1).size() == 64);
  CHECK(m.param(2).size() == 64 * 64);
  CHECK(m.param(4).size() == 64);
  CHECK(m.param(5).size() == 1);
  CHECK(m.num_parameters() == 64 * 16 + 64 + 64 * 64 + 64 + 64 + 1);
  for (float v : m.param(0)) CHECK(std::fabs(v) <= 0.25f);  // 1/sqrt(16)
}

TEST_CASE("init is deterministic in the seed", "[mlp]") {
  const Mlp a(8, 16, 1, 42);
  const Mlp b(8, 16, 1, 42);
  const Mlp c(8, 16, 1, 43);
  CHECK(a.checksum() == b.checksum());
  CHECK(a.checksum() != c.checksum());
}

TEST_CASE("backward matches finite differences", "[mlp]") {
  Mlp m(5, 7, 2, 3);
  const Data d = make_data(6, 5, 9);
  m.forward_loss(d.x.data(), d.y.data(), 6);
  m.backward();
  const double eps = 1e-3;
  for (size_t k = 0; k < m.num_tensors(); ++k) {
    for (size_t i = 0; i < m.param(k).size(); i += 3) {
      const float saved = m.param(k)[i];
      m.param(k)[i] = saved + static_cast<float>(eps);
      const double up = m.sum_squared_error(d.x.data(), d.y.data(), 6) / 6.0;
      m.param(k)[i] = saved - static_cast<float>(eps);
      const double down = m.sum_squared_error(d.x.data(), d.y.data(), 6) / 6.0;
      m.param(k)[i] = saved;
      const double numeric = (up - down) / (2 * eps);
      INFO("tensor " << k << " element " << i);
      CHECK(m.grad(k)[i] == Approx(numeric).margin(2e-3).epsilon(2e-2));
    }
  }
}

TEST_CASE("SGD lowers the loss", "[mlp]") {
  Mlp m(8, 32, 2, 5);
  const Data d = make_data(64, 8, 11);
  const double first = m.forward_loss(d.x.data(), d.y.data(), 64);
  double last = first;
  for (int s = 0; s < 100; ++s) {
    last = m.forward_loss(d.x.data(), d.y.data(), 64);
    m.backward();
    m.sgd_step(0.05f);
  }
  CHECK(last < first * 0.5);
}

TEST_CASE("a layer-less MLP is linear regression", "[mlp]") {
  Mlp m(3, 99, 0, 1);
  REQUIRE(m.num_tensors() == 2);
  CHECK(m.param(0).size() == 3);
}
