#include "layers.h"

#include "gemm.h"
#include "onednn.h"
#include "parallel.h"
#include "rng.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace traindeck::engine {
namespace {
// Below this many elements a loop is cheaper than waking a thread.
constexpr size_t kElementwiseGrain = 32768;

// The channel loops live in small functions of their own: with plain value arguments and restrict pointers
// GCC vectorises them, which it would not do inside the lambdas, where an int32 store might alias the bound.
inline void copy_channels(float* __restrict dst, const float* __restrict src, int n) {
    for (int i = 0; i < n; ++i)
        dst[i] = src[i];
}

inline void zero_channels(float* __restrict dst, int n) {
    for (int i = 0; i < n; ++i)
        dst[i] = 0.0f;
}

inline void add_channels(float* __restrict dst, const float* __restrict src, int n) {
    for (int i = 0; i < n; ++i)
        dst[i] += src[i];
}

inline void max_channels(float* __restrict best, const float* __restrict v, int n) {
    for (int i = 0; i < n; ++i) {
        const float a = v[i], b = best[i];
        best[i] = a > b ? a : b;
    }
}

inline void narrow_winners(uint8_t* __restrict out, const int32_t* __restrict winner, int n) {
    for (int i = 0; i < n; ++i)
        out[i] = static_cast<uint8_t>(winner[i]);
}

inline void place_recorded(float* __restrict dx, const uint8_t* __restrict winner, const float* __restrict grad,
                           uint8_t k, int n) {
    for (int i = 0; i < n; ++i) {
        const float g = grad[i];
        dx[i] = winner[i] == k ? g : 0.0f;
    }
}

inline void route_recorded(float* __restrict dx, const uint8_t* __restrict winner, const float* __restrict grad,
                           uint8_t k, int n) {
    for (int i = 0; i < n; ++i) {
        const float g = grad[i];
        dx[i] += winner[i] == k ? g : 0.0f;
    }
}

inline void relu_values(float* __restrict y, const float* __restrict x, size_t n) {
    for (size_t i = 0; i < n; ++i)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

inline void relu_gradients(float* __restrict dx, const float* __restrict dy, const float* __restrict y, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        const float g = dy[i];
        dx[i] = y[i] > 0.0f ? g : 0.0f;
    }
}

inline void mark_winner(int32_t* __restrict winner, const float* __restrict v, const float* __restrict out, int32_t k,
                        int n) {
    for (int i = 0; i < n; ++i) {
        const int32_t current = winner[i];
        winner[i] = v[i] == out[i] ? k : current;
    }
}

inline void route_gradient(float* __restrict dx, const int32_t* __restrict winner, const float* __restrict grad,
                           int32_t k, int n) {
    for (int i = 0; i < n; ++i) {
        const float g = grad[i];
        dx[i] += winner[i] == k ? g : 0.0f;
    }
}

// The same where no other window reaches dx: it is written, not added to, and needs no clearing first.
inline void place_gradient(float* __restrict dx, const int32_t* __restrict winner, const float* __restrict grad,
                           int32_t k, int n) {
    for (int i = 0; i < n; ++i) {
        const float g = grad[i];
        dx[i] = winner[i] == k ? g : 0.0f;
    }
}
} // namespace // namespace

void linear_forward(float* y, const float* x, const float* weight, const float* bias, int batch, int in, int out) {
    for (int row = 0; row < batch; ++row)
        std::memcpy(y + static_cast<size_t>(row) * out, bias, sizeof(float) * out);
    gemm(false, true, batch, out, in, 1.0f, x, in, weight, in, 1.0f, y, out);
}

void linear_backward(float* dx, float* dweight, float* dbias, const float* dy, const float* x, const float* weight,
                     int batch, int in, int out) {
    gemm(true, false, out, in, batch, 1.0f, dy, out, x, in, 1.0f, dweight, in);
    for (int row = 0; row < batch; ++row) {
        const float* dy_row = dy + static_cast<size_t>(row) * out;
        for (int o = 0; o < out; ++o)
            dbias[o] += dy_row[o];
    }
    if (dx)
        gemm(false, false, batch, in, out, 1.0f, dy, out, weight, in, 0.0f, dx, in);
}

