// Every layer's backward pass against central finite differences of its forward pass,
// first layer by layer, then through a whole network with every layer type.
#include "layers.h"
#include "gemm.h"
#include "network.h"
#include "onednn.h"
#include "rng.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

using namespace traindeck::engine;

namespace {

std::vector<float> random_vector(size_t n, Rng& rng, float scale = 1.0f) {
    std::vector<float> v(n);
    for (auto& x : v)
        x = rng.uniform(-scale, scale);
    return v;
}

// Checks analytic against numeric derivative of loss() w.r.t. every entry of `values`.
void expect_gradient(std::vector<float>& values, const std::vector<float>& analytic, const std::function<double()>& loss,
                     const char* what, float eps = 1e-2f, double tolerance = 2e-2) {
    ASSERT_EQ(values.size(), analytic.size());
    double worst = 0.0;
    for (size_t i = 0; i < values.size(); ++i) {
        const float saved = values[i];
        values[i] = saved + eps;
        const double up = loss();
        values[i] = saved - eps;
        const double down = loss();
        values[i] = saved;
        const double numeric = (up - down) / (2.0 * eps);
        const double error = std::abs(numeric - analytic[i]) / std::max(1.0, std::abs(numeric) + std::abs(analytic[i]));
        worst = std::max(worst, error);
        EXPECT_LT(error, tolerance) << what << " entry " << i << ": numeric " << numeric << " analytic " << analytic[i];
    }
    ::testing::Test::RecordProperty(what, std::to_string(worst));
}

double dot(const std::vector<float>& a, const std::vector<float>& b) {
    double sum = 0.0;
    for (size_t i = 0; i < a.size(); ++i)
        sum += double(a[i]) * b[i];
    return sum;
}

} // namespace

TEST(Layers, LinearGradients) {
    Rng rng(7);
    const int batch = 3, in = 5, out = 4;
    auto x = random_vector(static_cast<size_t>(batch) * in, rng), w = random_vector(static_cast<size_t>(out) * in, rng),
         b = random_vector(out, rng);
    const auto probe = random_vector(static_cast<size_t>(batch) * out, rng); // loss = <y, probe>, so dy = probe
    std::vector<float> y(probe.size()), dx(x.size()), dw(w.size(), 0.0f), db(b.size(), 0.0f);
    auto loss = [&] {
        linear_forward(y.data(), x.data(), w.data(), b.data(), batch, in, out);
        return dot(y, probe);
    };
    linear_backward(dx.data(), dw.data(), db.data(), probe.data(), x.data(), w.data(), batch, in, out);
    expect_gradient(x, dx, loss, "linear dx");
    expect_gradient(w, dw, loss, "linear dW");
    expect_gradient(b, db, loss, "linear db");
}

TEST(Layers, Conv2dGradientsWithPaddingAndStride) {
    Rng rng(11);
    for (const auto& [stride, pad] : {std::pair{1, 1}, std::pair{2, 0}, std::pair{2, 1}}) {
        Conv2dShape s{.batch = 2, .in_h = 6, .in_w = 5, .in_c = 3, .out_c = 4, .kernel = 3, .stride = stride, .pad = pad};
        auto x = random_vector(size_t(s.batch) * s.in_h * s.in_w * s.in_c, rng);
        auto w = random_vector(size_t(s.out_c) * s.patch(), rng);
        auto b = random_vector(s.out_c, rng);
        const auto probe = random_vector(s.positions() * s.out_c, rng);
        std::vector<float> y(probe.size()), cols(s.positions() * s.patch()), dcols(cols.size());
        std::vector<float> dx(x.size()), dw(w.size(), 0.0f), db(b.size(), 0.0f);
        auto loss = [&] {
            conv2d_forward(y.data(), cols.data(), x.data(), w.data(), b.data(), s);
            return dot(y, probe);
        };
        loss();
        conv2d_backward(dx.data(), dw.data(), db.data(), dcols.data(), probe.data(), x.data(), cols.data(), w.data(),
                        s);
        expect_gradient(x, dx, loss, "conv dx");
        expect_gradient(w, dw, loss, "conv dW");
        expect_gradient(b, db, loss, "conv db");
    }
}

