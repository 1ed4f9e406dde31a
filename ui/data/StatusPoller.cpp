#include "data/StatusPoller.h"

#include <QJsonDocument>
#include <QNetworkAccessManager>
#include <QNetworkProxy>
#include <QNetworkReply>

namespace sy::ui {

StatusPoller::StatusPoller(QObject *parent) : QObject(parent), m_network(new QNetworkAccessManager(this))
{
    // The proxy listens on this machine: a system HTTP proxy must not sit in between.
    m_network->setProxy(QNetworkProxy::NoProxy);
    m_timer.setInterval(1000);
    connect(&m_timer, &QTimer::timeout, this, &StatusPoller::poll);
}

void StatusPoller::setBaseUrl(const QString &baseUrl)
{
    m_url = QUrl(baseUrl + QStringLiteral("/api/status"));
}

void StatusPoller::start()
{
    m_timer.start();
    poll();
}

void StatusPoller::stop()
{
    m_timer.stop();
    if (m_reply)
        m_reply->abort();
}

void StatusPoller::poll()
{
    if (m_reply || !m_url.isValid())
        return;
    QNetworkRequest request(m_url);
    // Shorter than two poll intervals: a hung proxy reads as "not answering" within two seconds.
    request.setTransferTimeout(1500);
    m_reply = m_network->get(request);
    connect(m_reply, &QNetworkReply::finished, this, &StatusPoller::onFinished);
}

void StatusPoller::onFinished()
{
    QNetworkReply *reply = m_reply;
    m_reply = nullptr;
    if (!reply)
        return;
    reply->deleteLater();
    const bool was = m_answering;
    m_hasResult = true;
    QJsonParseError parseError;
    const QJsonDocument doc = reply->error() == QNetworkReply::NoError
                                  ? QJsonDocument::fromJson(reply->readAll(), &parseError)
                                  : QJsonDocument();
    if (reply->error() != QNetworkReply::NoError || !doc.isObject()) {
        m_answering = false;
        m_error = reply->error() != QNetworkReply::NoError ? reply->errorString() : parseError.errorString();
        if (was)
            emit answeringChanged(false);
        emit unreachable(m_error);
        return;
    }
    m_answering = true;
    m_error.clear();
    m_last = doc.object();
    if (!was)
        emit answeringChanged(true);
    emit statusReceived(m_last);
}

} // namespace sy::ui
