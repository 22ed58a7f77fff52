// The reorderings of portablelayout.h. Only values move; nothing is rounded, so exported weights are the
// checkpoint's bit for bit.
#include "portablelayout.h"

namespace traindeck::engine {

PortableWeights portable_weights(const Layer& layer, const float* w, SampleShape image) {
    PortableWeights out;
    const int o = layer.spec.out;
    if (layer.spec.type == LayerType::conv2d) {
        const int k = layer.spec.kernel, c = layer.in.channels;
        out.dims = {o, c, k, k};
        out.weight.resize(static_cast<size_t>(o) * c * k * k);
        for (int oc = 0; oc < o; ++oc)
            for (int y = 0; y < k; ++y)
                for (int x = 0; x < k; ++x)
                    for (int ic = 0; ic < c; ++ic)
                        out.weight[((static_cast<size_t>(oc) * c + ic) * k + y) * k + x] =
                            w[((static_cast<size_t>(oc) * k + y) * k + x) * c + ic];
        return out;
    }
    const size_t in = layer.in.size();
    out.dims = {o, static_cast<int64_t>(in)};
    out.weight.assign(w, w + static_cast<size_t>(o) * in);
    if (image.size() == in && image.channels > 1 && image.height * image.width > 1) {
        const int h = image.height, wd = image.width, c = image.channels;
        for (int oc = 0; oc < o; ++oc)
            for (int y = 0; y < h; ++y)
                for (int x = 0; x < wd; ++x)
                    for (int ic = 0; ic < c; ++ic)
                        out.weight[static_cast<size_t>(oc) * in + (static_cast<size_t>(ic) * h + y) * wd + x] =
                            w[static_cast<size_t>(oc) * in + (static_cast<size_t>(y) * wd + x) * c + ic];
    }
    return out;
}

std::vector<PortableWeights> portable_weights(const Network& net, const std::vector<float>& params, SampleShape input) {
    std::vector<PortableWeights> all(net.layers().size());
    SampleShape image = input; // the last image shape, for the column order of a linear layer after it
    for (size_t i = 0; i < net.layers().size(); ++i) {
        const Layer& layer = net.layers()[i];
        if (layer.has_weights())
            all[i] = portable_weights(layer, params.data() + layer.weight, image);
        if (layer.out.height > 1 || layer.out.width > 1)
            image = layer.out;
    }
    return all;
}

std::vector<float> to_nchw(const float* x, size_t samples, int h, int w, int c) {
    const size_t features = static_cast<size_t>(h) * w * c;
    std::vector<float> out(samples * features);
    for (size_t n = 0; n < samples; ++n)
        for (int y = 0; y < h; ++y)
            for (int col = 0; col < w; ++col)
                for (int k = 0; k < c; ++k)
                    out[n * features + (static_cast<size_t>(k) * h + y) * w + col] =
                        x[n * features + (static_cast<size_t>(y) * w + col) * c + k];
    return out;
}

} // namespace traindeck::engine
