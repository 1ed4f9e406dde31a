#pragma once

#include <QJsonObject>
#include <QObject>
#include <QPointer>
#include <QTimer>
#include <QUrl>

class QNetworkAccessManager;
class QNetworkReply;

namespace sy::ui {

// Asks the running proxy for GET /api/status about once a second, asynchronously on the GUI thread (one
// request at a time, bounded by a transfer timeout), and publishes the answer. The live page and the tray's
// "stopped" state read it; nothing here ever waits.
class StatusPoller : public QObject
{
    Q_OBJECT
public:
    explicit StatusPoller(QObject *parent = nullptr);

    // The proxy's base URL ("http://127.0.0.1:2455"); /api/status is appended.
    void setBaseUrl(const QString &baseUrl);
    void setIntervalMs(int ms) { m_timer.setInterval(ms); }
    void start();
    void stop();
    // One poll now (skipped while one is in flight).
    void poll();

    bool answering() const { return m_answering; }
    QJsonObject lastStatus() const { return m_last; }
    QString lastError() const { return m_error; }
    // Whether at least one poll has finished (before that, "not answering" means "not asked yet").
    bool hasResult() const { return m_hasResult; }

signals:
    void statusReceived(const QJsonObject &status);
    void unreachable(const QString &error);
    void answeringChanged(bool answering);

private:
    void onFinished();

    QNetworkAccessManager *m_network;
    QPointer<QNetworkReply> m_reply;
    QTimer m_timer;
    QUrl m_url;
    QJsonObject m_last;
    QString m_error;
    bool m_answering = false;
    bool m_hasResult = false;
};

} // namespace sy::ui
