#include "augment.h"

#include <algorithm>
#include <cmath>

namespace traindeck::engine {

void augment_sample(float* row, int height, int width, int channels, const AugmentSpec& spec, const Normalization& norm,
                    Rng& rng, std::vector<float>& scratch) {
    // The draws, in a fixed order, each only when its transform is on.
    const bool flip = spec.hflip && rng.uniform() < 0.5f;
    int shift_x = 0, shift_y = 0;
    if (spec.crop_padding > 0) {
        const uint64_t choices = 2 * static_cast<uint64_t>(spec.crop_padding) + 1;
        shift_x = static_cast<int>(rng.below(choices)) - spec.crop_padding;
        shift_y = static_cast<int>(rng.below(choices)) - spec.crop_padding;
    }
    if (spec.translate > 0.0f) {
        shift_x += static_cast<int>(std::lround(rng.uniform(-spec.translate, spec.translate) * width));
        shift_y += static_cast<int>(std::lround(rng.uniform(-spec.translate, spec.translate) * height));
    }
    const float angle = spec.rotate > 0.0f ? rng.uniform(-spec.rotate, spec.rotate) * 3.14159265f / 180.0f : 0.0f;
    const float brightness =
        spec.brightness > 0.0f ? rng.uniform(1.0f - spec.brightness, 1.0f + spec.brightness) : 1.0f;
    const float contrast = spec.contrast > 0.0f ? rng.uniform(1.0f - spec.contrast, 1.0f + spec.contrast) : 1.0f;

    const bool normalised = !norm.empty();
    auto mean = [&](int c) { return normalised ? norm.mean[norm.mean.size() == 1 ? 0 : c] : 0.0f; };
    auto inverse_std = [&](int c) {
        return normalised ? norm.inverse_std[norm.inverse_std.size() == 1 ? 0 : c] : 1.0f;
    };
    const size_t n = static_cast<size_t>(height) * width * channels;

    // Geometry: out(x, y) = in(x' + shift_x, y + shift_y), x' mirrored when flipped, then rotated about the centre;
    // what falls outside the image is black.
    if (flip || shift_x != 0 || shift_y != 0 || angle != 0.0f) {
        scratch.assign(row, row + n);
        const float cx = 0.5f * (width - 1), cy = 0.5f * (height - 1);
        const float cos_a = std::cos(angle), sin_a = std::sin(angle);
        for (int y = 0; y < height; ++y) {
            for (int x = 0; x < width; ++x) {
                float* out = row + (static_cast<size_t>(y) * width + x) * channels;
                const float u = static_cast<float>((flip ? width - 1 - x : x) + shift_x);
                const float v = static_cast<float>(y + shift_y);
                if (angle == 0.0f) {
                    const int sx = static_cast<int>(u), sy = static_cast<int>(v);
                    const bool inside = sx >= 0 && sx < width && sy >= 0 && sy < height;
                    for (int c = 0; c < channels; ++c)
                        out[c] = inside ? scratch[(static_cast<size_t>(sy) * width + sx) * channels + c]
                                        : -mean(c) * inverse_std(c);
                    continue;
                }
                // Bilinear, at the source point the inverse rotation gives.
                const float px = cos_a * (u - cx) + sin_a * (v - cy) + cx;
                const float py = -sin_a * (u - cx) + cos_a * (v - cy) + cy;
                const int x0 = static_cast<int>(std::floor(px)), y0 = static_cast<int>(std::floor(py));
                const float fx = px - x0, fy = py - y0;
                for (int c = 0; c < channels; ++c) {
                    const float black = -mean(c) * inverse_std(c);
                    auto at = [&](int sx, int sy) {
                        return sx >= 0 && sx < width && sy >= 0 && sy < height
                                   ? scratch[(static_cast<size_t>(sy) * width + sx) * channels + c]
                                   : black;
                    };
                    out[c] = (1 - fy) * ((1 - fx) * at(x0, y0) + fx * at(x0 + 1, y0)) +
                             fy * ((1 - fx) * at(x0, y0 + 1) + fx * at(x0 + 1, y0 + 1));
                }
            }
        }
    }

    // Colour, on the raw values: times brightness, then contrast about the image's mean, kept in [0, 1].
    if (brightness != 1.0f || contrast != 1.0f) {
        double sum = 0.0;
        for (size_t i = 0; i < n; ++i) {
            const int c = static_cast<int>(i % channels);
            row[i] = std::clamp((row[i] / inverse_std(c) + mean(c)) * brightness, 0.0f, 1.0f);
            sum += row[i];
        }
        const float image_mean = n ? static_cast<float>(sum / static_cast<double>(n)) : 0.0f;
        for (size_t i = 0; i < n; ++i) {
            const int c = static_cast<int>(i % channels);
            const float raw = std::clamp((row[i] - image_mean) * contrast + image_mean, 0.0f, 1.0f);
            row[i] = (raw - mean(c)) * inverse_std(c);
        }
    }
}

} // namespace traindeck::engine