TEST(Layers, Conv2dMatchesDirectConvolution) {
    Rng rng(3);
    Conv2dShape s{.batch = 1, .in_h = 4, .in_w = 4, .in_c = 2, .out_c = 1, .kernel = 3, .stride = 1, .pad = 1};
    auto x = random_vector(32, rng), w = random_vector(18, rng);
    std::vector<float> b = {0.25f}, y(16), cols(s.positions() * s.patch());
    conv2d_forward(y.data(), cols.data(), x.data(), w.data(), b.data(), s);
    for (int oh = 0; oh < 4; ++oh)
        for (int ow = 0; ow < 4; ++ow) {
            double expected = 0.25;
            for (int kh = 0; kh < 3; ++kh)
                for (int kw = 0; kw < 3; ++kw)
                    for (int c = 0; c < 2; ++c) {
                        const int ih = oh + kh - 1, iw = ow + kw - 1;
                        if (ih >= 0 && ih < 4 && iw >= 0 && iw < 4)
                            expected += double(x[(ih * 4 + iw) * 2 + c]) * w[(kh * 3 + kw) * 2 + c];
                    }
            EXPECT_NEAR(y[oh * 4 + ow], expected, 1e-5);
        }
}

// oneDNN's kernels against the engine's own im2col + gemm, on the shapes the engine meets: a first layer of one
// channel, the CNN preset's second layer, padding and stride, a 1x1 shortcut, batches that do not split evenly among
// the threads and a batch of one. The weight gradients must add onto what is there (gradient accumulation).
// Also with 4 threads and batches smaller than that, so that a share's kernels run on another thread than the one
// that made them, and after the pool is made again.
TEST(Layers, OneDnnConvolutionsMatchTheEnginesOwn) {
    struct Threads {
        ~Threads() { set_compute_threads(1); }
    } restore;
    Rng rng(21);
    const std::vector<Conv2dShape> shapes = {
        {.batch = 5, .in_h = 28, .in_w = 28, .in_c = 1, .out_c = 32, .kernel = 3},
        {.batch = 7, .in_h = 13, .in_w = 13, .in_c = 32, .out_c = 64, .kernel = 3},
        {.batch = 3, .in_h = 9, .in_w = 8, .in_c = 6, .out_c = 8, .kernel = 3, .stride = 2, .pad = 1},
        {.batch = 4, .in_h = 8, .in_w = 8, .in_c = 8, .out_c = 16, .kernel = 1, .stride = 2},
        {.batch = 1, .in_h = 6, .in_w = 5, .in_c = 3, .out_c = 4, .kernel = 3, .pad = 1},
        {.batch = 3, .in_h = 6, .in_w = 5, .in_c = 3, .out_c = 4, .kernel = 3, .pad = 1},
        {.batch = 5, .in_h = 6, .in_w = 5, .in_c = 3, .out_c = 4, .kernel = 3, .pad = 1},
    };
    for (const int threads : {2, 4, 4, 1})
        for (const Conv2dShape& s : shapes) {
            set_compute_threads(threads);
            SCOPED_TRACE(testing::Message()
                         << s.in_h << "x" << s.in_w << "x" << s.in_c << " -> " << s.out_c << " k" << s.kernel << " s"
                         << s.stride << " p" << s.pad << " batch " << s.batch << ", " << threads << " threads");
            ASSERT_TRUE(onednn::runs(s)) << "oneDNN has no JIT kernel for this shape on this CPU";
            EXPECT_NE(std::string(onednn::kernel_name(s)), "");
            const auto x = random_vector(size_t(s.batch) * s.in_h * s.in_w * s.in_c, rng);
            const auto w = random_vector(size_t(s.out_c) * s.patch(), rng);
            const auto b = random_vector(s.out_c, rng);
            const auto dy = random_vector(s.positions() * s.out_c, rng);
            const auto dw0 = random_vector(w.size(), rng), db0 = random_vector(b.size(), rng);
            std::vector<float> cols(s.positions() * s.patch()), dcols(cols.size());
            std::vector<float> y_own(dy.size()), dx_own(x.size()), dw_own = dw0, db_own = db0;
            conv2d_forward_im2col(y_own.data(), cols.data(), x.data(), w.data(), b.data(), s);
            conv2d_backward_im2col(dx_own.data(), dw_own.data(), db_own.data(), dcols.data(), dy.data(), cols.data(),
                                   w.data(), s);
            std::vector<float> y(dy.size(), NAN), dx(x.size(), NAN), dw = dw0, db = db0;
            conv2d_forward(y.data(), nullptr, x.data(), w.data(), b.data(), s);
            conv2d_backward(dx.data(), dw.data(), db.data(), nullptr, dy.data(), x.data(), nullptr, w.data(), s);
            auto expect_close = [](const std::vector<float>& got, const std::vector<float>& want, const char* what) {
                size_t far = 0;
                for (size_t i = 0; i < want.size(); ++i)
                    far += !(std::abs(got[i] - want[i]) <= 1e-4f * std::max(1.0f, std::abs(want[i])));
                EXPECT_EQ(far, 0u) << what << ": " << far << " of " << want.size() << " differ";
            };
            expect_close(y, y_own, "output");
            expect_close(dx, dx_own, "input gradient");
            expect_close(dw, dw_own, "weight gradient");
            expect_close(db, db_own, "bias gradient");
            // The same inputs give the same bits: a resumed run goes on exactly.
            std::vector<float> dx_again(x.size()), dw_again = dw0, db_again = db0;
            conv2d_backward(dx_again.data(), dw_again.data(), db_again.data(), nullptr, dy.data(), x.data(), nullptr,
                            w.data(), s);
            EXPECT_EQ(dx_again, dx);
            EXPECT_EQ(dw_again, dw);
            EXPECT_EQ(db_again, db);
            // The first layer's input gradient is not asked for.
            std::vector<float> dw_first = dw0, db_first = db0;
            conv2d_backward(nullptr, dw_first.data(), db_first.data(), nullptr, dy.data(), x.data(), nullptr, w.data(),
                            s);
            EXPECT_EQ(dw_first, dw);
        }
}

