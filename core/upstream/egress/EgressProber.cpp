#include "upstream/egress/EgressProber.h"

#include <QTcpSocket>
#include <QTimer>
#include <utility>

namespace sy {

EgressProber::EgressProber(const QString &upstreamHost, quint16 upstreamPort, int timeoutMs, QObject *parent)
    : QObject(parent), m_host(upstreamHost), m_port(upstreamPort), m_timeoutMs(timeoutMs)
{
}

void EgressProber::probe(const QList<Target> &targets, Result result, std::function<void()> done)
{
    const quint64 round = ++m_round;
    m_result = std::move(result);
    m_done = std::move(done);
    m_pending = int(targets.size());
    if (targets.isEmpty()) {
        QTimer::singleShot(0, this, [this, round] {
            if (round == m_round && m_done)
                std::exchange(m_done, nullptr)();
        });
        return;
    }
    for (const Target &t : targets) {
        auto *socket = new QTcpSocket(this);
        socket->setProxy(t.proxy);
        auto *timer = new QTimer(socket);
        timer->setSingleShot(true);
        const QString name = t.name;
        connect(socket, &QTcpSocket::connected, this,
                [=] { finishOne(socket, round, name, true, QStringLiteral("tunnel to the upstream is up")); });
        connect(socket, &QTcpSocket::errorOccurred, this,
                [=] { finishOne(socket, round, name, false, socket->errorString()); });
        connect(timer, &QTimer::timeout, this, [=] {
            finishOne(socket, round, name, false, QStringLiteral("no tunnel within %1 ms").arg(m_timeoutMs));
        });
        timer->start(m_timeoutMs);
        socket->connectToHost(m_host, m_port);
    }
}

void EgressProber::finishOne(QTcpSocket *socket, quint64 round, const QString &name, bool healthy,
                             const QString &detail)
{
    if (socket->property("sy_done").toBool())
        return;
    socket->setProperty("sy_done", true);
    disconnect(socket, nullptr, this, nullptr);
    socket->abort();
    socket->deleteLater();
    if (round != m_round)
        return;
    if (m_result)
        m_result(name, healthy, detail);
    if (--m_pending == 0 && m_done)
        std::exchange(m_done, nullptr)();
}

} // namespace sy
