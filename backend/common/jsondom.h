#pragma once
// simdjson's DOM (Debian's libsimdjson) for the console's two hot JSON paths, a worker's watch replies and the events
// the catalog ingests: it reads GB/s where nlohmann::json reads tens of MB/s (tests/bench/console_ingest). What it
// refuses (integers past uint64 and nesting past 1,024 levels, which nlohmann reads; 1e999 and lone surrogate
// escapes, which neither reads unrepaired) the callers read their old way, so no text reads differently for going
// the fast way.
#include <nlohmann/json.hpp>
#include <simdjson.h>

namespace traindeck {

// The element as nlohmann::json::parse gives the same text: integers from 0 up unsigned, negative ones signed,
// doubles as they are; a key given twice keeps its last value, as nlohmann's parser keeps it. (One difference no
// reader sees: "-0" is a signed 0 in nlohmann and an unsigned one here; both are 0 and both print "0".)
nlohmann::json nlohmann_of(simdjson::dom::element element);

// This thread's parser, its buffers kept from one document to the next (a document's elements live in them until the
// next parse on the thread). Those grown past 64 MB by one large document are let go before the next is read.
simdjson::dom::parser& thread_parser();

} // namespace traindeck
