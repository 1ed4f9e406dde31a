#include "TestSupport.h"

#include <QFile>

namespace sy::test {

QString testDataDir()
{
    return qEnvironmentVariable("SWITCHYARD_TEST_DATA", QStringLiteral(SWITCHYARD_SOURCE_TEST_DATA));
}

QByteArray readTestData(const QString &relativePath)
{
    QFile f(testDataDir() + QLatin1Char('/') + relativePath);
    if (!f.open(QIODevice::ReadOnly))
        qFatal("cannot read test data %s", qPrintable(f.fileName()));
    return f.readAll();
}

} // namespace sy::test