// im2col, col2im and pooling are split by sample: each thread writes only its own samples' rows.
void im2col_nhwc(float* cols, const float* x, const Conv2dShape& s) {
    const int oh_count = s.out_h(), ow_count = s.out_w(), channels = s.in_c;
    const size_t patch = s.patch();
    const size_t rows_per_sample = static_cast<size_t>(oh_count) * ow_count;
    parallel_for(s.batch, [=](size_t first, size_t last) {
        for (size_t b = first; b < last; ++b) {
            const float* image = x + b * s.in_h * s.in_w * channels;
            float* row = cols + b * rows_per_sample * patch;
            for (int oh = 0; oh < oh_count; ++oh) {
                for (int ow = 0; ow < ow_count; ++ow, row += patch) {
                    float* dst = row;
                    for (int kh = 0; kh < s.kernel; ++kh) {
                        const int ih = oh * s.stride - s.pad + kh;
                        for (int kw = 0; kw < s.kernel; ++kw, dst += channels) {
                            const int iw = ow * s.stride - s.pad + kw;
                            if (ih < 0 || ih >= s.in_h || iw < 0 || iw >= s.in_w)
                                zero_channels(dst, channels);
                            else
                                copy_channels(dst, image + (static_cast<size_t>(ih) * s.in_w + iw) * channels, channels);
                        }
                    }
                }
            }
        }
    });
}

void col2im_nhwc(float* dx, const float* dcols, const Conv2dShape& s) {
    const int oh_count = s.out_h(), ow_count = s.out_w(), channels = s.in_c;
    const size_t patch = s.patch();
    const size_t rows_per_sample = static_cast<size_t>(oh_count) * ow_count;
    const size_t image_size = static_cast<size_t>(s.in_h) * s.in_w * channels;
    parallel_for(s.batch, [=](size_t first, size_t last) {
        for (size_t b = first; b < last; ++b) {
            float* image = dx + b * image_size;
            std::memset(image, 0, sizeof(float) * image_size);
            const float* row = dcols + b * rows_per_sample * patch;
            for (int oh = 0; oh < oh_count; ++oh) {
                for (int ow = 0; ow < ow_count; ++ow, row += patch) {
                    const float* src = row;
                    for (int kh = 0; kh < s.kernel; ++kh) {
                        const int ih = oh * s.stride - s.pad + kh;
                        for (int kw = 0; kw < s.kernel; ++kw, src += channels) {
                            const int iw = ow * s.stride - s.pad + kw;
                            if (ih < 0 || ih >= s.in_h || iw < 0 || iw >= s.in_w)
                                continue;
                            add_channels(image + (static_cast<size_t>(ih) * s.in_w + iw) * channels, src, channels);
                        }
                    }
                }
            }
        }
    });
}

void conv2d_forward(float* y, float* cols, const float* x, const float* weight, const float* bias,
                    const Conv2dShape& s) {
    if (onednn::runs(s))
        onednn::conv2d_forward(y, x, weight, bias, s);
    else
        conv2d_forward_im2col(y, cols, x, weight, bias, s);
}

void conv2d_backward(float* dx, float* dweight, float* dbias, float* dcols, const float* dy, const float* x,
                     const float* cols, const float* weight, const Conv2dShape& s) {
    if (onednn::runs(s))
        onednn::conv2d_backward(dx, dweight, dbias, dy, x, weight, s);
    else
        conv2d_backward_im2col(dx, dweight, dbias, dcols, dy, cols, weight, s);
}

void conv2d_forward_im2col(float* y, float* cols, const float* x, const float* weight, const float* bias,
                           const Conv2dShape& s) {
    im2col_nhwc(cols, x, s);
    const size_t positions = s.positions();
    for (size_t p = 0; p < positions; ++p)
        std::memcpy(y + p * s.out_c, bias, sizeof(float) * s.out_c);
    gemm(false, true, static_cast<int>(positions), s.out_c, s.patch(), 1.0f, cols, s.patch(), weight, s.patch(), 1.0f,
         y, s.out_c);
}

