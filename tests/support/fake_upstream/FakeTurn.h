#pragma once

#include "FakeContent.h"
#include "FakeScript.h"
#include "http/HttpResponse.h"

#include <QObject>
#include <QPointer>
#include <QTimer>

namespace sy::fake {

class FakeUpstream;

// One scripted answer on /codex/responses (or a delayed error reply on any endpoint): waits, sends the
// head, paces the SSE frames, honours backpressure, and may stall or drop on purpose. Deletes itself when
// the answer is complete or the client went away; a held (silent/stalled) turn lives until the client
// disconnects or the control API drops held turns.
class FakeTurn : public QObject
{
    Q_OBJECT

public:
    FakeTurn(FakeUpstream *owner, int logIndex, HttpResponse *response, Behaviour behaviour, QList<SseFrame> frames,
             HttpHeaderList headers);
    ~FakeTurn() override;

    // Replies with a complete JSON body instead of a stream (scripted 4xx/5xx, or a non-streaming endpoint),
    // after delay_first; the log records `outcome`.
    void setFullReply(ErrorReply reply, const QString &outcome)
    {
        m_error = std::move(reply);
        m_hasError = true;
        m_replyOutcome = outcome;
    }
    // Counts as a stream in /__control/stats (turns on /codex/responses).
    void setCountsAsStream(bool counts) { m_countsAsStream = counts; }
    // Holds silently with the given outcome instead of answering (foreign previous_response_id).
    void setHoldOutcome(const QString &outcome) { m_holdOutcome = outcome; }
    void start();
    // Closes the connection of a held turn (control API).
    void dropIfHeld();

private:
    void begin();
    void step();
    void hold(const QString &outcome);
    void complete(const QString &outcome);
    void onClientGone();

    FakeUpstream *m_owner;
    int m_logIndex;
    QPointer<HttpResponse> m_response;
    Behaviour m_behaviour;
    QList<SseFrame> m_frames;
    HttpHeaderList m_headers;
    ErrorReply m_error;
    QString m_holdOutcome;
    QString m_replyOutcome;
    QTimer m_timer;
    qsizetype m_next = 0;
    int m_deltasSent = 0;
    bool m_hasError = false;
    bool m_countsAsStream = false;
    bool m_counted = false;
    bool m_held = false;
    bool m_done = false;
};

} // namespace sy::fake
