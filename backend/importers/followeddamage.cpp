// FollowedDamage (followeddamage.h).
#include "followeddamage.h"

namespace traindeck::importers {

std::vector<Damage> FollowedDamage::pass(const std::string& source, const std::vector<Damage>& found, bool following) {
    std::vector<Damage> say, ends;
    for (const Damage& piece : found) {
        if (following && piece.at_end) {
            ends.push_back(piece);
            continue;
        }
        if (said_.insert({piece.file, piece.offset, piece.what}).second)
            say.push_back(piece);
    }
    if (ends.empty())
        kept_.erase(source);
    else
        kept_[source] = std::move(ends);
    return say;
}

std::vector<Damage> FollowedDamage::finish() {
    std::vector<Damage> say;
    for (const auto& [source, ends] : kept_)
        for (const Damage& piece : ends)
            if (said_.insert({piece.file, piece.offset, piece.what}).second)
                say.push_back(piece);
    kept_.clear();
    return say;
}

} // namespace traindeck::importers
