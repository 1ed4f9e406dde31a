// Replays the fuzz corpus through the fuzz targets in the ordinary build: every seed of
// tests/fuzz/corpus/<target>/ and every input of tests/fuzz/regressions/<target>/ (inputs that once crashed a
// target or broke one of its invariants). A target reports a broken invariant by aborting, so a failure shows
// up as a crash of this test with "FUZZ CHECK FAILED [target] ..." and the file name printed just before.
#include "FuzzSupport.h"

#include <QDir>
#include <QFile>
#include <QTest>
#include <cstdio>

using namespace sy::fuzz;

namespace {

using TargetFunction = int (*)(const uint8_t *, size_t);

struct Target
{
    const char *name;
    TargetFunction function;
};

const Target kTargets[] = {
    {"http_request", httpRequest},         {"sse_parser", sseParser}, {"translate_request", translateRequest},
    {"translate_stream", translateStream}, {"auth_json", authJson},   {"config_loader", configLoader},
};

} // namespace

class TstFuzzCorpus : public QObject
{
    Q_OBJECT

private slots:
    void replay_data();
    void replay();
    void everyTargetHasSeeds();
};

void TstFuzzCorpus::replay_data()
{
    QTest::addColumn<int>("target");
    QTest::addColumn<QString>("file");
    for (int i = 0; i < int(std::size(kTargets)); ++i) {
        for (const char *kind : {"corpus", "regressions"}) {
            const QDir dir(
                QStringLiteral(SWITCHYARD_FUZZ_DIR "/%1/%2").arg(QLatin1String(kind), QLatin1String(kTargets[i].name)));
            for (const QString &name : dir.entryList(QDir::Files, QDir::Name)) {
                const QString tag =
                    QStringLiteral("%1/%2/%3").arg(QLatin1String(kind), QLatin1String(kTargets[i].name), name);
                QTest::newRow(qPrintable(tag)) << i << dir.filePath(name);
            }
        }
    }
}

void TstFuzzCorpus::replay()
{
    QFETCH(int, target);
    QFETCH(QString, file);
    QFile f(file);
    QVERIFY2(f.open(QIODevice::ReadOnly), qPrintable(file));
    const QByteArray bytes = f.readAll();
    std::fprintf(stderr, "replaying %s\n", qPrintable(file));
    QCOMPARE(kTargets[target].function(reinterpret_cast<const uint8_t *>(bytes.constData()), size_t(bytes.size())), 0);
}

void TstFuzzCorpus::everyTargetHasSeeds()
{
    for (const Target &t : kTargets) {
        const QDir dir(QStringLiteral(SWITCHYARD_FUZZ_DIR "/corpus/%1").arg(QLatin1String(t.name)));
        QVERIFY2(dir.entryList(QDir::Files).size() >= 3, t.name);
    }
}

QTEST_GUILESS_MAIN(TstFuzzCorpus)
#include "tst_fuzz_corpus.moc"