void conv2d_backward_im2col(float* dx, float* dweight, float* dbias, float* dcols, const float* dy, const float* cols,
                            const float* weight, const Conv2dShape& s) {
    const int positions = static_cast<int>(s.positions());
    gemm(true, false, s.out_c, s.patch(), positions, 1.0f, dy, s.out_c, cols, s.patch(), 1.0f, dweight, s.patch());
    for (int p = 0; p < positions; ++p) {
        const float* dy_row = dy + static_cast<size_t>(p) * s.out_c;
        for (int o = 0; o < s.out_c; ++o)
            dbias[o] += dy_row[o];
    }
    if (dx) {
        gemm(false, false, positions, s.patch(), s.out_c, 1.0f, dy, s.out_c, weight, s.patch(), 0.0f, dcols, s.patch());
        col2im_nhwc(dx, dcols, s);
    }
}

void maxpool_forward(float* y, const float* x, int batch, int h, int w, int c, int size, int stride, uint8_t* winners) {
    const int oh_count = (h - size) / stride + 1, ow_count = (w - size) / stride + 1;
    if (size * size > kMaxRecordedWindow)
        winners = nullptr;
    // Channels are innermost (NHWC), so each window step is an element-wise max of two channel vectors.
    parallel_for(batch, [=](size_t first, size_t last) {
        std::vector<int32_t> window_winner(winners ? c : 0);
        for (size_t b = first; b < last; ++b) {
            const float* image = x + b * h * w * c;
            const size_t out_offset = b * oh_count * ow_count * c;
            float* out = y + out_offset;
            uint8_t* winner = winners ? winners + out_offset : nullptr;
            for (int oh = 0; oh < oh_count; ++oh) {
                for (int ow = 0; ow < ow_count; ++ow, out += c) {
                    const float* start =
                        image + (static_cast<size_t>(oh) * stride * w + static_cast<size_t>(ow) * stride) * c;
                    copy_channels(out, start, c);
                    for (int kh = 0; kh < size; ++kh)
                        for (int kw = kh == 0 ? 1 : 0; kw < size; ++kw)
                            max_channels(out, start + (static_cast<size_t>(kh) * w + kw) * c, c);
                    if (!winner)
                        continue;
                    // The first input equal to the maximum, found as backward would find it (while the window is
                    // still in cache).
                    std::fill(window_winner.begin(), window_winner.end(), size * size);
                    for (int k = size * size - 1; k >= 0; --k)
                        mark_winner(window_winner.data(), start + (static_cast<size_t>(k / size) * w + k % size) * c,
                                    out, k, c);
                    narrow_winners(winner, window_winner.data(), c);
                    winner += c;
                }
            }
        }
    });
}

void maxpool_backward(float* dx, const float* dy, const float* x, const float* y, int batch, int h, int w, int c,
                      int size, int stride, const uint8_t* winners) {
    const int oh_count = (h - size) / stride + 1, ow_count = (w - size) / stride + 1;
    const int window = size * size;
    if (window > kMaxRecordedWindow)
        winners = nullptr;
    // The gradient goes to the first input of each window that equals the window's maximum: the input forward
    // picked. Recomputing that is cheaper than storing an index per output. Two branch-free passes per window
    // (find the winner per channel, then write) keep the channel loops vectorised.
    // Windows that tile the image (size == stride, the usual 2x2 pool) each own their inputs: the gradient is
    // written in place, and only the rows and columns past the last window are cleared, not the whole image first.
    const bool tiled = size == stride;
    parallel_for(batch, [=](size_t first, size_t last) {
        std::vector<int32_t> winner(c);
        for (size_t b = first; b < last; ++b) {
            const size_t image_offset = b * h * w * c;
            if (!tiled) {
                std::memset(dx + image_offset, 0, sizeof(float) * h * w * c);
            } else {
                const int covered_h = oh_count * stride, covered_w = ow_count * stride;
                for (int ih = 0; ih < covered_h && covered_w < w; ++ih)
                    std::memset(dx + image_offset + (static_cast<size_t>(ih) * w + covered_w) * c, 0,
                                sizeof(float) * (w - covered_w) * c);
                std::memset(dx + image_offset + static_cast<size_t>(covered_h) * w * c, 0,
                            sizeof(float) * (h - covered_h) * w * c);
            }
            const float* out = y + b * oh_count * ow_count * c;
            const float* grad = dy + b * oh_count * ow_count * c;
            const uint8_t* recorded = winners ? winners + b * oh_count * ow_count * c : nullptr;
            for (int oh = 0; oh < oh_count; ++oh) {
                for (int ow = 0; ow < ow_count; ++ow, out += c, grad += c) {
                    const size_t corner =
                        image_offset + (static_cast<size_t>(oh) * stride * w + static_cast<size_t>(ow) * stride) * c;
                    if (recorded) {
                        for (int k = 0; k < window; ++k) {
                            float* target = dx + corner + (static_cast<size_t>(k / size) * w + k % size) * c;
                            if (tiled)
                                place_recorded(target, recorded, grad, static_cast<uint8_t>(k), c);
                            else
                                route_recorded(target, recorded, grad, static_cast<uint8_t>(k), c);
                        }
                        recorded += c;
                        continue;
                    }
                    std::fill(winner.begin(), winner.end(), window);
                    for (int k = window - 1; k >= 0; --k) // last to first, so the first match stays
                        mark_winner(winner.data(), x + corner + (static_cast<size_t>(k / size) * w + k % size) * c, out,
                                    k, c);
                    for (int k = 0; k < window; ++k) {
                        float* target = dx + corner + (static_cast<size_t>(k / size) * w + k % size) * c;
                        if (tiled)
                            place_gradient(target, winner.data(), grad, k, c);
                        else
                            route_gradient(target, winner.data(), grad, k, c);
                    }
                }
            }
        }
    });
}

