#include "lib/RawHttpClient.h"

#include <QJsonDocument>
#include <QNetworkProxy>
#include <QTest>

namespace sy::test {

QByteArray RawResponse::header(QByteArrayView name) const
{
    for (const HttpHeader &h : headers) {
        if (headerNameEquals(h.first, name))
            return h.second;
    }
    return {};
}

QJsonObject RawResponse::json() const
{
    return QJsonDocument::fromJson(body).object();
}

void RawResponseParser::feed(const QByteArray &bytes)
{
    m_buffer += bytes;
    run();
}

void RawResponseParser::feedEof()
{
    if (m_state == State::UntilEof) {
        m_current.body += m_buffer;
        m_buffer.clear();
        finishCurrent();
    }
}

RawResponse RawResponseParser::takeComplete()
{
    return m_done.takeFirst();
}

void RawResponseParser::finishCurrent()
{
    m_current.complete = true;
    m_done.append(m_current);
    m_current = RawResponse();
    m_state = State::Head;
}

void RawResponseParser::run()
{
    for (;;) {
        switch (m_state) {
        case State::Head: {
            const qsizetype end = m_buffer.indexOf("\r\n\r\n");
            if (end < 0)
                return;
            const QList<QByteArray> lines = m_buffer.left(end).split('\n');
            m_buffer.remove(0, end + 4);
            m_current = RawResponse();
            m_current.statusLine = lines.first().trimmed();
            const QList<QByteArray> parts = m_current.statusLine.split(' ');
            if (parts.size() < 2 || !parts.first().startsWith("HTTP/1.")) {
                m_malformed = true;
                return;
            }
            m_current.status = parts.at(1).toInt();
            for (qsizetype i = 1; i < lines.size(); ++i) {
                const QByteArray line = lines.at(i).trimmed();
                const qsizetype colon = line.indexOf(':');
                if (colon <= 0) {
                    m_malformed = true;
                    return;
                }
                m_current.headers.append({line.left(colon).trimmed().toLower(), line.mid(colon + 1).trimmed()});
            }
            const int s = m_current.status;
            if (s >= 100 && s < 200)
                continue; // interim response, e.g. 100 Continue
            const QByteArray length = m_current.header("content-length");
            if (m_head || s == 204 || s == 304) {
                finishCurrent();
            } else if (m_current.header("transfer-encoding").toLower().contains("chunked")) {
                m_current.chunked = true;
                m_state = State::ChunkSize;
            } else if (!length.isEmpty()) {
                m_remaining = length.toLongLong();
                m_state = State::FixedBody;
                if (m_remaining == 0)
                    finishCurrent();
            } else {
                m_state = State::UntilEof;
            }
            break;
        }
        case State::FixedBody: {
            const qsizetype n = qMin<qsizetype>(m_remaining, m_buffer.size());
            m_current.body += m_buffer.left(n);
            m_buffer.remove(0, n);
            m_remaining -= n;
            if (m_remaining > 0)
                return;
            finishCurrent();
            break;
        }
        case State::ChunkSize: {
            const qsizetype end = m_buffer.indexOf("\r\n");
            if (end < 0)
                return;
            bool ok = false;
            QByteArray sizeText = m_buffer.left(end);
            const qsizetype semicolon = sizeText.indexOf(';');
            if (semicolon >= 0)
                sizeText.truncate(semicolon);
            m_remaining = sizeText.trimmed().toLongLong(&ok, 16);
            m_buffer.remove(0, end + 2);
            if (!ok) {
                m_malformed = true;
                return;
            }
            m_state = m_remaining == 0 ? State::ChunkTrailer : State::ChunkData;
            break;
        }
        case State::ChunkData: {
            if (m_buffer.size() < m_remaining + 2) {
                return;
            }
            m_current.body += m_buffer.left(m_remaining);
            if (m_buffer.mid(m_remaining, 2) != "\r\n") {
                m_malformed = true;
                return;
            }
            m_buffer.remove(0, m_remaining + 2);
            m_state = State::ChunkSize;
            break;
        }
        case State::ChunkTrailer: {
            const qsizetype end = m_buffer.indexOf("\r\n");
            if (end < 0)
                return;
            m_buffer.remove(0, end + 2);
            if (end == 0)
                finishCurrent();
            break;
        }
        case State::UntilEof:
            m_current.body += m_buffer;
            m_buffer.clear();
            return;
        }
    }
}

RawHttpClient::RawHttpClient(QObject *parent) : QObject(parent)
{
    m_socket.setProxy(QNetworkProxy::NoProxy);
    connect(&m_socket, &QTcpSocket::readyRead, this, &RawHttpClient::pump);
    connect(&m_socket, &QTcpSocket::disconnected, this, [this] {
        pump();
        m_parser.feedEof();
    });
}

bool RawHttpClient::connectTo(quint16 port, const QHostAddress &host, int timeoutMs)
{
    m_socket.connectToHost(host, port);
    return QTest::qWaitFor([this] { return m_socket.state() == QAbstractSocket::ConnectedState; }, timeoutMs);
}

void RawHttpClient::send(const QByteArray &bytes)
{
    m_socket.write(bytes);
    m_socket.flush();
}

QByteArray RawHttpClient::buildRequest(const QByteArray &method, const QByteArray &target,
                                       const HttpHeaderList &headers, const QByteArray &body)
{
    QByteArray r = method + ' ' + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    bool haveLength = false;
    for (const HttpHeader &h : headers) {
        r += h.first + ": " + h.second + "\r\n";
        haveLength =
            haveLength || headerNameEquals(h.first, "content-length") || headerNameEquals(h.first, "transfer-encoding");
    }
    if (!body.isEmpty() && !haveLength)
        r += "Content-Length: " + QByteArray::number(body.size()) + "\r\n";
    return r + "\r\n" + body;
}

void RawHttpClient::pump()
{
    if (!m_reading || !m_socket.isOpen())
        return;
    const QByteArray data = m_socket.readAll();
    m_received += data.size();
    m_parser.feed(data);
}

void RawHttpClient::setReading(bool reading)
{
    m_reading = reading;
    // A zero-sized Qt read buffer would still read into it; limit it so the kernel buffers fill instead.
    m_socket.setReadBufferSize(reading ? 0 : 1);
    if (reading)
        pump();
}

std::optional<RawResponse> RawHttpClient::readResponse(int timeoutMs)
{
    if (!QTest::qWaitFor([this] { return m_parser.hasComplete() || m_parser.malformed(); }, timeoutMs))
        return std::nullopt;
    if (!m_parser.hasComplete())
        return std::nullopt;
    return m_parser.takeComplete();
}

bool RawHttpClient::waitForBody(qsizetype bytes, int timeoutMs)
{
    return QTest::qWaitFor(
        [this, bytes] { return m_parser.latest().status > 0 && m_parser.latest().body.size() >= bytes; }, timeoutMs);
}

bool RawHttpClient::waitForBodyContaining(const QByteArray &needle, int timeoutMs)
{
    return QTest::qWaitFor([this, &needle] { return m_parser.latest().body.contains(needle); }, timeoutMs);
}

bool RawHttpClient::waitForDisconnected(int timeoutMs)
{
    return QTest::qWaitFor([this] { return m_socket.state() == QAbstractSocket::UnconnectedState; }, timeoutMs);
}

bool RawHttpClient::isConnected() const
{
    return m_socket.state() == QAbstractSocket::ConnectedState;
}

} // namespace sy::test
