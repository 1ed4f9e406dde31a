#include "ClaimBench.h"

#include "Stats.h"
#include "ownership/OwnerSlotRepository.h"
#include "store/AccountRepository.h"
#include "store/Database.h"
#include "store/StoreWorker.h"
#include "util/Ids.h"

#include <QDateTime>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFile>
#include <QHash>
#include <QPair>
#include <QThread>
#include <algorithm>
#include <cstdio>
#include <fcntl.h>
#include <unistd.h>
#include <vector>

namespace sy::bench {

namespace {

struct Sample
{
    double roundTripUs = 0; // submit -> answer on the submitting thread
    double unitUs = 0;      // the claim's own statements inside the store unit
    double startUs = 0;     // submit -> the claim's statements begin (queue, wake-up, BEGIN)
    double afterUs = 0;     // the statements end -> answer (COMMIT, hand-back, wake-up)
};

void print(const char *label, const std::vector<double> &v)
{
    std::printf("%-34s n=%5zu p50=%7.1f p90=%7.1f p99=%7.1f us\n", label, v.size(), nearestRank(v, 0.5),
                nearestRank(v, 0.9), nearestRank(v, 0.99));
}

} // namespace

bool timeClaims(const QString &databasePath, int count, int burst, QString *error)
{
    StoreWorker store;
    if (const int group = qEnvironmentVariableIntValue("BENCH_GROUP_JOBS"); group > 0)
        store.setWriteGroupLimits(group, 5); // A/B of the group-commit limit (the proxy's default is 64 jobs)
    if (!store.start(databasePath, error))
        return false;
    QList<AccountRecord> accounts;
    std::optional<ReplicaIdentity> me;
    const qint64 startMs = QDateTime::currentMSecsSinceEpoch();
    if (!store.runBlocking(
            [&](Database &db, QString *e) {
                accounts = AccountRepository(db).list(e);
                me = OwnerSlotRepository(db).registerReplica(QStringLiteral("bench-claims"), startMs, e);
                return e->isEmpty() && me.has_value();
            },
            error))
        return false;
    if (accounts.isEmpty()) {
        *error = QStringLiteral("the database has no accounts");
        return false;
    }
    // Every slot's epoch as this process last left it (the proxy's snapshot).
    QHash<QPair<QString, int>, qint64> epochs;
    const int slotsPerAccount = std::max(1, burst);
    struct Series
    {
        std::vector<double> roundTrips, starts, units, afters, lastOfBurst;
        std::vector<double> rechecks, recheckAgain, journalWrites;
    };
    // BENCH_CLAIM_GAP_US: a pause after each round, as a proxy's turns have between their claims (the store
    // thread goes to sleep and its caches go cold). BENCH_CLAIM_WARM_US (with a gap): StoreWorker::warmUp with
    // the claim's reads that long before each lone claim, as a turn's head gives it (SlotLedger::expectClaim).
    const unsigned long gapUs = qEnvironmentVariableIntValue("BENCH_CLAIM_GAP_US");
    const int warmUs =
        qEnvironmentVariableIsSet("BENCH_CLAIM_WARM_US") ? qEnvironmentVariableIntValue("BENCH_CLAIM_WARM_US") : -1;
    // BENCH_CLAIM_INLINE=1: lone claims run on this thread, on a connection of its own (an experiment).
    const bool inline_ = qEnvironmentVariableIntValue("BENCH_CLAIM_INLINE") == 1;
    // BENCH_RECHECK=1 (an experiment for docs/CLAIM-AHEAD.md): after each lone round, once the store thread
    // has written its claim and settlement, this thread re-reads the claimed account's row as the claim does
    // (status, cooldown, version, selection time) on a connection of its own, twice: the first read finds the
    // store's writes since its last read, the second nothing new. BENCH_RECHECK_MMAP=BYTES sets that
    // connection's mmap_size first. It also times the design's take journal: one write() of the request id to a
    // file opened with O_APPEND beside the database (DB.takes-bench, removed at the end), no fsync.
    const bool recheck = qEnvironmentVariableIntValue("BENCH_RECHECK") == 1;
    Database local;
    if ((inline_ || recheck) && !local.open(databasePath, error))
        return false;
    if (recheck && qEnvironmentVariableIsSet("BENCH_RECHECK_MMAP") &&
        !local.exec(QStringLiteral("PRAGMA mmap_size = %1").arg(qEnvironmentVariableIntValue("BENCH_RECHECK_MMAP")),
                    error))
        return false;
    auto timeRecheck = [&local](const QString &accountId, QString *e) {
        QElapsedTimer t;
        t.start();
        Database::StatementScope statements(local);
        QSqlQuery q = local.query();
        if (!local.prepare(q, OwnerSlotRepository::accountCheckSql(), e))
            return -1.0;
        Database::bindAll(q, {accountId});
        if (!local.exec(q, e) || !q.next())
            return -1.0;
        return double(t.nsecsElapsed()) / 1000.0;
    };
    const QByteArray journalPath = QFile::encodeName(databasePath + QStringLiteral(".takes-bench"));
    int journal = -1;
    if (recheck && (journal = ::open(journalPath.constData(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600)) < 0) {
        *error = QStringLiteral("cannot open %1").arg(QString::fromLocal8Bit(journalPath));
        return false;
    }
    auto timeJournalWrite = [journal](const QString &requestId) {
        const QByteArray line = requestId.toLatin1() + '\n';
        QElapsedTimer t;
        t.start();
        const bool ok = ::write(journal, line.constData(), size_t(line.size())) == line.size();
        return ok ? double(t.nsecsElapsed()) / 1000.0 : -1.0;
    };
    auto run = [&](int inFlight, Series *out) {
        for (int done = 0; done < count; done += inFlight) {
            const int n = std::min(inFlight, count - done);
            std::vector<Sample> samples(static_cast<size_t>(n));
            std::vector<HeldSlot> held;
            QEventLoop loop;
            int answered = 0;
            QElapsedTimer burstTimer;
            if (inFlight == 1 && warmUs >= 0) {
                const QString account = accounts[done % accounts.size()].id;
                store.warmUp(
                    [account](Database &db, QString *e) { return OwnerSlotRepository(db).warmClaim(account, e); });
                if (warmUs > 0)
                    QThread::usleep(warmUs);
            }
            burstTimer.start();
            for (int i = 0; i < n; ++i) {
                ClaimAttempt a;
                a.nowMs = QDateTime::currentMSecsSinceEpoch();
                a.requestId = newRequestId(a.nowMs); // as the proxy makes them (util/Ids.h)
                a.accountId = accounts[(done + i) % accounts.size()].id;
                a.slot = ((done + i) / int(accounts.size())) % slotsPerAccount;
                a.expectedEpoch = epochs.value({a.accountId, a.slot}, 0);
                a.route = QStringLiteral("bench");
                a.replica = *me;
                a.startedAtMs = a.nowMs;
                a.leaseMs = 60000;
                auto outcome = std::make_shared<ClaimOutcome>();
                auto timer = std::make_shared<QElapsedTimer>();
                timer->start();
                Sample *sample = &samples[size_t(i)];
                if (inline_ && inFlight == 1) {
                    QString e;
                    Database::StatementScope statements(local);
                    Transaction t(local);
                    bool ok = t.begin(&e);
                    sample->startUs = double(timer->nsecsElapsed()) / 1000.0;
                    if (ok) {
                        *outcome = OwnerSlotRepository(local).claim(a, &e);
                        qint64 stored = 0;
                        ok = outcome->kind == ClaimOutcome::Kind::Claimed &&
                             AccountRepository(local).touchSelectedAfterReading(
                                 a.accountId, outcome->previousSelectedMs, &e, &stored);
                        sample->unitUs = double(timer->nsecsElapsed()) / 1000.0 - sample->startUs;
                        ok = ok && t.commit(&e);
                    }
                    sample->roundTripUs = double(timer->nsecsElapsed()) / 1000.0;
                    sample->afterUs = sample->roundTripUs - sample->startUs - sample->unitUs;
                    if (ok) {
                        held.push_back(outcome->held);
                        epochs[{a.accountId, a.slot}] = outcome->held.epoch;
                    } else {
                        std::fprintf(stderr, "inline claim: %s\n", qPrintable(e));
                    }
                    ++answered;
                    continue;
                }
                store.submitUrgent(
                    [a, outcome, sample, timer](Database &db, QString *e) {
                        sample->startUs = double(timer->nsecsElapsed()) / 1000.0;
                        *outcome = OwnerSlotRepository(db).claim(a, e);
                        // The selection time goes with the claim, in its unit, as in SlotLedger::claim.
                        qint64 stored = 0;
                        if (outcome->kind == ClaimOutcome::Kind::Claimed &&
                            !AccountRepository(db).touchSelectedAfterReading(a.accountId, outcome->previousSelectedMs,
                                                                             e, &stored))
                            return false;
                        sample->unitUs = double(timer->nsecsElapsed()) / 1000.0 - sample->startUs;
                        return outcome->kind != ClaimOutcome::Kind::Error;
                    },
                    &loop,
                    [&, a, outcome, timer, sample](bool ok, const QString &e) {
                        sample->roundTripUs = double(timer->nsecsElapsed()) / 1000.0;
                        sample->afterUs = sample->roundTripUs - sample->startUs - sample->unitUs;
                        if (ok && outcome->kind == ClaimOutcome::Kind::Claimed) {
                            held.push_back(outcome->held);
                            epochs[{a.accountId, a.slot}] = outcome->held.epoch;
                        } else {
                            std::fprintf(stderr, "claim %s: %s\n", qPrintable(a.requestId),
                                         qPrintable(ok ? outcome->reason : e));
                            for (const SlotState &row : outcome->rows)
                                epochs[{row.accountId, row.slot}] = row.epoch;
                        }
                        if (++answered == n) {
                            out->lastOfBurst.push_back(double(burstTimer.nsecsElapsed()) / 1000.0);
                            loop.quit();
                        }
                    });
            }
            if (answered < n)
                loop.exec();
            for (const Sample &s : samples) {
                out->roundTrips.push_back(s.roundTripUs);
                out->starts.push_back(s.startUs);
                out->units.push_back(s.unitUs);
                out->afters.push_back(s.afterUs);
            }
            // Settle what was claimed (not timed), so the next round finds the slots free.
            QString settleError;
            const ReplicaIdentity replica = *me;
            if (!store.runBlocking(
                    [&held, replica](Database &db, QString *e) {
                        OwnerSlotRepository repo(db);
                        for (const HeldSlot &h : held) {
                            // One scope per settlement, as one store job each has in the proxy.
                            Database::StatementScope statements(db);
                            if (!repo.settleTurn(replica, h.requestId, QString(), QDateTime::currentMSecsSinceEpoch(),
                                                 e))
                                return false;
                        }
                        return true;
                    },
                    &settleError)) {
                std::fprintf(stderr, "settle: %s\n", qPrintable(settleError));
                return false;
            }
            if (recheck && inFlight == 1) {
                const QString account = accounts[done % accounts.size()].id;
                QString e;
                const double first = timeRecheck(account, &e);
                const double again = timeRecheck(account, &e);
                if (first < 0 || again < 0) {
                    std::fprintf(stderr, "re-check: %s\n", qPrintable(e));
                    return false;
                }
                out->rechecks.push_back(first);
                out->recheckAgain.push_back(again);
                const double written = timeJournalWrite(newRequestId(QDateTime::currentMSecsSinceEpoch()));
                if (written < 0) {
                    std::fprintf(stderr, "journal write failed\n");
                    return false;
                }
                out->journalWrites.push_back(written);
            }
            if (gapUs > 0)
                QThread::usleep(gapUs);
        }
        return true;
    };
    Series alone, bursts;
    bool ok = run(1, &alone) && run(burst, &bursts);
    store.stop();
    if (journal >= 0) {
        ::close(journal);
        ::unlink(journalPath.constData());
    }
    if (!ok) {
        *error = QStringLiteral("a round failed");
        return false;
    }
    std::printf("claims on %lld accounts, %d one at a time, %d in bursts of %d\n", qlonglong(accounts.size()), count,
                count, burst);
    for (const auto &[label, s] : {std::pair{"alone", &alone}, std::pair{"burst", &bursts}}) {
        const QByteArray l(label);
        print(QByteArray(l + ": submit -> answer").constData(), s->roundTrips);
        print(QByteArray(l + ":   submit -> statements begin").constData(), s->starts);
        print(QByteArray(l + ":   claim statements").constData(), s->units);
        print(QByteArray(l + ":   statements end -> answer").constData(), s->afters);
    }
    print("burst: submit -> last answer", bursts.lastOfBurst);
    if (recheck) {
        print("alone: re-check after the store's writes", alone.rechecks);
        print("alone: the same re-check again", alone.recheckAgain);
        print("alone: a take journal write", alone.journalWrites);
    }
    return true;
}

} // namespace sy::bench
