// Fuzzes the JSON-schema converter: the input is JSON text; a schema either converts or is refused with
// SchemaError, and a grammar it returns must parse (a converter output the GBNF parser refuses is a bug:
// json_schema_to_gbnf reports it as std::logic_error, which is left to escape and fail the run).
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "grammar/gbnf.h"
#include "grammar/json_schema.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const auto schema = nlohmann::ordered_json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
    if (schema.is_discarded()) return 0;
    std::string gbnf;
    try {
        gbnf = lctx::grammar::json_schema_to_gbnf(schema);
    } catch (const lctx::grammar::SchemaError &) {
        return 0;
    }
    try {
        lctx::grammar::parse_gbnf(gbnf);
    } catch (const lctx::grammar::GrammarError &) {
        std::abort();  // json_schema_to_gbnf checks its output: this cannot happen
    }
    return 0;
}
