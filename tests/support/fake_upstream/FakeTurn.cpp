#include "FakeTurn.h"

#include "FakeUpstream.h"

namespace sy::fake {

FakeTurn::FakeTurn(FakeUpstream *owner, int logIndex, HttpResponse *response, Behaviour behaviour,
                   QList<SseFrame> frames, HttpHeaderList headers)
    : QObject(owner), m_owner(owner), m_logIndex(logIndex), m_response(response), m_behaviour(std::move(behaviour)),
      m_frames(std::move(frames)), m_headers(std::move(headers))
{
    m_timer.setSingleShot(true);
    connect(response, &HttpResponse::clientDisconnected, this, &FakeTurn::onClientGone);
    connect(response, &HttpResponse::drained, this, [this] {
        if (!m_timer.isActive() && !m_held && m_next > 0)
            step();
    });
}

FakeTurn::~FakeTurn()
{
    if (m_counted)
        m_owner->streamEnded();
}

void FakeTurn::start()
{
    if (m_behaviour.delayFirstMs > 0) {
        connect(&m_timer, &QTimer::timeout, this, &FakeTurn::begin, Qt::SingleShotConnection);
        m_timer.start(m_behaviour.delayFirstMs);
        return;
    }
    begin();
}

void FakeTurn::begin()
{
    if (!m_response)
        return;
    if (m_countsAsStream && !m_hasError) {
        m_counted = true;
        m_owner->streamStarted();
    }
    for (const HttpHeader &h : std::as_const(m_headers))
        m_response->setHeader(h.first, h.second);
    if (m_hasError) {
        for (const HttpHeader &h : std::as_const(m_error.headers))
            m_response->setHeader(h.first, h.second);
        m_response->sendFull(m_error.status, "application/json", m_error.body);
        complete(m_replyOutcome);
        return;
    }
    if (!m_holdOutcome.isEmpty()) {
        hold(m_holdOutcome);
        return;
    }
    if (m_behaviour.kind == Behaviour::Silent) {
        hold(QStringLiteral("silent"));
        return;
    }
    m_response->beginStream(200, "text/event-stream");
    m_owner->recordOutcome(m_logIndex, 200, QStringLiteral("streaming"));
    if (m_behaviour.kind == Behaviour::SilentAfterHeaders) {
        hold(QStringLiteral("silent_after_headers"));
        return;
    }
    connect(&m_timer, &QTimer::timeout, this, &FakeTurn::step);
    step();
}

void FakeTurn::step()
{
    if (!m_response || m_held || m_done)
        return;
    if (m_response->congested())
        return; // drained() resumes
    if (m_next >= m_frames.size()) {
        m_response->end();
        complete(m_behaviour.kind == Behaviour::Failed ? QStringLiteral("failed") : QStringLiteral("completed"));
        return;
    }
    const SseFrame &frame = m_frames.at(m_next++);
    m_response->write(frame.bytes);
    if (frame.isDelta)
        ++m_deltasSent;
    const bool cutHere = m_deltasSent >= 2 && frame.isDelta &&
                         (m_behaviour.kind == Behaviour::StallMid || m_behaviour.kind == Behaviour::DropMid);
    if (cutHere && m_behaviour.kind == Behaviour::StallMid) {
        hold(QStringLiteral("stall_mid"));
        return;
    }
    if (cutHere) {
        m_response->abortConnection();
        complete(QStringLiteral("drop_mid"));
        return;
    }
    m_timer.start(m_behaviour.slowMs);
}

void FakeTurn::hold(const QString &outcome)
{
    m_held = true;
    m_timer.stop();
    m_owner->recordOutcome(m_logIndex, m_response && m_response->isCommitted() ? m_response->status() : 0, outcome);
}

void FakeTurn::dropIfHeld()
{
    if (!m_held || !m_response)
        return;
    m_response->abortConnection();
    deleteLater();
}

void FakeTurn::complete(const QString &outcome)
{
    m_done = true;
    m_timer.stop();
    m_owner->recordOutcome(m_logIndex, m_response ? m_response->status() : 0, outcome);
    deleteLater();
}

void FakeTurn::onClientGone()
{
    m_done = true;
    m_timer.stop();
    m_owner->markClientGone(m_logIndex, !m_held);
    deleteLater();
}

} // namespace sy::fake
