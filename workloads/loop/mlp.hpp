// Mlp: the model of the training loop on every backend, the network a DDP script builds
// with torch.nn (Linear -> ReLU, `layers` times, then Linear(hidden, 1), MSE loss)
// written as plain float loops: forward, backward, SGD. It is small on purpose:
// the workloads exist to issue DDP's collectives with DDP's sizes and order, and the
// arithmetic only has to be real enough that the loss falls and that replicas which
// stop agreeing (a skipped or mis-paired allreduce) end with different parameters.
//
// Parameters are kept in torch's registration order (W0, b0, W1, b1, ...), W row-major
// [out x in], so bucketing (reverse registration order) is DDP's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hanglab {

class Mlp {
 public:
  // Weights and biases drawn like torch.nn.Linear's defaults: U(-1/sqrt(fan_in),
  // 1/sqrt(fan_in)) from a generator seeded with `seed`.
  Mlp(int input_dim, int hidden, int layers, uint64_t seed);

  int input_dim() const { return input_dim_; }
  size_t num_tensors() const { return params_.size(); }
  int64_t num_parameters() const;
  std::vector<float>& param(size_t k) { return params_[k]; }
  const std::vector<float>& param(size_t k) const { return params_[k]; }
  std::vector<float>& grad(size_t k) { return grads_[k]; }
  const std::vector<float>& grad(size_t k) const { return grads_[k]; }

  // Mean squared error of the prediction over `rows` samples (x is rows * input_dim,
  // y is rows); keeps the activations for backward().
  double forward_loss(const float* x, const float* y, int64_t rows);
  // Sum of squared errors, keeping nothing (eval).
  double sum_squared_error(const float* x, const float* y, int64_t rows) const;
  // Gradients of the last forward_loss() into grad(k) (overwritten, not accumulated).
  void backward();
  void zero_grad();
  void sgd_step(float lr);
  // Sum of |p| over all parameters, in double: equal on every rank exactly when the
  // replicas are equal.
  double checksum() const;

 private:
  struct Layer {
    int in;
    int out;
    size_t w;  // index of its weight in params_; the bias is w + 1
  };

  // Forward pass into `acts` (acts[0] = x, acts[l+1] = output of layer l, ReLU applied
  // to all but the last). Returns the output column.
  void forward(const float* x, int64_t rows, std::vector<std::vector<float>>& acts) const;

  int input_dim_;
  std::vector<Layer> layers_;
  std::vector<std::vector<float>> params_;
  std::vector<std::vector<float>> grads_;
  // State of the last forward_loss, for backward().
  std::vector<std::vector<float>> acts_;
  std::vector<float> target_;
  int64_t rows_ = 0;
};

}  // namespace hanglab