TEST(Layers, MaxPoolActivationsAndSoftmaxGradients) {
    Rng rng(5);
    // Windows that tile the image exactly, tile it with a row and a column left over, overlap, and leave gaps. dx
    // starts as NaN: whatever no window reaches must still come out 0.
    struct Pool {
        int h, w, size, stride;
    };
    for (const Pool p : {Pool{4, 6, 2, 2}, Pool{5, 7, 2, 2}, Pool{7, 7, 3, 2}, Pool{7, 8, 2, 3}}) {
        SCOPED_TRACE(testing::Message() << p.h << "x" << p.w << " size " << p.size << " stride " << p.stride);
        const int batch = 2, c = 3;
        auto x = random_vector(size_t(batch) * p.h * p.w * c, rng);
        const size_t out_count = size_t(batch) * ((p.h - p.size) / p.stride + 1) * ((p.w - p.size) / p.stride + 1) * c;
        const auto probe = random_vector(out_count, rng);
        std::vector<float> y(out_count), dx(x.size(), NAN);
        auto loss = [&] {
            maxpool_forward(y.data(), x.data(), batch, p.h, p.w, c, p.size, p.stride);
            return dot(y, probe);
        };
        loss();
        maxpool_backward(dx.data(), probe.data(), x.data(), y.data(), batch, p.h, p.w, c, p.size, p.stride);
        // Winners recorded by forward give the same bits without x and y, ties included (inputs rounded to 0.5
        // steps: equal values in most windows, where the first must win as it does when backward looks for it).
        for (const bool ties : {false, true}) {
            std::vector<float> tx = x;
            if (ties)
                for (float& v : tx)
                    v = std::round(v * 2.0f) / 2.0f;
            std::vector<float> ty(out_count), ty_recorded(out_count), tdx(x.size(), NAN), tdx_recorded(x.size(), NAN);
            std::vector<uint8_t> winners(out_count, 77);
            maxpool_forward(ty.data(), tx.data(), batch, p.h, p.w, c, p.size, p.stride);
            maxpool_forward(ty_recorded.data(), tx.data(), batch, p.h, p.w, c, p.size, p.stride, winners.data());
            EXPECT_EQ(ty_recorded, ty);
            maxpool_backward(tdx.data(), probe.data(), tx.data(), ty.data(), batch, p.h, p.w, c, p.size, p.stride);
            maxpool_backward(tdx_recorded.data(), probe.data(), nullptr, nullptr, batch, p.h, p.w, c, p.size, p.stride,
                             winners.data());
            EXPECT_EQ(tdx_recorded, tdx) << (ties ? "with ties" : "without ties");
        }
        expect_gradient(x, dx, loss, "maxpool dx", 1e-3f);
    }
    {
        auto x = random_vector(64, rng, 3.0f);
        const auto probe = random_vector(64, rng);
        std::vector<float> y(64), dx(64);
        auto gelu_loss = [&] {
            gelu_forward(y.data(), x.data(), x.size());
            return dot(y, probe);
        };
        gelu_backward(dx.data(), probe.data(), x.data(), x.size());
        expect_gradient(x, dx, gelu_loss, "gelu dx", 1e-3f);
        auto relu_loss = [&] {
            relu_forward(y.data(), x.data(), x.size());
            return dot(y, probe);
        };
        relu_loss();
        relu_backward(dx.data(), probe.data(), y.data(), x.size());
        expect_gradient(x, dx, relu_loss, "relu dx", 1e-3f);
    }
    {
        const int batch = 4, classes = 5;
        auto logits = random_vector(static_cast<size_t>(batch) * classes, rng, 4.0f);
        std::vector<int32_t> labels = {0, 3, 4, 1};
        std::vector<float> probs(logits.size()), dlogits(logits.size());
        auto loss = [&] { return softmax_cross_entropy_forward(probs.data(), logits.data(), labels.data(), batch, classes); };
        loss();
        softmax_cross_entropy_backward(dlogits.data(), probs.data(), labels.data(), batch, classes, 1.0f);
        expect_gradient(logits, dlogits, loss, "softmax-xent dlogits", 1e-3f);
    }
}