void avgpool_forward(float* y, const float* x, int batch, int h, int w, int c, int size, int stride) {
    const int oh_count = (h - size) / stride + 1, ow_count = (w - size) / stride + 1;
    const float inv_window = 1.0f / static_cast<float>(size * size);
    parallel_for(batch, [=](size_t first, size_t last) {
        for (size_t b = first; b < last; ++b) {
            const float* image = x + b * h * w * c;
            float* out = y + b * oh_count * ow_count * c;
            for (int oh = 0; oh < oh_count; ++oh) {
                for (int ow = 0; ow < ow_count; ++ow, out += c) {
                    const float* start =
                        image + (static_cast<size_t>(oh) * stride * w + static_cast<size_t>(ow) * stride) * c;
                    zero_channels(out, c);
                    for (int kh = 0; kh < size; ++kh)
                        for (int kw = 0; kw < size; ++kw)
                            add_channels(out, start + (static_cast<size_t>(kh) * w + kw) * c, c);
                    for (int k = 0; k < c; ++k)
                        out[k] *= inv_window;
                }
            }
        }
    });
}

void avgpool_backward(float* dx, const float* dy, int batch, int h, int w, int c, int size, int stride) {
    const int oh_count = (h - size) / stride + 1, ow_count = (w - size) / stride + 1;
    const float inv_window = 1.0f / static_cast<float>(size * size);
    parallel_for(batch, [=](size_t first, size_t last) {
        std::vector<float> share(c);
        for (size_t b = first; b < last; ++b) {
            float* image = dx + b * h * w * c;
            std::memset(image, 0, sizeof(float) * h * w * c);
            const float* grad = dy + b * oh_count * ow_count * c;
            for (int oh = 0; oh < oh_count; ++oh) {
                for (int ow = 0; ow < ow_count; ++ow, grad += c) {
                    for (int k = 0; k < c; ++k)
                        share[k] = grad[k] * inv_window;
                    float* start =
                        image + (static_cast<size_t>(oh) * stride * w + static_cast<size_t>(ow) * stride) * c;
                    for (int kh = 0; kh < size; ++kh)
                        for (int kw = 0; kw < size; ++kw)
                            add_channels(start + (static_cast<size_t>(kh) * w + kw) * c, share.data(), c);
                }
            }
        }
    });
}

void global_avgpool_forward(float* y, const float* x, int batch, int positions, int c) {
    const float inv_positions = 1.0f / static_cast<float>(positions);
    parallel_for(batch, [=](size_t first, size_t last) {
        for (size_t b = first; b < last; ++b) {
            float* out = y + b * c;
            zero_channels(out, c);
            for (int p = 0; p < positions; ++p)
                add_channels(out, x + (b * positions + p) * c, c);
            for (int k = 0; k < c; ++k)
                out[k] *= inv_positions;
        }
    });
}

void global_avgpool_backward(float* dx, const float* dy, int batch, int positions, int c) {
    const float inv_positions = 1.0f / static_cast<float>(positions);
    parallel_for(batch, [=](size_t first, size_t last) {
        for (size_t b = first; b < last; ++b)
            for (int p = 0; p < positions; ++p) {
                float* row = dx + (b * positions + p) * c;
                for (int k = 0; k < c; ++k)
                    row[k] = dy[b * c + k] * inv_positions;
            }
    });
}

