#pragma once

#include <QByteArray>
#include <QString>

namespace sy::test {

// Directory with the repository's test data (tests/data), from SWITCHYARD_TEST_DATA.
QString testDataDir();
QByteArray readTestData(const QString &relativePath);

} // namespace sy::test
