#include "UpstreamContent.h"

#include <cstdlib>
#include <ctime>

namespace sy::bench {

namespace {

std::string num(int64_t v)
{
    return std::to_string(v);
}

std::string frame(const char *type, const std::string &data)
{
    std::string out;
    out.reserve(data.size() + 32);
    out.append("event: ").append(type).append("\ndata: ").append(data).append("\n\n");
    return out;
}

bool parseInt(const std::string &text, int min, int max, int *out)
{
    char *end = nullptr;
    const long v = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || v < min || v > max)
        return false;
    *out = int(v);
    return true;
}

} // namespace

bool applyProfileQuery(const std::string &query, StreamProfile *profile)
{
    StreamProfile p = *profile;
    size_t pos = 0;
    while (pos < query.size()) {
        size_t amp = query.find('&', pos);
        if (amp == std::string::npos)
            amp = query.size();
        const std::string pair = query.substr(pos, amp - pos);
        pos = amp + 1;
        const size_t eq = pair.find('=');
        if (eq == std::string::npos)
            return false;
        const std::string key = pair.substr(0, eq);
        const std::string value = pair.substr(eq + 1);
        bool ok = false;
        if (key == "events")
            ok = parseInt(value, 1, 100000, &p.events);
        else if (key == "delta_bytes")
            ok = parseInt(value, 1, 1 << 20, &p.deltaBytes);
        else if (key == "delay_ms")
            ok = parseInt(value, 0, 60000, &p.delayMs);
        else if (key == "first_ms")
            ok = parseInt(value, 0, 60000, &p.firstMs);
        else if (key == "echo_bytes")
            ok = parseInt(value, 0, 1 << 20, &p.echoBytes);
        if (!ok)
            return false;
    }
    *profile = p;
    return true;
}

std::string profileJson(const StreamProfile &p)
{
    return "{\"events\":" + num(p.events) + ",\"delta_bytes\":" + num(p.deltaBytes) + ",\"delay_ms\":" +
           num(p.delayMs) + ",\"first_ms\":" + num(p.firstMs) + ",\"echo_bytes\":" + num(p.echoBytes) + "}";
}

TurnContent::TurnContent(uint64_t serial, const StreamProfile &profile, int64_t requestBytes)
    : m_serial(serial), m_profile(profile), m_inputTokens(requestBytes / 4 + 1)
{
    // Plain words: nothing in the text needs JSON escaping, like most model output.
    static const char kWords[] = "lorem ipsum dolor sit amet consectetur ";
    m_delta.reserve(size_t(profile.deltaBytes));
    for (int i = 0; i < profile.deltaBytes; ++i)
        m_delta.push_back(kWords[size_t(i) % (sizeof kWords - 1)]);
}

std::string TurnContent::fullText() const
{
    std::string text;
    text.reserve(m_delta.size() * size_t(m_profile.events));
    for (int i = 0; i < m_profile.events; ++i)
        text += m_delta;
    return text;
}

std::string TurnContent::responseJson(const char *status, bool withOutput) const
{
    const int64_t outputTokens = int64_t(m_profile.events);
    std::string r = "{\"id\":\"resp_bench" + num(int64_t(m_serial)) +
                    "\",\"object\":\"response\",\"created_at\":" + num(int64_t(std::time(nullptr))) +
                    ",\"status\":\"" + status + "\",\"error\":null,\"model\":\"gpt-5-codex\",";
    if (m_profile.echoBytes > 0)
        r += "\"instructions\":\"" + std::string(size_t(m_profile.echoBytes), 'i') + "\",";
    r += "\"output\":[";
    if (withOutput)
        r += "{\"id\":\"msg_bench" + num(int64_t(m_serial)) +
             "\",\"type\":\"message\",\"status\":\"completed\",\"role\":\"assistant\",\"content\":[{\"type\":"
             "\"output_text\",\"text\":\"" +
             fullText() + "\",\"annotations\":[]}]}";
    r += "],\"usage\":";
    if (withOutput)
        r += "{\"input_tokens\":" + num(m_inputTokens) + ",\"input_tokens_details\":{\"cached_tokens\":0}," +
             "\"output_tokens\":" + num(outputTokens) + ",\"output_tokens_details\":{\"reasoning_tokens\":0}," +
             "\"total_tokens\":" + num(m_inputTokens + outputTokens) + "}";
    else
        r += "null";
    r += "}";
    return r;
}