// The per-channel sums run over rows in order (one thread), in double: the statistics are then the same whatever
// the thread count, so a run resumed on another machine normalises exactly as before.
void batchnorm_forward_training(float* y, float* xhat, float* inv_std, float* running_mean, float* running_var,
                                const float* x, const float* gamma, const float* beta, size_t rows, int c,
                                float momentum, float eps) {
    std::vector<double> sum(c, 0.0), squares(c, 0.0);
    for (size_t r = 0; r < rows; ++r) {
        const float* row = x + r * c;
        for (int k = 0; k < c; ++k)
            sum[k] += row[k];
    }
    std::vector<float> mean(c);
    for (int k = 0; k < c; ++k)
        mean[k] = static_cast<float>(sum[k] / static_cast<double>(rows));
    for (size_t r = 0; r < rows; ++r) {
        const float* row = x + r * c;
        for (int k = 0; k < c; ++k) {
            const double d = static_cast<double>(row[k]) - mean[k];
            squares[k] += d * d;
        }
    }
    for (int k = 0; k < c; ++k) {
        const double variance = squares[k] / static_cast<double>(rows);
        inv_std[k] = static_cast<float>(1.0 / std::sqrt(variance + eps));
        const double unbiased = rows > 1 ? squares[k] / static_cast<double>(rows - 1) : variance;
        running_mean[k] = (1.0f - momentum) * running_mean[k] + momentum * mean[k];
        running_var[k] = (1.0f - momentum) * running_var[k] + momentum * static_cast<float>(unbiased);
    }
    parallel_for(
        rows,
        [&](size_t first, size_t last) {
            for (size_t r = first; r < last; ++r)
                for (int k = 0; k < c; ++k) {
                    const size_t i = r * c + k;
                    xhat[i] = (x[i] - mean[k]) * inv_std[k];
                    y[i] = xhat[i] * gamma[k] + beta[k];
                }
        },
        kElementwiseGrain / std::max(1, c));
}

void batchnorm_forward_inference(float* y, const float* x, const float* gamma, const float* beta,
                                 const float* running_mean, const float* running_var, size_t rows, int c, float eps) {
    std::vector<float> scale(c), shift(c);
    for (int k = 0; k < c; ++k) {
        scale[k] = gamma[k] / std::sqrt(running_var[k] + eps);
        shift[k] = beta[k] - running_mean[k] * scale[k];
    }
    parallel_for(
        rows,
        [&](size_t first, size_t last) {
            for (size_t r = first; r < last; ++r)
                for (int k = 0; k < c; ++k)
                    y[r * c + k] = x[r * c + k] * scale[k] + shift[k];
        },
        kElementwiseGrain / std::max(1, c));
}

void batchnorm_backward(float* dx, float* dgamma, float* dbeta, const float* dy, const float* xhat,
                        const float* inv_std, const float* gamma, size_t rows, int c) {
    std::vector<double> dy_sum(c, 0.0), dy_xhat_sum(c, 0.0);
    for (size_t r = 0; r < rows; ++r)
        for (int k = 0; k < c; ++k) {
            const size_t i = r * c + k;
            dy_sum[k] += dy[i];
            dy_xhat_sum[k] += static_cast<double>(dy[i]) * xhat[i];
        }
    std::vector<float> mean_dy(c), mean_dy_xhat(c), scale(c);
    for (int k = 0; k < c; ++k) {
        dgamma[k] += static_cast<float>(dy_xhat_sum[k]);
        dbeta[k] += static_cast<float>(dy_sum[k]);
        mean_dy[k] = static_cast<float>(dy_sum[k] / static_cast<double>(rows));
        mean_dy_xhat[k] = static_cast<float>(dy_xhat_sum[k] / static_cast<double>(rows));
        scale[k] = gamma[k] * inv_std[k];
    }
    if (!dx)
        return;
    parallel_for(
        rows,
        [&](size_t first, size_t last) {
            for (size_t r = first; r < last; ++r)
                for (int k = 0; k < c; ++k) {
                    const size_t i = r * c + k;
                    dx[i] = scale[k] * (dy[i] - mean_dy[k] - xhat[i] * mean_dy_xhat[k]);
                }
        },
        kElementwiseGrain / std::max(1, c));
}

