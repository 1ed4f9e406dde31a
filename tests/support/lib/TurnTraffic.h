#pragma once

#include "http/HttpRequest.h"
#include "lib/DurableStateChecker.h"
#include "lib/RawHttpClient.h"

#include <QElapsedTimer>
#include <QJsonObject>
#include <QObject>
#include <QRandomGenerator>
#include <QTcpSocket>
#include <QTimer>

#include <functional>
#include <memory>

namespace sy::test {

// Bodies of streaming turns whose answer the fake upstream echoes ("ECHO: <text>": one delta per word).
QByteArray codexTurnBody(const QString &text);
QByteArray responsesTurnBody(const QString &text, const QString &previousResponseId = {});
// A complete HTTP/1.1 request for one turn on its own connection (Connection: close).
QByteArray turnRequestBytes(const QByteArray &target, const QByteArray &body, const HttpHeaderList &extra = {});

// What a client saw of one turn.
struct TurnOutcome
{
    QString requestId;  // x-request-id of the proxy's answer (empty when none came)
    int status = 0;     // HTTP status (0: none)
    bool cancelled = false;     // the client hung up on purpose (or after its own timeout)
    bool connectFailed = false; // no connection, or it broke before an answer
    bool complete = false;      // the response's framing ended
    bool sawCompleted = false;  // a response.completed event arrived
    QJsonObject completedUsage; // response.usage of that event, as the client received it
    QString responseId;         // from response.created
    QString errorCode;          // JSON error code (non-stream answers) or the stream's error code
    QList<qint64> outputAtMs;   // wall-clock arrival of each text delta / response.completed
    qint64 startedAtMs = 0;
    qint64 endedAtMs = 0;
    int replica = -1;
    QByteArray kind; // free label set by the caller
};

// One turn on its own raw socket, fully asynchronous (no nested event loops): it records the x-request-id,
// every output event's arrival time and how the exchange ended. Cancelling aborts the socket (a client
// disconnect).
class AsyncTurn : public QObject
{
    Q_OBJECT

public:
    AsyncTurn(quint16 port, QByteArray request, QObject *parent = nullptr);
    void start(int timeoutMs = 30000);
    void cancelAfter(int ms);
    void cancel();
    bool isDone() const { return m_done; }
    TurnOutcome &outcome() { return m_outcome; }
    const TurnOutcome &outcome() const { return m_outcome; }

signals:
    void finished();

private:
    void onReadyRead();
    void scanEvents(const RawResponse &r);
    void finish();

    quint16 m_port;
    QByteArray m_request;
    QTcpSocket m_socket;
    RawResponseParser m_parser;
    QTimer m_timeout;
    QTimer m_cancelTimer;
    qsizetype m_scanned = 0;
    bool m_done = false;
    TurnOutcome m_outcome;
};

// Waits (spinning the event loop) until every turn is done or the timeout passes.
bool waitForTurns(const QList<AsyncTurn *> &turns, int timeoutMs);
QList<ClientObservation> observationsOf(const QList<TurnOutcome> &outcomes);

// A seeded client mix for stress runs: `clients` loops, each sending one turn after another to a random live
// replica: Codex turns, /v1/responses turns and continuations of earlier answers (previous_response_id),
// with some clients hanging up at a random moment.
struct LoadMix
{
    quint32 seed = 1;
    int clients = 32;
    double cancelRate = 0.08;  // share of turns the client abandons
    int cancelMaxMs = 800;     // ... after a uniform delay up to this
    double responsesRate = 0.15;
    double continuationRate = 0.10;
    int minWords = 3;
    int maxWords = 8;
    int turnTimeoutMs = 30000;
};

class LoadDriver : public QObject
{
    Q_OBJECT

public:
    // `ports` returns each replica's current port (0 while it is down).
    LoadDriver(const LoadMix &mix, std::function<QList<quint16>()> ports, QObject *parent = nullptr);
    ~LoadDriver() override;
    void start();
    void stopIssuing() { m_issuing = false; }
    // Spins the event loop until no turn is in flight.
    bool waitIdle(int timeoutMs);
    int inFlight() const { return int(m_active.size()); }
    const QList<TurnOutcome> &outcomes() const { return m_outcomes; }
    // Turns in flight right now on replica `index` (by the replica the client picked).
    int inFlightOn(int index) const;
    QString summary() const;

private:
    void launch(int client);
    void onFinished(AsyncTurn *turn, int client);

    LoadMix m_mix;
    std::function<QList<quint16>()> m_ports;
    QRandomGenerator m_rng;
    bool m_issuing = false;
    QList<AsyncTurn *> m_active;
    QList<TurnOutcome> m_outcomes;
    QList<QString> m_anchors; // response ids of completed turns
    int m_issued = 0;
};

} // namespace sy::test
