// The admission gate's books (Inv7GateAccounting): bounded waiters, every waiter exactly one of queued, holding
// or terminal, and a cancelled waiter gives its place back.
#include "ownership/AdmissionGate.h"

#include <QTest>

using namespace sy;

class tst_AdmissionGate : public QObject
{
    Q_OBJECT

private slots:
    void boundsWaitersInAllAndPerAccount()
    {
        AdmissionGate gate(3, 2);
        QVERIFY(gate.enqueue(QStringLiteral("r1"), QStringLiteral("acc_a")));
        QVERIFY(gate.enqueue(QStringLiteral("r2"), QStringLiteral("acc_a")));
        QVERIFY(!gate.enqueue(QStringLiteral("r3"), QStringLiteral("acc_a"))); // per account
        QVERIFY(gate.enqueue(QStringLiteral("r4"), QString()));
        QVERIFY(!gate.enqueue(QStringLiteral("r5"), QString())); // in all
        QCOMPARE(gate.queued(), 3);
        QCOMPARE(gate.queuedFor(QStringLiteral("acc_a")), 2);
        QCOMPARE(gate.overloaded(), 2);
        QCOMPARE(gate.state(QStringLiteral("r3")), AdmissionGate::State::None);
    }

    void everyWaiterIsQueuedHoldingOrGone()
    {
        AdmissionGate gate(10, 10);
        QVERIFY(gate.enqueue(QStringLiteral("r1"), QString()));
        QCOMPARE(gate.state(QStringLiteral("r1")), AdmissionGate::State::Queued);
        // Queuing again (a waiter that lost a claim race) does not count twice.
        QVERIFY(gate.enqueue(QStringLiteral("r1"), QString()));
        QCOMPARE(gate.queued(), 1);
        gate.hold(QStringLiteral("r1"));
        QCOMPARE(gate.state(QStringLiteral("r1")), AdmissionGate::State::Holding);
        QCOMPARE(gate.queued(), 0);
        gate.finish(QStringLiteral("r1"));
        QCOMPARE(gate.state(QStringLiteral("r1")), AdmissionGate::State::None);
        QCOMPARE(gate.admitted(), 1);
        QCOMPARE(gate.left(), 1);
    }

    void cancelledWaiterFreesItsPlace()
    {
        AdmissionGate gate(1, 1);
        QVERIFY(gate.enqueue(QStringLiteral("r1"), QStringLiteral("acc")));
        QVERIFY(!gate.enqueue(QStringLiteral("r2"), QStringLiteral("acc")));
        gate.finish(QStringLiteral("r1")); // the client went away while waiting
        QCOMPARE(gate.queued(), 0);
        QCOMPARE(gate.queuedFor(QStringLiteral("acc")), 0);
        QVERIFY(gate.enqueue(QStringLiteral("r2"), QStringLiteral("acc")));
        QCOMPARE(gate.admitted(), gate.left() + 1);
    }
};

QTEST_GUILESS_MAIN(tst_AdmissionGate)
#include "tst_admission_gate.moc"
