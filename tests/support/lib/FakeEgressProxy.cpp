#include "lib/FakeEgressProxy.h"

#include "lib/FakeEgressTunnel.h"

#include <QDateTime>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSaveFile>
#include <QTcpSocket>

namespace sy::test {

namespace {

qint64 nowMs()
{
    return QDateTime::currentMSecsSinceEpoch();
}

QJsonValue orNull(qint64 v)
{
    return v < 0 ? QJsonValue() : QJsonValue(v);
}

QJsonValue orNull(const QString &v)
{
    return v.isEmpty() ? QJsonValue() : QJsonValue(v);
}

} // namespace

FakeEgressProxy::FakeEgressProxy(const QString &name, Kind kind, QObject *parent)
    : QObject(parent), m_name(name), m_kind(kind)
{
    connect(&m_server, &QTcpServer::newConnection, this, &FakeEgressProxy::onNewConnection);
}

FakeEgressProxy::~FakeEgressProxy() = default;

void FakeEgressProxy::setCredentials(const QString &user, const QString &password)
{
    m_user = user;
    m_password = password;
}

bool FakeEgressProxy::listen()
{
    if (!m_server.listen(QHostAddress::LocalHost, 0))
        return false;
    QMutexLocker lock(&m_mutex);
    m_port = m_server.serverPort();
    if (m_modeChanges.isEmpty())
        m_modeChanges.append({{QStringLiteral("at_ms"), nowMs()},
                              {QStringLiteral("mode"), modeName(m_mode)},
                              {QStringLiteral("delay_ms"), m_delayMs}});
    return true;
}

void FakeEgressProxy::setMode(Mode mode, int delayMs)
{
    QMutexLocker lock(&m_mutex);
    m_mode = mode;
    m_delayMs = delayMs;
    m_modeChanges.append({{QStringLiteral("at_ms"), nowMs()},
                          {QStringLiteral("mode"), modeName(mode)},
                          {QStringLiteral("delay_ms"), delayMs}});
}

quint16 FakeEgressProxy::port() const
{
    QMutexLocker lock(&m_mutex);
    return m_port;
}

QString FakeEgressProxy::url(bool remoteDns) const
{
    const QString scheme = m_kind == Kind::HttpConnect
                               ? QStringLiteral("http")
                               : (remoteDns ? QStringLiteral("socks5h") : QStringLiteral("socks5"));
    return QStringLiteral("%1://127.0.0.1:%2").arg(scheme).arg(port());
}

QString FakeEgressProxy::modeName(Mode mode)
{
    switch (mode) {
    case Mode::Healthy:
        return QStringLiteral("healthy");
    case Mode::Down:
        return QStringLiteral("down");
    case Mode::Slow:
        return QStringLiteral("slow");
    }
    return {};
}

void FakeEgressProxy::onNewConnection()
{
    while (QTcpSocket *client = m_server.nextPendingConnection()) {
        Mode mode;
        int delayMs;
        int id;
        {
            QMutexLocker lock(&m_mutex);
            mode = m_mode;
            delayMs = m_delayMs;
            Connection c;
            c.id = int(m_connections.size()) + 1;
            c.acceptedAtMs = nowMs();
            c.mode = modeName(mode);
            m_connections.append(c);
            id = c.id;
        }
        auto *tunnel = new FakeEgressTunnel(this, client, id, mode, delayMs);
        tunnel->start();
    }
}

std::pair<int, int> FakeEgressProxy::carriedTo(quint16 targetPort) const
{
    int tunnels = 0, requests = 0;
    for (const QJsonValue &v : record().value(QLatin1String("connections")).toArray()) {
        const QJsonObject c = v.toObject();
        if (c.value(QLatin1String("target_port")).toInt() != int(targetPort))
            continue;
        tunnels += c.value(QLatin1String("outcome")).toString() == QLatin1String("tunnel") ? 1 : 0;
        requests += int(c.value(QLatin1String("requests")).toArray().size());
    }
    return {tunnels, requests};
}

int FakeEgressProxy::connectionCount() const
{
    QMutexLocker lock(&m_mutex);
    return int(m_connections.size());
}

QJsonObject FakeEgressProxy::record() const
{
    QMutexLocker lock(&m_mutex);
    QJsonArray connections;
    for (const Connection &c : m_connections) {
        connections.append(QJsonObject{
            {QStringLiteral("id"), c.id},
            {QStringLiteral("accepted_at_ms"), c.acceptedAtMs},
            {QStringLiteral("mode"), c.mode},
            {QStringLiteral("outcome"), c.outcome},
            {QStringLiteral("target_host"), orNull(c.targetHost)},
            {QStringLiteral("target_port"), c.targetPort > 0 ? QJsonValue(c.targetPort) : QJsonValue()},
            {QStringLiteral("address_type"), orNull(c.addressType)},
            {QStringLiteral("user"), orNull(c.user)},
            {QStringLiteral("auth_challenges"), c.authChallenges},
            {QStringLiteral("established_at_ms"), orNull(c.establishedAtMs)},
            {QStringLiteral("closed_at_ms"), orNull(c.closedAtMs)},
            {QStringLiteral("bytes_up"), c.bytesUp},
            {QStringLiteral("bytes_down"), c.bytesDown},
            {QStringLiteral("requests"), QJsonArray::fromStringList(c.requests)},
        });
    }
    QJsonArray modes;
    for (const QJsonObject &m : m_modeChanges)
        modes.append(m);
    return QJsonObject{
        {QStringLiteral("name"), m_name},
        {QStringLiteral("kind"), m_kind == Kind::HttpConnect ? QStringLiteral("http") : QStringLiteral("socks5")},
        {QStringLiteral("port"), int(m_port)},
        {QStringLiteral("mode"), modeName(m_mode)},
        {QStringLiteral("delay_ms"), m_delayMs},
        {QStringLiteral("requires_credentials"), !m_user.isEmpty()},
        {QStringLiteral("modes"), modes},
        {QStringLiteral("connections"), connections},
    };
}

bool FakeEgressProxy::writeRecord(const QString &path) const
{
    QSaveFile f(path);
    if (!f.open(QIODevice::WriteOnly))
        return false;
    f.write(QJsonDocument(record()).toJson(QJsonDocument::Indented));
    return f.commit();
}

FakeEgressFleet::FakeEgressFleet()
{
    m_thread.setObjectName(QStringLiteral("fake-egress"));
    m_home = new QObject;
    m_home->moveToThread(&m_thread);
    // The proxies (children of m_home) are deleted in their own thread as it finishes.
    QObject::connect(&m_thread, &QThread::finished, m_home, &QObject::deleteLater);
    m_thread.start();
}

FakeEgressFleet::~FakeEgressFleet()
{
    m_thread.quit();
    m_thread.wait();
}

FakeEgressProxy *FakeEgressFleet::add(const QString &name, FakeEgressProxy::Kind kind, FakeEgressProxy::Mode mode,
                                      int delayMs, const QString &user, const QString &password)
{
    FakeEgressProxy *made = nullptr;
    QMetaObject::invokeMethod(
        m_home,
        [&] {
            auto *p = new FakeEgressProxy(name, kind, m_home);
            p->setCredentials(user, password);
            p->setMode(mode, delayMs);
            if (!p->listen()) {
                delete p;
                return;
            }
            made = p;
        },
        Qt::BlockingQueuedConnection);
    if (made)
        m_proxies.append(made);
    return made;
}

FakeEgressProxy *FakeEgressFleet::proxy(const QString &name) const
{
    for (FakeEgressProxy *p : m_proxies) {
        if (p->name() == name)
            return p;
    }
    return nullptr;
}

QStringList FakeEgressFleet::writeRecords(const QString &dir) const
{
    QStringList paths;
    for (const FakeEgressProxy *p : m_proxies) {
        const QString path = dir + QStringLiteral("/egress-") + p->name() + QStringLiteral(".json");
        if (!p->writeRecord(path))
            return {};
        paths.append(path);
    }
    return paths;
}

} // namespace sy::test
