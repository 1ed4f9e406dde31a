#include "RequestBody.h"

namespace sy::bench {

namespace {

std::string filler(size_t bytes, size_t seed)
{
    static const char kText[] = "The quick brown fox jumps over the lazy dog while the build keeps running. ";
    std::string s;
    s.reserve(bytes);
    for (size_t i = 0; i < bytes; ++i)
        s.push_back(kText[(i + seed) % (sizeof kText - 1)]);
    return s;
}

std::string textItem(const char *role, const char *partType, const std::string &text)
{
    return std::string("{\"type\":\"message\",\"role\":\"") + role + "\",\"content\":[{\"type\":\"" + partType +
           "\",\"text\":\"" + text + "\"}]}";
}

std::string tools()
{
    std::string out = "[";
    for (int i = 0; i < 8; ++i) {
        if (i)
            out += ',';
        out += "{\"type\":\"function\",\"name\":\"tool_" + std::to_string(i) +
               "\",\"description\":\"" + filler(200, size_t(i)) +
               "\",\"strict\":false,\"parameters\":{\"type\":\"object\",\"properties\":{\"command\":{\"type\":"
               "\"array\",\"items\":{\"type\":\"string\"}},\"workdir\":{\"type\":\"string\"},\"timeout_ms\":{"
               "\"type\":\"number\"}},\"required\":[\"command\"],\"additionalProperties\":false}}";
    }
    return out + "]";
}

} // namespace

std::string codexBody(size_t targetBytes)
{
    std::string head = "{\"model\":\"gpt-5-codex\",\"instructions\":\"\",\"input\":[" +
                       textItem("developer", "input_text", filler(16000, 0));
    const std::string tail = "],\"tools\":" + tools() +
                             ",\"tool_choice\":\"auto\",\"parallel_tool_calls\":false,\"reasoning\":{\"effort\":"
                             "\"medium\",\"summary\":\"auto\"},\"store\":false,\"stream\":true,\"include\":["
                             "\"reasoning.encrypted_content\"],\"prompt_cache_key\":\"bench\"}";
    size_t i = 0;
    while (head.size() + tail.size() < targetBytes) {
        const bool user = i % 2 == 0;
        head += ',' + textItem(user ? "user" : "assistant", user ? "input_text" : "output_text", filler(900, i));
        ++i;
    }
    return head + tail;
}

std::string chatBody(size_t targetBytes)
{
    std::string head = "{\"model\":\"gpt-5-codex\",\"stream\":false,\"messages\":[{\"role\":\"system\",\"content\":\"" +
                       filler(4000, 0) + "\"}";
    const std::string tail = "]}";
    size_t i = 0;
    do {
        head += std::string(",{\"role\":\"") + (i % 2 == 0 ? "user" : "assistant") + "\",\"content\":\"" +
                filler(400, i) + "\"}";
        ++i;
    } while (head.size() + tail.size() < targetBytes);
    return head + ",{\"role\":\"user\",\"content\":\"Summarise the above.\"}" + tail;
}

} // namespace sy::bench
