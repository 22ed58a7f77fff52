#pragma once
// What a followed import (traindeck-cli import --follow, Import runs… with "Keep following") says of damage. Each pass
// reads every run again, so a piece of damage would be said again at every pass that finds it; and a file a writer is
// still appending to ends inside a record at most passes (Damage::at_end), which is no damage at all once the record is
// whole. Each piece is said once; a file's cut-short end is kept back while following, and said when following stops
// with it still cut short (finish()).
#include "importedrun.h"

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace traindeck::importers {

class FollowedDamage {
public:
    // The damage one pass found in a run (`source`: ImportedRun::source) that is to be said now: what was not said
    // before, less (while following) the ends of files cut short, which replace what was kept of that run.
    std::vector<Damage> pass(const std::string& source, const std::vector<Damage>& found, bool following);
    // Following stops: the ends of files still cut short at the last pass, not said before.
    std::vector<Damage> finish();

private:
    std::set<std::tuple<std::string, uint64_t, std::string>> said_;
    std::map<std::string, std::vector<Damage>> kept_; // per run: its files' cut-short ends at its last pass
};

} // namespace traindeck::importers
