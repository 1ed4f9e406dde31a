#pragma once

#include <string>

namespace sy::bench {

// A Codex-CLI-shaped /backend-api/codex/responses body (developer instructions, tool definitions, a history
// of turns) grown with more history items until it holds at least `targetBytes`: the proxy parses the JSON
// structure, so the body has the item count of a real long conversation, not one giant string.
std::string codexBody(size_t targetBytes);

// A non-streaming OpenAI Chat Completions body of at least `targetBytes`.
std::string chatBody(size_t targetBytes);

} // namespace sy::bench