TEST(Layers, BatchNormGradientsAndRunningStatistics) {
    Rng rng(17);
    const int batch = 3, h = 2, w = 2, c = 4;
    const size_t rows = size_t(batch) * h * w, n = rows * c;
    auto x = random_vector(n, rng, 2.0f), gamma = random_vector(c, rng), beta = random_vector(c, rng);
    const auto probe = random_vector(n, rng);
    std::vector<float> y(n), xhat(n), inv_std(c), dx(n), dgamma(c, 0.0f), dbeta(c, 0.0f);
    std::vector<float> running_mean(c, 0.0f), running_var(c, 1.0f);
    auto loss = [&] {
        batchnorm_forward_training(y.data(), xhat.data(), inv_std.data(), running_mean.data(), running_var.data(),
                                   x.data(), gamma.data(), beta.data(), rows, c, 0.1f, 1e-5f);
        return dot(y, probe);
    };
    loss();
    batchnorm_backward(dx.data(), dgamma.data(), dbeta.data(), probe.data(), xhat.data(), inv_std.data(), gamma.data(),
                       rows, c);
    expect_gradient(x, dx, loss, "batchnorm dx", 1e-3f);
    expect_gradient(gamma, dgamma, loss, "batchnorm dgamma", 1e-3f);
    expect_gradient(beta, dbeta, loss, "batchnorm dbeta", 1e-3f);

    // Each channel comes out with mean 0 and (biased) variance 1 before γ and β.
    for (int k = 0; k < c; ++k) {
        double mean = 0, square = 0;
        for (size_t r = 0; r < rows; ++r)
            mean += xhat[r * c + k];
        for (size_t r = 0; r < rows; ++r)
            square += double(xhat[r * c + k]) * xhat[r * c + k];
        EXPECT_NEAR(mean / rows, 0.0, 1e-6);
        EXPECT_NEAR(square / rows, 1.0, 1e-3);
    }
    // One step from (0, 1) with momentum 0.5 lands halfway to the batch's mean and unbiased variance; inference
    // then normalises with those, not with the batch.
    std::fill(running_mean.begin(), running_mean.end(), 0.0f);
    std::fill(running_var.begin(), running_var.end(), 1.0f);
    batchnorm_forward_training(y.data(), xhat.data(), inv_std.data(), running_mean.data(), running_var.data(), x.data(),
                               gamma.data(), beta.data(), rows, c, 0.5f, 1e-5f);
    for (int k = 0; k < c; ++k) {
        double mean = 0, square = 0;
        for (size_t r = 0; r < rows; ++r)
            mean += x[r * c + k];
        mean /= rows;
        for (size_t r = 0; r < rows; ++r)
            square += (x[r * c + k] - mean) * (x[r * c + k] - mean);
        EXPECT_NEAR(running_mean[k], 0.5 * mean, 1e-5);
        EXPECT_NEAR(running_var[k], 0.5 + 0.5 * square / (rows - 1), 1e-4);
    }
    batchnorm_forward_inference(y.data(), x.data(), gamma.data(), beta.data(), running_mean.data(), running_var.data(),
                                rows, c, 1e-5f);
    for (size_t i = 0; i < n; ++i) {
        const int k = static_cast<int>(i % c);
        EXPECT_NEAR(y[i], (x[i] - running_mean[k]) / std::sqrt(running_var[k] + 1e-5) * gamma[k] + beta[k], 1e-5);
    }
}

