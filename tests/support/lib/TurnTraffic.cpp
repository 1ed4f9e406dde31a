#include "lib/TurnTraffic.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QDeadlineTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkProxy>
#include <QThread>

namespace sy::test {

namespace {

QByteArray compact(const QJsonObject &o)
{
    return QJsonDocument(o).toJson(QJsonDocument::Compact);
}

qint64 wallMs()
{
    return QDateTime::currentMSecsSinceEpoch();
}

QString errorCodeOf(const QJsonObject &o)
{
    const QJsonObject error = o.value(QLatin1String("error")).toObject();
    if (!error.isEmpty())
        return error.value(QLatin1String("code")).toString();
    return o.value(QLatin1String("response"))
        .toObject()
        .value(QLatin1String("error"))
        .toObject()
        .value(QLatin1String("code"))
        .toString();
}

} // namespace

QByteArray codexTurnBody(const QString &text)
{
    const QJsonObject message{
        {QStringLiteral("type"), QStringLiteral("message")},
        {QStringLiteral("role"), QStringLiteral("user")},
        {QStringLiteral("content"), QJsonArray{QJsonObject{{QStringLiteral("type"), QStringLiteral("input_text")},
                                                           {QStringLiteral("text"), QString(QStringLiteral("ECHO: ") + text)}}}}};
    return compact(QJsonObject{{QStringLiteral("model"), QStringLiteral("gpt-5-codex")},
                               {QStringLiteral("instructions"), QStringLiteral("ownership stress")},
                               {QStringLiteral("stream"), true},
                               {QStringLiteral("store"), false},
                               {QStringLiteral("input"), QJsonArray{message}}});
}

QByteArray responsesTurnBody(const QString &text, const QString &previousResponseId)
{
    QJsonObject body{{QStringLiteral("model"), QStringLiteral("gpt-5")},
                     {QStringLiteral("input"), QString(QStringLiteral("ECHO: ") + text)},
                     {QStringLiteral("stream"), true}};
    if (!previousResponseId.isEmpty())
        body.insert(QStringLiteral("previous_response_id"), previousResponseId);
    return compact(body);
}

QByteArray turnRequestBytes(const QByteArray &target, const QByteArray &body, const HttpHeaderList &extra)
{
    HttpHeaderList headers{{"content-type", "application/json"},
                           {"authorization", "Bearer client-key"},
                           {"connection", "close"}};
    headers.append(extra);
    return RawHttpClient::buildRequest("POST", target, headers, body);
}

AsyncTurn::AsyncTurn(quint16 port, QByteArray request, QObject *parent)
    : QObject(parent), m_port(port), m_request(std::move(request))
{
    m_socket.setProxy(QNetworkProxy::NoProxy);
    m_timeout.setSingleShot(true);
    m_cancelTimer.setSingleShot(true);
    connect(&m_timeout, &QTimer::timeout, this, &AsyncTurn::cancel);
    connect(&m_cancelTimer, &QTimer::timeout, this, &AsyncTurn::cancel);
    connect(&m_socket, &QTcpSocket::connected, this, [this] { m_socket.write(m_request); });
    connect(&m_socket, &QTcpSocket::readyRead, this, &AsyncTurn::onReadyRead);
    connect(&m_socket, &QTcpSocket::disconnected, this, [this] {
        if (m_done)
            return;
        onReadyRead();
        m_parser.feedEof();
        if (m_parser.hasComplete())
            scanEvents(m_parser.takeComplete());
        finish();
    });
    connect(&m_socket, &QTcpSocket::errorOccurred, this, [this](QAbstractSocket::SocketError e) {
        if (e == QAbstractSocket::RemoteHostClosedError)
            return; // disconnected() follows
        if (m_outcome.status == 0)
            m_outcome.connectFailed = true;
        finish();
    });
}

void AsyncTurn::start(int timeoutMs)
{
    m_outcome.startedAtMs = wallMs();
    if (m_port == 0) {
        m_outcome.connectFailed = true;
        QTimer::singleShot(0, this, &AsyncTurn::finish);
        return;
    }
    m_timeout.start(timeoutMs);
    m_socket.connectToHost(QHostAddress::LocalHost, m_port);
}

void AsyncTurn::cancelAfter(int ms)
{
    m_cancelTimer.start(qMax(0, ms));
}

void AsyncTurn::cancel()
{
    if (m_done)
        return;
    m_outcome.cancelled = true;
    onReadyRead();
    m_socket.abort();
    finish();
}

void AsyncTurn::onReadyRead()
{
    if (m_done || !m_socket.isOpen())
        return;
    const QByteArray bytes = m_socket.readAll();
    if (bytes.isEmpty())
        return;
    m_parser.feed(bytes);
    if (m_parser.hasComplete()) {
        scanEvents(m_parser.takeComplete());
        finish();
        return;
    }
    if (m_parser.headComplete())
        scanEvents(m_parser.current());
}

void AsyncTurn::scanEvents(const RawResponse &r)
{
    if (r.status != 0 && m_outcome.status == 0) {
        m_outcome.status = r.status;
        m_outcome.requestId = QString::fromLatin1(r.header("x-request-id"));
    }
    const bool sse = r.header("content-type").startsWith("text/event-stream");
    if (!sse) {
        if (r.complete) {
            m_outcome.complete = true;
            if (r.status >= 400)
                m_outcome.errorCode = errorCodeOf(QJsonDocument::fromJson(r.body).object());
        }
        return;
    }
    const qint64 now = wallMs();
    for (;;) {
        const qsizetype end = r.body.indexOf("\n\n", m_scanned);
        if (end < 0)
            break;
        const QByteArray frame = r.body.mid(m_scanned, end - m_scanned);
        m_scanned = end + 2;
        QByteArray type, data;
        for (const QByteArray &line : frame.split('\n')) {
            if (line.startsWith("event:"))
                type = line.mid(6).trimmed();
            else if (line.startsWith("data:"))
                data += line.mid(5).trimmed();
        }
        if (type == "response.output_text.delta" || type == "response.completed")
            m_outcome.outputAtMs.append(now);
        const QJsonObject o = QJsonDocument::fromJson(data).object();
        if (type == "response.created" && m_outcome.responseId.isEmpty())
            m_outcome.responseId = o.value(QLatin1String("response")).toObject().value(QLatin1String("id")).toString();
        if (type == "response.completed") {
            m_outcome.sawCompleted = true;
            m_outcome.completedUsage = o.value(QLatin1String("response")).toObject().value(QLatin1String("usage")).toObject();
        }
        if ((type == "error" || type == "response.failed") && m_outcome.errorCode.isEmpty())
            m_outcome.errorCode = errorCodeOf(o);
    }
    if (r.complete)
        m_outcome.complete = true;
}

void AsyncTurn::finish()
{
    if (m_done)
        return;
    m_done = true;
    m_timeout.stop();
    m_cancelTimer.stop();
    m_outcome.endedAtMs = wallMs();
    if (m_socket.state() != QAbstractSocket::UnconnectedState)
        m_socket.abort();
    emit finished();
}

bool waitForTurns(const QList<AsyncTurn *> &turns, int timeoutMs)
{
    QDeadlineTimer deadline(timeoutMs);
    for (;;) {
        bool all = true;
        for (const AsyncTurn *t : turns)
            all = all && t->isDone();
        if (all)
            return true;
        if (deadline.hasExpired())
            return false;
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
        QThread::msleep(1);
    }
}

QList<ClientObservation> observationsOf(const QList<TurnOutcome> &outcomes)
{
    QList<ClientObservation> out;
    for (const TurnOutcome &o : outcomes) {
        if (!o.requestId.isEmpty() && !o.outputAtMs.isEmpty())
            out.append({o.requestId, o.outputAtMs});
    }
    return out;
}

LoadDriver::LoadDriver(const LoadMix &mix, std::function<QList<quint16>()> ports, QObject *parent)
    : QObject(parent), m_mix(mix), m_ports(std::move(ports)), m_rng(mix.seed)
{
}

LoadDriver::~LoadDriver()
{
    for (AsyncTurn *t : std::as_const(m_active))
        t->disconnect(this);
    qDeleteAll(m_active);
}

void LoadDriver::start()
{
    m_issuing = true;
    for (int c = 0; c < m_mix.clients; ++c) {
        // Staggered so the first wave does not arrive in one instant.
        QTimer::singleShot(int(m_rng.bounded(200)), this, [this, c] { launch(c); });
    }
}

void LoadDriver::launch(int client)
{
    if (!m_issuing)
        return;
    const QList<quint16> ports = m_ports();
    QList<int> live;
    for (int i = 0; i < ports.size(); ++i) {
        if (ports.at(i) != 0)
            live.append(i);
    }
    if (live.isEmpty()) {
        QTimer::singleShot(50, this, [this, client] { launch(client); });
        return;
    }
    const int replica = live.at(int(m_rng.bounded(int(live.size()))));
    const int words = m_mix.minWords + int(m_rng.bounded(m_mix.maxWords - m_mix.minWords + 1));
    QStringList text;
    for (int w = 0; w < words; ++w)
        text << QStringLiteral("c%1t%2w%3").arg(client).arg(m_issued).arg(w);
    const double roll = m_rng.generateDouble();
    QByteArray request;
    QByteArray kind;
    if (roll < m_mix.continuationRate && !m_anchors.isEmpty()) {
        const QString anchor = m_anchors.at(int(m_rng.bounded(int(m_anchors.size()))));
        request = turnRequestBytes("/v1/responses", responsesTurnBody(text.join(QLatin1Char(' ')), anchor));
        kind = "continuation";
    } else if (roll < m_mix.continuationRate + m_mix.responsesRate) {
        request = turnRequestBytes("/v1/responses", responsesTurnBody(text.join(QLatin1Char(' '))));
        kind = "responses";
    } else {
        request = turnRequestBytes("/backend-api/codex/responses", codexTurnBody(text.join(QLatin1Char(' '))));
        kind = "codex";
    }
    auto *turn = new AsyncTurn(ports.at(replica), request);
    turn->outcome().replica = replica;
    turn->outcome().kind = kind;
    if (m_rng.generateDouble() < m_mix.cancelRate)
        turn->cancelAfter(int(m_rng.bounded(qMax(1, m_mix.cancelMaxMs))));
    ++m_issued;
    m_active.append(turn);
    connect(turn, &AsyncTurn::finished, this, [this, turn, client] { onFinished(turn, client); },
            Qt::QueuedConnection);
    turn->start(m_mix.turnTimeoutMs);
}

void LoadDriver::onFinished(AsyncTurn *turn, int client)
{
    m_active.removeAll(turn);
    const TurnOutcome &o = turn->outcome();
    if (o.sawCompleted && !o.responseId.isEmpty()) {
        m_anchors.append(o.responseId);
        if (m_anchors.size() > 300)
            m_anchors.removeFirst();
    }
    m_outcomes.append(o);
    turn->deleteLater();
    if (m_issuing)
        QTimer::singleShot(int(m_rng.bounded(15)), this, [this, client] { launch(client); });
}

int LoadDriver::inFlightOn(int index) const
{
    int n = 0;
    for (const AsyncTurn *t : m_active)
        n += t->outcome().replica == index ? 1 : 0;
    return n;
}

bool LoadDriver::waitIdle(int timeoutMs)
{
    QDeadlineTimer deadline(timeoutMs);
    while (!m_active.isEmpty() && !deadline.hasExpired()) {
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
        QThread::msleep(1);
    }
    QCoreApplication::processEvents();
    return m_active.isEmpty();
}

QString LoadDriver::summary() const
{
    int completed = 0, cancelled = 0, refused = 0, errors = 0, continuations = 0, withId = 0;
    QHash<int, int> statuses;
    QHash<QString, int> codes;
    for (const TurnOutcome &o : m_outcomes) {
        completed += o.sawCompleted ? 1 : 0;
        cancelled += o.cancelled ? 1 : 0;
        refused += o.connectFailed ? 1 : 0;
        continuations += o.kind == "continuation" ? 1 : 0;
        withId += o.requestId.isEmpty() ? 0 : 1;
        ++statuses[o.status];
        if (!o.errorCode.isEmpty()) {
            ++errors;
            ++codes[o.errorCode];
        }
    }
    QStringList s, c;
    for (auto it = statuses.cbegin(); it != statuses.cend(); ++it)
        s << QStringLiteral("%1:%2").arg(it.key()).arg(it.value());
    for (auto it = codes.cbegin(); it != codes.cend(); ++it)
        c << QStringLiteral("%1:%2").arg(it.key()).arg(it.value());
    s.sort();
    c.sort();
    return QStringLiteral("client turns=%1 completed=%2 cancelled=%3 connect_failed=%4 continuations=%5 "
                          "answered_with_request_id=%6 errors=%7 statuses{%8} error_codes{%9}")
        .arg(m_outcomes.size())
        .arg(completed)
        .arg(cancelled)
        .arg(refused)
        .arg(continuations)
        .arg(withId)
        .arg(errors)
        .arg(s.join(QLatin1Char(' ')), c.join(QLatin1Char(' ')));
}

} // namespace sy::test
