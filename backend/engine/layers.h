#pragma once
// Layers as pairs of plain functions over flat float buffers, in the manner of llm.c.
// Images are NHWC: a convolution's im2col rows are then contiguous runs of channels and its gemm
// writes the next layer's input directly, with no transpose.
// Every *_backward accumulates into parameter gradients (dW, db) so gradient accumulation is free,
// and overwrites the input gradient dx (which may be null when nobody needs it).
#include <cstddef>
#include <cstdint>

namespace traindeck::engine {

class Rng;

// y[B,O] = x[B,I] · W[O,I]^T + b[O]
void linear_forward(float* y, const float* x, const float* weight, const float* bias, int batch, int in, int out);
void linear_backward(float* dx, float* dweight, float* dbias, const float* dy, const float* x, const float* weight,
                     int batch, int in, int out);

struct Conv2dShape {
    int batch = 0;
    int in_h = 0, in_w = 0, in_c = 0;
    int out_c = 0, kernel = 3, stride = 1, pad = 0;
    int out_h() const { return (in_h + 2 * pad - kernel) / stride + 1; }
    int out_w() const { return (in_w + 2 * pad - kernel) / stride + 1; }
    int patch() const { return kernel * kernel * in_c; }
    size_t positions() const { return static_cast<size_t>(batch) * out_h() * out_w(); }
};

// cols[B*OH*OW, K*K*C]: one row per output position, the patch it sees in (kh, kw, c) order.
void im2col_nhwc(float* cols, const float* x, const Conv2dShape& s);
// Scatter-add of cols back onto dx (dx is overwritten).
void col2im_nhwc(float* dx, const float* dcols, const Conv2dShape& s);
// Weights are [O, K, K, C]; y is [B, OH, OW, O]. Where oneDNN has a kernel for the shape (onednn::runs) it
// convolves and cols is not touched (it may be null); otherwise cols is scratch of size positions()*patch() for the
// im2col rows, kept for backward.
void conv2d_forward(float* y, float* cols, const float* x, const float* weight, const float* bias, const Conv2dShape& s);
// x and cols are forward's; dcols is scratch of the same size as cols (both unused where oneDNN runs the shape);
// dx may be null (first layer).
void conv2d_backward(float* dx, float* dweight, float* dbias, float* dcols, const float* dy, const float* x,
                     const float* cols, const float* weight, const Conv2dShape& s);
// The engine's own convolution (im2col + gemm) whatever oneDNN offers: the reference the oneDNN path is tested
// against. cols and dcols are required.
void conv2d_forward_im2col(float* y, float* cols, const float* x, const float* weight, const float* bias,
                           const Conv2dShape& s);
void conv2d_backward_im2col(float* dx, float* dweight, float* dbias, float* dcols, const float* dy, const float* cols,
                            const float* weight, const Conv2dShape& s);

// Max-pool over size×size windows with the given stride, NHWC. Backward routes each output's gradient to
// the first input of its window that equals the output (the one forward picked); dx is overwritten.
// When forward is given `winners` (one byte an output; windows of at most kMaxRecordedWindow inputs) it records
// which input of each window won, and backward given the same bytes reads them instead of x and y, which it then
// ignores: a pass over the small output instead of the large input.
constexpr int kMaxRecordedWindow = 255;
void maxpool_forward(float* y, const float* x, int batch, int h, int w, int c, int size, int stride,
                     uint8_t* winners = nullptr);
void maxpool_backward(float* dx, const float* dy, const float* x, const float* y, int batch, int h, int w, int c,
                      int size, int stride, const uint8_t* winners = nullptr);

// Average-pool over size×size windows with the given stride, NHWC (no padding); dx is overwritten.
void avgpool_forward(float* y, const float* x, int batch, int h, int w, int c, int size, int stride);
void avgpool_backward(float* dx, const float* dy, int batch, int h, int w, int c, int size, int stride);

// Global average pooling: y[B, C] is the mean of x[B, H, W, C] over its h·w positions; dx is overwritten.
void global_avgpool_forward(float* y, const float* x, int batch, int positions, int c);
void global_avgpool_backward(float* dx, const float* dy, int batch, int positions, int c);

// Batch normalisation over the channel (last) axis of x[rows, C]: NHWC images have rows = batch·H·W, flat vectors
// rows = batch. Training normalises with the batch's mean and biased variance, keeps x̂ and 1/σ per channel for
// backward, and moves the running statistics toward the batch's by `momentum` (the running variance takes the
// unbiased estimate, as PyTorch's BatchNorm does, so its checkpoints and ours mean the same). Sums are in double.
void batchnorm_forward_training(float* y, float* xhat, float* inv_std, float* running_mean, float* running_var,
                                const float* x, const float* gamma, const float* beta, size_t rows, int c,
                                float momentum, float eps);
// Inference: the running statistics.
void batchnorm_forward_inference(float* y, const float* x, const float* gamma, const float* beta,
                                 const float* running_mean, const float* running_var, size_t rows, int c, float eps);
// dγ and dβ accumulate; dx (may be null) is overwritten: γ/σ · (dy − mean(dy) − x̂ · mean(dy·x̂)).
void batchnorm_backward(float* dx, float* dgamma, float* dbeta, const float* dy, const float* xhat,
                        const float* inv_std, const float* gamma, size_t rows, int c);

// y = a + b (a residual connection); its backward hands dy to both inputs unchanged.
void add_forward(float* y, const float* a, const float* b, size_t n);

void relu_forward(float* y, const float* x, size_t n);
void relu_backward(float* dx, const float* dy, const float* y, size_t n);

// GELU, tanh approximation (as GPT-2 and llm.c).
void gelu_forward(float* y, const float* x, size_t n);
void gelu_backward(float* dx, const float* dy, const float* x, size_t n);

// Inverted dropout: mask holds 0 or 1/(1-p), drawn from rng, so eval needs no rescale.
void dropout_forward(float* y, float* mask, const float* x, size_t n, float p, Rng& rng);
void dropout_backward(float* dx, const float* dy, const float* mask, size_t n);

// Softmax + cross-entropy over logits[B,C]. Returns the summed (not mean) loss; probs keeps the softmax.
// Label smoothing ε (PyTorch's label_smoothing) trains toward (1−ε)·one-hot + ε/C: the loss is
// (1−ε)·(−log p_label) + ε·mean_c(−log p_c).
double softmax_cross_entropy_forward(float* probs, const float* logits, const int32_t* labels, int batch, int classes,
                                     float smoothing = 0.0f);
// dlogits = (probs - target) * scale, target the (smoothed) one-hot; scale is 1/(samples in the optimiser step).
void softmax_cross_entropy_backward(float* dlogits, const float* probs, const int32_t* labels, int batch, int classes,
                                    float scale, float smoothing = 0.0f);

// A regression's loss over outputs[B] (one value a sample): the summed squared error Σ (output − target)²; when
// doutputs is given, it gets the gradient 2·(output − target)·scale (PyTorch's MSELoss with the mean taken by scale).
double squared_error(const float* outputs, const float* targets, int batch, float* doutputs = nullptr,
                     float scale = 1.0f);

} // namespace traindeck::engine