TEST(Layers, AveragePoolingGradients) {
    Rng rng(23);
    const int batch = 2, h = 5, w = 4, c = 3;
    auto x = random_vector(size_t(batch) * h * w * c, rng);
    {
        // 2x2 windows, stride 1: overlapping windows share inputs, so the gradient sums their shares.
        const size_t out_count = size_t(batch) * 4 * 3 * c;
        const auto probe = random_vector(out_count, rng);
        std::vector<float> y(out_count), dx(x.size());
        auto loss = [&] {
            avgpool_forward(y.data(), x.data(), batch, h, w, c, 2, 1);
            return dot(y, probe);
        };
        avgpool_backward(dx.data(), probe.data(), batch, h, w, c, 2, 1);
        expect_gradient(x, dx, loss, "avgpool dx", 1e-3f);
        loss();
        const size_t row = size_t(w) * c; // the window's second row
        EXPECT_NEAR(y[0], (x[0] + x[c] + x[row] + x[row + c]) / 4.0, 1e-6);
    }
    {
        const auto probe = random_vector(size_t(batch) * c, rng);
        std::vector<float> y(size_t(batch) * c), dx(x.size());
        auto loss = [&] {
            global_avgpool_forward(y.data(), x.data(), batch, h * w, c);
            return dot(y, probe);
        };
        global_avgpool_backward(dx.data(), probe.data(), batch, h * w, c);
        expect_gradient(x, dx, loss, "global avgpool dx", 1e-3f);
    }
}

TEST(Layers, LabelSmoothingLossAndGradient) {
    Rng rng(29);
    const int batch = 4, classes = 5;
    auto logits = random_vector(static_cast<size_t>(batch) * classes, rng, 4.0f);
    std::vector<int32_t> labels = {0, 3, 4, 1};
    std::vector<float> probs(logits.size()), dlogits(logits.size());
    auto loss = [&] {
        return softmax_cross_entropy_forward(probs.data(), logits.data(), labels.data(), batch, classes, 0.2f);
    };
    const double smoothed = loss();
    softmax_cross_entropy_backward(dlogits.data(), probs.data(), labels.data(), batch, classes, 1.0f, 0.2f);
    expect_gradient(logits, dlogits, loss, "smoothed softmax-xent dlogits", 1e-3f);
    // The loss against the smoothed target, computed directly: -Σ_c target_c · log p_c.
    loss(); // the probabilities of the unperturbed logits again
    double direct = 0.0;
    for (int b = 0; b < batch; ++b)
        for (int k = 0; k < classes; ++k) {
            const double target = (k == labels[b] ? 0.8 : 0.0) + 0.2 / classes;
            direct -= target * std::log(probs[size_t(b) * classes + k]);
        }
    EXPECT_NEAR(smoothed, direct, 1e-4);
    EXPECT_GT(smoothed, softmax_cross_entropy_forward(probs.data(), logits.data(), labels.data(), batch, classes));
}

