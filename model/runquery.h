#pragma once
// The runs table's query language (README "Query runs"), parsed once and matched against RunRecords:
//   optimizer.lr < 0.01 and model == "cnn" and not tag:discarded or name ~ "seed.*"
// Plain C++, no Qt, no SQLite: the table, the CLI and the benchmark share it, and its tests are a table of queries.
#include "expected.h"
#include "runrecord.h"

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace traindeck {

// Where a query stops making sense: the byte offset into the text and what was expected there.
struct QueryError {
    size_t position = 0;
    std::string message; // "expected a value after '<'", "unknown prefix 'tga:' (tag:, state:, backend:, ...)", ...
};

class RunQuery {
public:
    // An empty (or all-blank) text is the query that matches every run that is not archived. Fields are resolved
    // and regular expressions compiled here, once; error (may be null) is cleared on success. Never throws.
    static RunQuery parse(std::string_view text, QueryError* error);
    bool valid() const { return valid_; }

    // now: Unix seconds, for relative times ("started > -2d") and a running run's duration. An invalid query matches
    // nothing. Never throws; allocates nothing unless the query has a '~'.
    bool matches(const RunRecord& run, double now) const;
    // Archived runs are hidden unless the query names archived: itself (archived:true, archived:any).
    bool shows_archived() const { return shows_archived_; }

    struct Node;

private:
    std::shared_ptr<const Node> root_;
    bool valid_ = false, shows_archived_ = false;
};

} // namespace traindeck
