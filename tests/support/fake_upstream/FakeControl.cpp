// The test control API of the fake upstream (/__control/...).
#include "FakeTurn.h"
#include "FakeUpstream.h"

#include <QJsonDocument>

namespace sy::fake {

namespace {

QByteArray compact(const QJsonValue &v)
{
    if (v.isArray())
        return QJsonDocument(v.toArray()).toJson(QJsonDocument::Compact);
    return QJsonDocument(v.toObject()).toJson(QJsonDocument::Compact);
}

} // namespace

void FakeUpstream::handleControl(const HttpRequest &r, HttpResponse *response)
{
    auto reply = [response](const QJsonValue &v) { response->sendFull(200, "application/json", compact(v)); };
    auto bad = [response](const QString &message) {
        response->sendJsonError(400, "invalid_request_error", "bad_control_request", message);
    };
    const QString what = r.path.mid(int(qstrlen("/__control/")));
    const QJsonObject in = QJsonDocument::fromJson(r.body).object();

    if (what == QLatin1String("log") && r.method == "GET") {
        // A page: entries [from, from + limit); brief=1 leaves out each request's body and headers.
        bool fromOk = true, limitOk = true;
        const QString fromText = r.query.queryItemValue(QStringLiteral("from"));
        const QString limitText = r.query.queryItemValue(QStringLiteral("limit"));
        const qsizetype from = fromText.isEmpty() ? 0 : fromText.toLongLong(&fromOk);
        const qsizetype limit = limitText.isEmpty() ? m_log.size() : limitText.toLongLong(&limitOk);
        if (!fromOk || !limitOk || from < 0 || limit < 0)
            return bad(QStringLiteral("from and limit must be whole numbers of at least 0"));
        const bool brief = r.query.queryItemValue(QStringLiteral("brief")) == QLatin1String("1");
        QJsonArray page;
        for (qsizetype i = from; i < m_log.size() && i - from < limit; ++i) {
            QJsonObject entry = m_log.at(i);
            if (brief) {
                entry.remove(QLatin1String("body"));
                entry.remove(QLatin1String("headers"));
            }
            page.append(entry);
        }
        reply(page);
    } else if (what == QLatin1String("stats") && r.method == "GET") {
        reply(QJsonObject{{QStringLiteral("active_streams"), m_activeStreams},
                          {QStringLiteral("max_concurrent_streams"), m_maxConcurrentStreams},
                          {QStringLiteral("total_requests"), int(m_log.size())}});
    } else if (what == QLatin1String("script") && r.method == "POST") {
        QString key;
        if (in.value(QStringLiteral("account_id")).isString())
            key = QStringLiteral("account:") + in.value(QStringLiteral("account_id")).toString();
        else if (in.value(QStringLiteral("token")).isString())
            key = QStringLiteral("token:") + in.value(QStringLiteral("token")).toString();
        const QString endpoint = in.value(QStringLiteral("endpoint")).toString(QStringLiteral("responses"));
        static const QStringList endpoints{QStringLiteral("responses"), QStringLiteral("compact"),
                                           QStringLiteral("models"), QStringLiteral("usage")};
        if (key.isEmpty() || !endpoints.contains(endpoint) || !in.value(QStringLiteral("actions")).isArray())
            return bad(QStringLiteral("need account_id or token, an actions array and a known endpoint"));
        QList<Behaviour> actions;
        for (const QJsonValue &v : in.value(QStringLiteral("actions")).toArray()) {
            const std::optional<Behaviour> b = parseBehaviour(v.toString());
            if (!v.isString() || !b)
                return bad(QStringLiteral("unknown action: %1").arg(v.toString()));
            actions.append(*b);
        }
        m_scripts.add(endpoint, key, actions, in.value(QStringLiteral("sticky")).toBool());
        reply(QJsonObject{{QStringLiteral("ok"), true}, {QStringLiteral("queued"), int(actions.size())}});
    } else if (what == QLatin1String("usage") && r.method == "POST") {
        const QString account = in.value(QStringLiteral("account_id")).toString();
        if (account.isEmpty())
            return bad(QStringLiteral("need account_id"));
        UsageState state = m_usage.value(account);
        const QString error = applyUsageUpdate(state, in);
        if (!error.isEmpty())
            return bad(error);
        m_usage.insert(account, state);
        reply(QJsonObject{{QStringLiteral("ok"), true}});
    } else if ((what == QLatin1String("reset") || what == QLatin1String("drop_held")) && r.method == "POST") {
        int dropped = 0;
        for (const QPointer<FakeTurn> &turn : std::as_const(m_turns)) {
            if (turn) {
                turn->dropIfHeld();
                ++dropped;
            }
        }
        if (what == QLatin1String("reset")) {
            m_scripts.clear();
            m_usage.clear();
            m_responseOwners.clear();
            m_promptCache.clear();
            m_log.clear();
            m_maxConcurrentStreams = m_activeStreams;
        }
        reply(QJsonObject{{QStringLiteral("ok"), true}, {QStringLiteral("turns_seen"), dropped}});
    } else {
        response->sendJsonError(404, "invalid_request_error", "not_found", QStringLiteral("unknown control route"));
    }
}

} // namespace sy::fake