TEST(Layers, SoftmaxCrossEntropyStaysFiniteForHugeLogits) {
    std::vector<float> logits = {1000.0f, -1000.0f, 0.0f}, probs(3);
    std::vector<int32_t> labels = {1};
    const double loss = softmax_cross_entropy_forward(probs.data(), logits.data(), labels.data(), 1, 3);
    EXPECT_NEAR(loss, 2000.0, 1e-3);
    EXPECT_FLOAT_EQ(probs[0], 1.0f);
}

TEST(Layers, DropoutMaskIsReproducibleAndScaled) {
    Rng a(99), b(99);
    std::vector<float> x(10000, 1.0f), y1(x.size()), y2(x.size()), m1(x.size()), m2(x.size());
    dropout_forward(y1.data(), m1.data(), x.data(), x.size(), 0.3f, a);
    dropout_forward(y2.data(), m2.data(), x.data(), x.size(), 0.3f, b);
    EXPECT_EQ(y1, y2);
    size_t dropped = 0;
    for (float v : y1) {
        EXPECT_TRUE(v == 0.0f || std::abs(v - 1.0f / 0.7f) < 1e-6f);
        dropped += v == 0.0f;
    }
    EXPECT_NEAR(dropped / 10000.0, 0.3, 0.03);
}

TEST(Network, WholeNetworkGradientsMatchFiniteDifferences) {
    const std::vector<LayerSpec> specs = {
        {.type = LayerType::conv2d, .out = 3, .kernel = 3, .stride = 1, .padding = 1},
        {.type = LayerType::gelu},
        {.type = LayerType::maxpool, .stride = 2, .size = 2},
        {.type = LayerType::conv2d, .out = 4, .kernel = 2, .stride = 1},
        {.type = LayerType::relu},
        {.type = LayerType::flatten},
        {.type = LayerType::linear, .out = 6},
        {.type = LayerType::gelu},
    };
    auto built = Network::build(specs, {6, 6, 2}, 3, 4);
    ASSERT_TRUE(built) << built.error();
    Network& net = *built;
    Rng rng(21);
    net.initialize(rng);
    const int batch = 4;
    auto x = random_vector(size_t(batch) * 72, rng);
    std::vector<int32_t> labels = {0, 2, 1, 2};
    std::vector<float> probs(static_cast<size_t>(batch) * 3), dlogits(probs.size());
    Rng unused;
    auto loss = [&] {
        const float* logits = net.forward(x.data(), batch, true, unused);
        return softmax_cross_entropy_forward(probs.data(), logits, labels.data(), batch, 3) / batch;
    };
    loss();
    softmax_cross_entropy_backward(dlogits.data(), probs.data(), labels.data(), batch, 3, 1.0f / batch);
    std::fill(net.grads().begin(), net.grads().end(), 0.0f);
    net.backward(x.data(), dlogits.data(), batch);
    const std::vector<float> analytic = net.grads();
    expect_gradient(net.params(), analytic, loss, "network params", 1e-3f, 3e-2);
    // The implied classifier head: the spec ended in gelu, so build() appended linear(3).
    EXPECT_EQ(net.layers().back().spec.type, LayerType::linear);
    EXPECT_EQ(net.layers().back().out.size(), 3u);
}