std::string TurnContent::openingFrames() const
{
    const std::string id = "msg_bench" + num(int64_t(m_serial));
    const std::string response = responseJson("in_progress", false);
    return frame("response.created",
                 "{\"type\":\"response.created\",\"sequence_number\":0,\"response\":" + response + "}") +
           frame("response.in_progress",
                 "{\"type\":\"response.in_progress\",\"sequence_number\":1,\"response\":" + response + "}") +
           frame("response.output_item.added",
                 "{\"type\":\"response.output_item.added\",\"sequence_number\":2,\"output_index\":0,\"item\":{"
                 "\"id\":\"" + id + "\",\"type\":\"message\",\"status\":\"in_progress\",\"role\":\"assistant\","
                 "\"content\":[]}}") +
           frame("response.content_part.added",
                 "{\"type\":\"response.content_part.added\",\"sequence_number\":3,\"item_id\":\"" + id +
                     "\",\"output_index\":0,\"content_index\":0,\"part\":{\"type\":\"output_text\",\"text\":\"\","
                     "\"annotations\":[]}}");
}

std::string TurnContent::deltaFrame(int index) const
{
    return frame("response.output_text.delta",
                 "{\"type\":\"response.output_text.delta\",\"sequence_number\":" + num(4 + index) +
                     ",\"item_id\":\"msg_bench" + num(int64_t(m_serial)) +
                     "\",\"output_index\":0,\"content_index\":0,\"delta\":\"" + m_delta + "\"}");
}

std::string TurnContent::closingFrames() const
{
    const std::string id = "msg_bench" + num(int64_t(m_serial));
    const std::string text = fullText();
    int seq = 4 + m_profile.events;
    const std::string part = "{\"type\":\"output_text\",\"text\":\"" + text + "\",\"annotations\":[]}";
    std::string out =
        frame("response.output_text.done", "{\"type\":\"response.output_text.done\",\"sequence_number\":" +
                                               num(seq) + ",\"item_id\":\"" + id +
                                               "\",\"output_index\":0,\"content_index\":0,\"text\":\"" + text + "\"}");
    ++seq;
    out += frame("response.content_part.done", "{\"type\":\"response.content_part.done\",\"sequence_number\":" +
                                                   num(seq) + ",\"item_id\":\"" + id +
                                                   "\",\"output_index\":0,\"content_index\":0,\"part\":" + part + "}");
    ++seq;
    out += frame("response.output_item.done",
                 "{\"type\":\"response.output_item.done\",\"sequence_number\":" + num(seq) +
                     ",\"output_index\":0,\"item\":{\"id\":\"" + id +
                     "\",\"type\":\"message\",\"status\":\"completed\",\"role\":\"assistant\",\"content\":[" + part +
                     "]}}");
    ++seq;
    out += frame("response.completed", "{\"type\":\"response.completed\",\"sequence_number\":" + num(seq) +
                                           ",\"response\":" + responseJson("completed", true) + "}");
    return out;
}

std::string TurnContent::chatCompletionJson() const
{
    const int64_t outputTokens = int64_t(m_profile.events);
    return "{\"id\":\"chatcmpl-bench" + num(int64_t(m_serial)) + "\",\"object\":\"chat.completion\",\"created\":" +
           num(int64_t(std::time(nullptr))) +
           ",\"model\":\"gpt-5-codex\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"" +
           fullText() + "\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":" + num(m_inputTokens) +
           ",\"completion_tokens\":" + num(outputTokens) + ",\"total_tokens\":" + num(m_inputTokens + outputTokens) +
           "}}";
}

std::string streamHead(uint64_t serial)
{
    // Rate-limit headers as the real backend sends them: the proxy parses them on every turn.
    const int64_t now = int64_t(std::time(nullptr));
    return "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n"
           "x-request-id: req_bench" + num(int64_t(serial)) +
           "\r\nx-codex-primary-used-percent: 12\r\nx-codex-primary-window-minutes: 300\r\n"
           "x-codex-primary-reset-at: " + num(now + 3600) +
           "\r\nx-codex-secondary-used-percent: 3\r\nx-codex-secondary-window-minutes: 10080\r\n"
           "x-codex-secondary-reset-at: " + num(now + 86400) + "\r\n\r\n";
}

std::string jsonResponse(int status, const std::string &body, bool keepAlive)
{
    const char *reason = status == 200 ? "OK" : status == 404 ? "Not Found" : "Bad Request";
    return "HTTP/1.1 " + num(status) + " " + reason + "\r\ncontent-type: application/json\r\ncontent-length: " +
           num(int64_t(body.size())) + (keepAlive ? "\r\n\r\n" : "\r\nconnection: close\r\n\r\n") + body;
}

std::string usageJson()
{
    const int64_t now = int64_t(std::time(nullptr));
    return "{\"plan_type\":\"pro\",\"rate_limit\":{\"allowed\":true,\"limit_reached\":false,\"primary_window\":{"
           "\"used_percent\":12,\"limit_window_seconds\":18000,\"reset_after_seconds\":3600,\"reset_at\":" +
           num(now + 3600) +
           "},\"secondary_window\":{\"used_percent\":3,\"limit_window_seconds\":604800,\"reset_after_seconds\":86400,"
           "\"reset_at\":" + num(now + 86400) +
           "}},\"credits\":{\"has_credits\":false,\"unlimited\":false,\"balance\":\"0\"}}";
}

} // namespace sy::bench
