#pragma once

#include "upstream/UpstreamCall.h"

#include <QList>
#include <QPointer>
#include <QStringList>

namespace sy::test {

// Records everything one UpstreamCall emits, and in which order.
struct UpstreamRecorder
{
    explicit UpstreamRecorder(UpstreamCall *c) : call(c)
    {
        QObject::connect(c, &UpstreamCall::connecting, [this] {
            ++connecting;
            order << QStringLiteral("connecting");
        });
        QObject::connect(c, &UpstreamCall::requestSent, [this] {
            ++sent;
            order << QStringLiteral("sent");
        });
        QObject::connect(c, &UpstreamCall::headersReceived, [this](int s, const HttpHeaders &h) {
            status = s;
            headers = h;
            order << QStringLiteral("headers");
        });
        QObject::connect(c, &UpstreamCall::sseEvent, [this](const SseEvent &e) { events.append(e); });
        QObject::connect(c, &UpstreamCall::keepaliveComment, [this] { ++keepalives; });
        QObject::connect(c, &UpstreamCall::bodyReceived, [this](const QByteArray &b) {
            body = b;
            ++bodies;
            order << QStringLiteral("body");
        });
        QObject::connect(c, &UpstreamCall::finished, [this](UpstreamCall::Outcome o, const QString &d) {
            outcomes.append(o);
            detail = d;
            eventsAtFinish = int(events.size());
            order << QStringLiteral("finished");
        });
    }

    QByteArray header(const QByteArray &name) const
    {
        for (const auto &[key, value] : headers) {
            if (key.compare(name, Qt::CaseInsensitive) == 0)
                return value;
        }
        return {};
    }

    QPointer<UpstreamCall> call;
    int status = -1;
    HttpHeaders headers;
    QList<SseEvent> events;
    int keepalives = 0;
    QByteArray body;
    int bodies = 0;
    int connecting = 0;
    int sent = 0;
    QList<UpstreamCall::Outcome> outcomes;
    QString detail;
    int eventsAtFinish = -1;
    QStringList order; // connecting, sent, headers, body, finished
};

} // namespace sy::test
