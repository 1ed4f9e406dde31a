#pragma once

#include <cstdint>
#include <string>

namespace sy::bench {

// The shape of every answer until the next POST /bench/profile: how many text deltas, how many bytes of text
// each carries, the pause between deltas and before the first event, and how many bytes of `instructions` every
// response object repeats (the Responses API echoes the request's instructions in response.created,
// in_progress and completed; 0, the default, leaves the member out).
struct StreamProfile
{
    int events = 50;
    int deltaBytes = 64;
    int delayMs = 10;
    int firstMs = 0;
    int echoBytes = 0;
};

// Applies "events=50&delta_bytes=64&delay_ms=10&first_ms=0&echo_bytes=0"; false on an unknown key or a bad number.
bool applyProfileQuery(const std::string &query, StreamProfile *profile);
std::string profileJson(const StreamProfile &profile);

// SSE frames of one Codex Responses turn, each a complete "event: ...\ndata: ...\n\n" block.
class TurnContent
{
public:
    TurnContent(uint64_t serial, const StreamProfile &profile, int64_t requestBytes);

    std::string openingFrames() const; // response.created ... content_part.added
    std::string deltaFrame(int index) const;
    std::string closingFrames() const; // *.done and response.completed with usage
    std::string chatCompletionJson() const;

private:
    std::string responseJson(const char *status, bool withOutput) const;
    std::string fullText() const;

    uint64_t m_serial;
    StreamProfile m_profile;
    int64_t m_inputTokens;
    std::string m_delta;
};

std::string streamHead(uint64_t serial);
std::string jsonResponse(int status, const std::string &body, bool keepAlive);
std::string usageJson();

} // namespace sy::bench
