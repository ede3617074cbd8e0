// Plain-float MLP of mpi_ddp and nccl_ddp; see mlp.hpp.
#include "mlp.hpp"

#include <cmath>
#include <random>

namespace hanglab {

Mlp::Mlp(int input_dim, int hidden, int layers, uint64_t seed) : input_dim_(input_dim) {
  std::mt19937_64 rng(seed);
  int in = input_dim;
  auto add_layer = [&](int out) {
    layers_.push_back({in, out, params_.size()});
    const float bound = 1.0f / std::sqrt(static_cast<float>(in));
    std::uniform_real_distribution<float> u(-bound, bound);
    std::vector<float> w(static_cast<size_t>(in) * out);
    for (float& v : w) v = u(rng);
    std::vector<float> b(static_cast<size_t>(out));
    for (float& v : b) v = u(rng);
    params_.push_back(std::move(w));
    params_.push_back(std::move(b));
    in = out;
  };
  for (int l = 0; l < layers; ++l) add_layer(hidden);
  add_layer(1);
  for (const auto& p : params_) grads_.emplace_back(p.size(), 0.0f);
}

int64_t Mlp::num_parameters() const {
  int64_t n = 0;
  for (const auto& p : params_) n += static_cast<int64_t>(p.size());
  return n;
}

void Mlp::forward(const float* x, int64_t rows, std::vector<std::vector<float>>& acts) const {
  acts.resize(layers_.size() + 1);
  acts[0].assign(x, x + rows * input_dim_);
  for (size_t l = 0; l < layers_.size(); ++l) {
    const Layer& L = layers_[l];
    const std::vector<float>& w = params_[L.w];
    const std::vector<float>& b = params_[L.w + 1];
    const std::vector<float>& a = acts[l];
    std::vector<float>& z = acts[l + 1];
    z.assign(static_cast<size_t>(rows) * L.out, 0.0f);
    const bool relu = l + 1 < layers_.size();
    for (int64_t r = 0; r < rows; ++r) {
      const float* ar = &a[static_cast<size_t>(r) * L.in];
      for (int o = 0; o < L.out; ++o) {
        const float* wo = &w[static_cast<size_t>(o) * L.in];
        float s = b[o];
        for (int i = 0; i < L.in; ++i) s += wo[i] * ar[i];
        z[static_cast<size_t>(r) * L.out + o] = relu && s < 0.0f ? 0.0f : s;
      }
    }
  }
}

double Mlp::forward_loss(const float* x, const float* y, int64_t rows) {
  forward(x, rows, acts_);
  target_.assign(y, y + rows);
  rows_ = rows;
  double sum = 0;
  const std::vector<float>& out = acts_.back();
  for (int64_t r = 0; r < rows; ++r) {
    const double d = static_cast<double>(out[r]) - y[r];
    sum += d * d;
  }
  return rows > 0 ? sum / static_cast<double>(rows) : 0.0;
}

double Mlp::sum_squared_error(const float* x, const float* y, int64_t rows) const {
  std::vector<std::vector<float>> acts;
  forward(x, rows, acts);
  double sum = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const double d = static_cast<double>(acts.back()[r]) - y[r];
    sum += d * d;
  }
  return sum;
}

void Mlp::backward() {
  if (rows_ == 0) {
    zero_grad();
    return;
  }
  // dL/d(out) of mean((out - y)^2).
  std::vector<float> delta(static_cast<size_t>(rows_));
  for (int64_t r = 0; r < rows_; ++r) {
    delta[r] = 2.0f * (acts_.back()[r] - target_[r]) / static_cast<float>(rows_);
  }
  for (size_t l = layers_.size(); l-- > 0;) {
    const Layer& L = layers_[l];
    const std::vector<float>& a = acts_[l];
    std::vector<float>& gw = grads_[L.w];
    std::vector<float>& gb = grads_[L.w + 1];
    std::fill(gw.begin(), gw.end(), 0.0f);
    std::fill(gb.begin(), gb.end(), 0.0f);
    for (int64_t r = 0; r < rows_; ++r) {
      const float* ar = &a[static_cast<size_t>(r) * L.in];
      for (int o = 0; o < L.out; ++o) {
        const float d = delta[static_cast<size_t>(r) * L.out + o];
        if (d == 0.0f) continue;
        gb[o] += d;
        float* gwo = &gw[static_cast<size_t>(o) * L.in];
        for (int i = 0; i < L.in; ++i) gwo[i] += d * ar[i];
      }
    }
    if (l == 0) break;
    // Through the weights, then through the ReLU of the layer below (a > 0 exactly
    // where its pre-activation was positive).
    const std::vector<float>& w = params_[L.w];
    std::vector<float> below(static_cast<size_t>(rows_) * L.in, 0.0f);
    for (int64_t r = 0; r < rows_; ++r) {
      float* br = &below[static_cast<size_t>(r) * L.in];
      for (int o = 0; o < L.out; ++o) {
        const float d = delta[static_cast<size_t>(r) * L.out + o];
        if (d == 0.0f) continue;
        const float* wo = &w[static_cast<size_t>(o) * L.in];
        for (int i = 0; i < L.in; ++i) br[i] += d * wo[i];
      }
      const float* ar = &a[static_cast<size_t>(r) * L.in];
      for (int i = 0; i < L.in; ++i) {
        if (ar[i] <= 0.0f) br[i] = 0.0f;
      }
    }
    delta.swap(below);
  }
}

void Mlp::zero_grad() {
  for (auto& g : grads_) std::fill(g.begin(), g.end(), 0.0f);
}

void Mlp::sgd_step(float lr) {
  for (size_t k = 0; k < params_.size(); ++k) {
    std::vector<float>& p = params_[k];
    const std::vector<float>& g = grads_[k];
    for (size_t i = 0; i < p.size(); ++i) p[i] -= lr * g[i];
  }
}

double Mlp::checksum() const {
  double s = 0;
  for (const auto& p : params_) {
    for (float v : p) s += std::fabs(static_cast<double>(v));
  }
  return s;
}

}  // namespace hanglab
