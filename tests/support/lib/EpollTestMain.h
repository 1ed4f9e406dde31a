#pragma once

#include "util/EpollEventDispatcher.h"

#include <QCoreApplication>
#include <QTest>
#include <cstdio>

namespace sy::test {

// main() of a Qt Test executable whose main thread runs on the proxy thread's epoll dispatcher: installed before
// the application exists, so Qt Test's waits, nested loops, sockets and timers all run on it.
template <class Test>
int runOnEpollDispatcher(int argc, char **argv)
{
    QAbstractEventDispatcher *dispatcher = EpollEventDispatcher::create();
    if (!dispatcher) {
        fprintf(stderr, "no epoll on this platform\n");
        return 1;
    }
    QCoreApplication::setEventDispatcher(dispatcher);
    QCoreApplication app(argc, argv);
    Test test;
    return QTest::qExec(&test, argc, argv);
}

} // namespace sy::test
