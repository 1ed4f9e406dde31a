#include "store/WalCheckpointer.h"

#include <QLoggingCategory>
#include <QObject>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QThread>
#include <QTimer>

Q_DECLARE_LOGGING_CATEGORY(lcStore)

namespace sy {

// Lives on the checkpointer's thread and owns its connection.
class WalCheckpointAgent : public QObject
{
public:
    bool open(const QString &path, QString *error)
    {
        m_connection = QStringLiteral("sy-wal-checkpoint-%1").arg(quintptr(this), 0, 16);
        QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), m_connection);
        db.setDatabaseName(path);
        if (!db.open()) {
            *error = db.lastError().text();
            return false;
        }
        // Only look: the store connection set WAL mode (a read-only file may have kept another mode).
        QSqlQuery q(db);
        if (!q.exec(QStringLiteral("PRAGMA journal_mode")) || !q.next()) {
            *error = q.lastError().text();
            return false;
        }
        if (q.value(0).toString().compare(QLatin1String("wal"), Qt::CaseInsensitive) != 0) {
            *error = QStringLiteral("journal mode is %1, not WAL").arg(q.value(0).toString());
            return false;
        }
        return true;
    }

    void close()
    {
        if (m_connection.isEmpty())
            return;
        {
            QSqlDatabase db = QSqlDatabase::database(m_connection, false);
            db.close();
        }
        QSqlDatabase::removeDatabase(m_connection);
        m_connection.clear();
    }

    // True when the WAL holds frames and all of them are in the database now: the next write starts it over.
    bool pass(WalCheckpointStats *stats)
    {
        QSqlQuery q(QSqlDatabase::database(m_connection, false));
        // Rows: busy (could not finish), frames in the WAL, frames of it copied into the database so far.
        if (!q.exec(QStringLiteral("PRAGMA wal_checkpoint(PASSIVE)")) || !q.next()) {
            ++stats->failures;
            const QString error = q.lastError().text();
            if (error != m_lastError)
                qCWarning(lcStore).noquote() << "WAL checkpoint failed (will retry after the next write):" << error;
            m_lastError = error;
            return false;
        }
        m_lastError.clear();
        const qint64 logFrames = q.value(1).toLongLong();
        const qint64 copied = q.value(2).toLongLong();
        stats->walFrames = logFrames;
        stats->backlogFrames = logFrames - copied;
        ++stats->passes; // last: a reader that sees the pass counted sees its figures
        return q.value(0).toInt() == 0 && logFrames > 0 && copied == logFrames;
    }

private:
    QString m_connection;
    QString m_lastError;
};

WalCheckpointer::WalCheckpointer(WalCheckpointStats *stats) : m_stats(stats) {}

WalCheckpointer::~WalCheckpointer()
{
    stop();
}

bool WalCheckpointer::start(const QString &path, QString *error)
{
    if (m_thread)
        return true;
    m_thread = new QThread;
    m_thread->setObjectName(QStringLiteral("wal-checkpoint"));
    m_agent = new WalCheckpointAgent;
    m_agent->moveToThread(m_thread);
    m_thread->start();
    bool opened = false;
    QString openError;
    WalCheckpointAgent *agent = m_agent;
    QMetaObject::invokeMethod(
        agent, [&, agent] { opened = agent->open(path, &openError); }, Qt::BlockingQueuedConnection);
    if (!opened) {
        stop();
        if (error)
            *error = openError;
        return false;
    }
    return true;
}

void WalCheckpointer::stop()
{
    if (!m_thread)
        return;
    WalCheckpointAgent *agent = m_agent;
    QMetaObject::invokeMethod(agent, [agent] { agent->close(); }, Qt::BlockingQueuedConnection);
    m_thread->quit();
    m_thread->wait();
    // The thread has finished: the agent (and a pass it still had scheduled) goes from here.
    delete m_agent;
    delete m_thread;
    m_agent = nullptr;
    m_thread = nullptr;
    m_scheduled = false;
}

void WalCheckpointer::noteCommit()
{
    if (!m_agent || m_scheduled.exchange(true))
        return;
    WalCheckpointAgent *agent = m_agent;
    WalCheckpointStats *stats = m_stats;
    std::atomic<bool> *scheduled = &m_scheduled;
    const std::function<void()> *fullyCopied = &m_fullyCopied; // stop() ends the thread before it goes
    const int delayMs = kDefaultDelayMs;
    QMetaObject::invokeMethod(
        agent,
        [agent, stats, scheduled, fullyCopied, delayMs] {
            QTimer::singleShot(delayMs, agent, [agent, stats, scheduled, fullyCopied] {
                // Cleared first: a commit during this pass schedules the next one.
                scheduled->store(false);
                if (agent->pass(stats) && *fullyCopied)
                    (*fullyCopied)();
            });
        },
        Qt::QueuedConnection);
}

} // namespace sy