void add_forward(float* y, const float* a, const float* b, size_t n) {
    parallel_for(
        n,
        [&](size_t first, size_t last) {
            for (size_t i = first; i < last; ++i)
                y[i] = a[i] + b[i];
        },
        kElementwiseGrain);
}

void relu_forward(float* y, const float* x, size_t n) {
    parallel_for(
        n, [&](size_t first, size_t last) { relu_values(y + first, x + first, last - first); }, kElementwiseGrain);
}

void relu_backward(float* dx, const float* dy, const float* y, size_t n) {
    parallel_for(
        n, [&](size_t first, size_t last) { relu_gradients(dx + first, dy + first, y + first, last - first); },
        kElementwiseGrain);
}

namespace {
constexpr float kGeluScale = 0.7978845608028654f; // sqrt(2/pi)
}

void gelu_forward(float* y, const float* x, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        const float v = x[i];
        y[i] = 0.5f * v * (1.0f + std::tanh(kGeluScale * (v + 0.044715f * v * v * v)));
    }
}

void gelu_backward(float* dx, const float* dy, const float* x, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        const float v = x[i];
        const float inner = kGeluScale * (v + 0.044715f * v * v * v);
        const float t = std::tanh(inner);
        const float sech2 = 1.0f - t * t;
        const float local = 0.5f * (1.0f + t) + 0.5f * v * sech2 * kGeluScale * (1.0f + 3.0f * 0.044715f * v * v);
        dx[i] = dy[i] * local;
    }
}

void dropout_forward(float* y, float* mask, const float* x, size_t n, float p, Rng& rng) {
    const float keep_scale = 1.0f / (1.0f - p);
    for (size_t i = 0; i < n; ++i) {
        mask[i] = rng.uniform() < p ? 0.0f : keep_scale;
        y[i] = x[i] * mask[i];
    }
}

void dropout_backward(float* dx, const float* dy, const float* mask, size_t n) {
    for (size_t i = 0; i < n; ++i)
        dx[i] = dy[i] * mask[i];
}

double softmax_cross_entropy_forward(float* probs, const float* logits, const int32_t* labels, int batch, int classes,
                                     float smoothing) {
    double loss = 0.0;
    for (int b = 0; b < batch; ++b) {
        const float* row = logits + static_cast<size_t>(b) * classes;
        float* p = probs + static_cast<size_t>(b) * classes;
        const float max_logit = *std::max_element(row, row + classes);
        double sum = 0.0;
        for (int c = 0; c < classes; ++c) {
            p[c] = std::exp(row[c] - max_logit);
            sum += p[c];
        }
        const float inv = static_cast<float>(1.0 / sum);
        for (int c = 0; c < classes; ++c)
            p[c] *= inv;
        // log-sum-exp form keeps the loss finite even when the label's probability underflows.
        const double log_sum = std::log(sum) + max_logit;
        if (smoothing == 0.0f) {
            loss += log_sum - row[labels[b]];
            continue;
        }
        double logit_sum = 0.0;
        for (int c = 0; c < classes; ++c)
            logit_sum += row[c];
        loss += (1.0 - smoothing) * (log_sum - row[labels[b]]) + smoothing * (log_sum - logit_sum / classes);
    }
    return loss;
}

double squared_error(const float* outputs, const float* targets, int batch, float* doutputs, float scale) {
    double loss = 0.0;
    for (int b = 0; b < batch; ++b) {
        const float error = outputs[b] - targets[b];
        loss += static_cast<double>(error) * error;
        if (doutputs)
            doutputs[b] = 2.0f * error * scale;
    }
    return loss;
}

void softmax_cross_entropy_backward(float* dlogits, const float* probs, const int32_t* labels, int batch, int classes,
                                    float scale, float smoothing) {
    const float spread = smoothing / static_cast<float>(classes) * scale;
    for (int b = 0; b < batch; ++b) {
        const size_t offset = static_cast<size_t>(b) * classes;
        for (int c = 0; c < classes; ++c)
            dlogits[offset + c] = probs[offset + c] * scale - spread;
        dlogits[offset + labels[b]] -= scale - smoothing * scale;
    }
}

} // namespace traindeck::engine