TEST(Network, ResidualBatchNormNetworkGradientsMatchFiniteDifferences) {
    // Two residual blocks (the second skipping a batchnorm and a gelu), average pooling and global average pooling:
    // a residual's gradient reaches its source twice, once through the block and once around it.
    const std::vector<LayerSpec> specs = {
        {.type = LayerType::conv2d, .out = 3, .kernel = 3, .stride = 1, .padding = 1},
        {.type = LayerType::batchnorm},
        {.type = LayerType::gelu}, // smooth: a ReLU's kink next to a batchnorm's output fools finite differences
        {.type = LayerType::conv2d, .out = 3, .kernel = 3, .stride = 1, .padding = 1}, // 3
        {.type = LayerType::batchnorm},
        {.type = LayerType::add, .from = 3},
        {.type = LayerType::avgpool, .stride = 2, .size = 2},
        {.type = LayerType::batchnorm}, // 7
        {.type = LayerType::gelu},
        {.type = LayerType::add, .from = 7},
        {.type = LayerType::global_avgpool},
        {.type = LayerType::flatten},
        {.type = LayerType::linear, .out = 5},
        {.type = LayerType::batchnorm},
    };
    auto built = Network::build(specs, {6, 6, 2}, 3, 4);
    ASSERT_TRUE(built) << built.error();
    Network& net = *built;
    Rng rng(31);
    net.initialize(rng);
    // Move batchnorm's γ and β off 1 and 0, so that their gradients are tested where they matter.
    for (const ParameterTensor& t : net.tensors())
        if (t.trainable && (t.name.ends_with(".weight") || t.name.ends_with(".bias")))
            for (size_t i = t.offset; i < t.offset + t.count; ++i)
                net.params()[i] += rng.uniform(-0.3f, 0.3f);
    const int batch = 4;
    auto x = random_vector(size_t(batch) * 72, rng);
    std::vector<int32_t> labels = {0, 2, 1, 2};
    std::vector<float> probs(static_cast<size_t>(batch) * 3), dlogits(probs.size());
    Rng unused;
    auto loss = [&] {
        const float* logits = net.forward(x.data(), batch, true, unused);
        return softmax_cross_entropy_forward(probs.data(), logits, labels.data(), batch, 3, 0.1f) / batch;
    };
    loss();
    softmax_cross_entropy_backward(dlogits.data(), probs.data(), labels.data(), batch, 3, 1.0f / batch, 0.1f);
    std::fill(net.grads().begin(), net.grads().end(), 0.0f);
    net.backward(x.data(), dlogits.data(), batch);
    const std::vector<float> analytic = net.grads();
    expect_gradient(net.params(), analytic, loss, "residual network params", 1e-3f, 3e-2);
    // The running statistics are parameters the optimiser leaves alone: no gradient, marked untrainable.
    size_t running = 0;
    for (const ParameterTensor& t : net.tensors())
        if (!t.trainable) {
            ++running;
            for (size_t i = t.offset; i < t.offset + t.count; ++i)
                EXPECT_EQ(analytic[i], 0.0f) << t.name;
        }
    EXPECT_EQ(running, 8u); // 4 batchnorm layers × (mean, variance)
}

TEST(Network, AResidualFromTheNetworksInputGradients) {
    // from 0: the add reads the network's own input, which needs no gradient (the backward pass ends at layer 0).
    const std::vector<LayerSpec> specs = {{.type = LayerType::conv2d, .out = 2, .kernel = 3, .padding = 1},
                                          {.type = LayerType::gelu},
                                          {.type = LayerType::add, .from = 0},
                                          {.type = LayerType::flatten}};
    auto built = Network::build(specs, {5, 5, 2}, 3, 3);
    ASSERT_TRUE(built) << built.error();
    Network& net = *built;
    Rng rng(41);
    net.initialize(rng);
    const int batch = 3;
    auto x = random_vector(size_t(batch) * 50, rng);
    std::vector<int32_t> labels = {2, 0, 1};
    std::vector<float> probs(size_t(batch) * 3), dlogits(probs.size());
    Rng unused;
    auto loss = [&] {
        const float* logits = net.forward(x.data(), batch, true, unused);
        return softmax_cross_entropy_forward(probs.data(), logits, labels.data(), batch, 3) / batch;
    };
    loss();
    softmax_cross_entropy_backward(dlogits.data(), probs.data(), labels.data(), batch, 3, 1.0f / batch);
    std::fill(net.grads().begin(), net.grads().end(), 0.0f);
    net.backward(x.data(), dlogits.data(), batch);
    const std::vector<float> analytic = net.grads();
    expect_gradient(net.params(), analytic, loss, "residual from the input", 1e-3f, 3e-2);
}

TEST(Network, BatchNormInferenceUsesRunningStatistics) {
    auto built = Network::build({{.type = LayerType::batchnorm, .momentum = 1.0f}}, {1, 1, 4}, 4, 8);
    ASSERT_TRUE(built) << built.error();
    Network& net = *built;
    Rng rng(2);
    net.initialize(rng);
    std::vector<float> x(32);
    for (float& v : x)
        v = rng.uniform(-3.0f, 3.0f);
    Rng unused;
    const float* trained = net.forward(x.data(), 8, true, unused);
    const std::vector<float> training(trained, trained + 32);
    // Momentum 1: the running statistics are now this batch's (params: γ, β, running mean, running variance), with
    // the variance unbiased; inference normalises with them, so on the same batch it differs from training.
    const std::vector<float>& params = net.params();
    for (int k = 0; k < 4; ++k) {
        double mean = 0, square = 0;
        for (int b = 0; b < 8; ++b)
            mean += x[b * 4 + k];
        mean /= 8;
        for (int b = 0; b < 8; ++b)
            square += (x[b * 4 + k] - mean) * (x[b * 4 + k] - mean);
        EXPECT_NEAR(params[8 + k], mean, 1e-5);
        EXPECT_NEAR(params[12 + k], square / 7, 1e-4);
    }
    const std::vector<float> statistics(params.begin() + 8, params.end());
    const float* inferred = net.forward(x.data(), 8, false, unused);
    const std::vector<float> inference(inferred, inferred + 32);
    EXPECT_NE(training, inference);
    // Inference leaves the statistics alone and answers the same on a second call.
    EXPECT_EQ(std::vector<float>(params.begin() + 8, params.end()), statistics);
    const float* again = net.forward(x.data(), 8, false, unused);
    EXPECT_EQ(std::vector<float>(again, again + 32), inference);
}

TEST(Network, ResidualShapesMustMatch) {
    auto bad = Network::build({{.type = LayerType::conv2d, .out = 4, .kernel = 3, .padding = 1},
                               {.type = LayerType::conv2d, .out = 8, .kernel = 3, .padding = 1},
                               {.type = LayerType::add, .from = 1}},
                              {6, 6, 2}, 3, 4);
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().find("layers[2] (add): adds layers[1]'s input, 6x6x4, to its own input, 6x6x8"),
              std::string::npos)
        << bad.error();
    auto gap_flat =
        Network::build({{.type = LayerType::flatten}, {.type = LayerType::global_avgpool}}, {4, 4, 1}, 3, 4);
    ASSERT_FALSE(gap_flat);
    EXPECT_NE(gap_flat.error().find("needs image input"), std::string::npos);
}

TEST(Network, RejectsShapesThatDoNotFit) {
    auto conv_after_flatten = Network::build({{.type = LayerType::flatten}, {.type = LayerType::conv2d, .out = 4}}, {28, 28, 1}, 10, 8);
    ASSERT_FALSE(conv_after_flatten);
    EXPECT_NE(conv_after_flatten.error().find("needs image input"), std::string::npos);
    auto kernel_too_big = Network::build({{.type = LayerType::conv2d, .out = 4, .kernel = 9}}, {5, 5, 1}, 10, 8);
    ASSERT_FALSE(kernel_too_big);
    EXPECT_NE(kernel_too_big.error().find("does not fit"), std::string::npos);
    auto wrong_head = Network::build({{.type = LayerType::linear, .out = 7}}, {4, 4, 1}, 10, 8);
    ASSERT_FALSE(wrong_head);
    EXPECT_NE(wrong_head.error().find("10 classes"), std::string::npos);
}
