// The Simplified Chinese catalogue is complete: every source text of the English catalogue is translated,
// no entry is unfinished or empty, none is the English text copied over (except where the text is only
// product names, placeholders and punctuation), and every placeholder survives translation.
#include "TestSupport.h"

#include <QFile>
#include <QRegularExpression>
#include <QSet>
#include <QTest>
#include <QXmlStreamReader>

namespace {

struct Entry
{
    QString context;
    QString source;
    QStringList translations; // one per numerus form, or one
    QString type;             // "unfinished", "vanished", "obsolete" or empty
    bool numerus = false;
};

QList<Entry> readTs(const QString &path, QString *error)
{
    QList<Entry> entries;
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        *error = path + QStringLiteral(": ") + f.errorString();
        return entries;
    }
    QXmlStreamReader xml(&f);
    QString context;
    Entry current;
    bool inNumerus = false;
    while (!xml.atEnd()) {
        xml.readNext();
        if (xml.isStartElement()) {
            const auto name = xml.name();
            if (name == QLatin1String("name")) {
                context = xml.readElementText();
            } else if (name == QLatin1String("message")) {
                current = Entry{
                    context, {}, {}, {}, xml.attributes().value(QLatin1String("numerus")) == QLatin1String("yes")};
            } else if (name == QLatin1String("source")) {
                current.source = xml.readElementText();
            } else if (name == QLatin1String("translation")) {
                current.type = xml.attributes().value(QLatin1String("type")).toString();
                if (current.numerus) {
                    inNumerus = true; // the forms follow; the entry ends with </translation>
                } else {
                    current.translations << xml.readElementText();
                    entries << current;
                }
            } else if (name == QLatin1String("numerusform") && inNumerus) {
                current.translations << xml.readElementText();
            }
        } else if (xml.isEndElement() && xml.name() == QLatin1String("translation") && inNumerus) {
            inNumerus = false;
            entries << current;
        }
    }
    if (xml.hasError())
        *error = path + QStringLiteral(": ") + xml.errorString();
    return entries;
}

// What is left of a text once product names, placeholders, digits, punctuation and spaces are removed: when
// nothing is, the text is the same in every language and may stay as it is.
QString translatableRest(QString text)
{
    for (const char *name : {"Switchyard", "Codex CLI", "OpenCode", "auth.json"})
        text.remove(QLatin1String(name));
    text.remove(QRegularExpression(QStringLiteral("%(\\d+|n|p)")));
    text.remove(QRegularExpression(QStringLiteral("[\\d\\s\\p{P}\\p{S}]")));
    return text;
}

QSet<QString> placeholders(const QString &text)
{
    QSet<QString> out;
    auto it = QRegularExpression(QStringLiteral("%(\\d+|n|p)")).globalMatch(text);
    while (it.hasNext())
        out.insert(it.next().captured(0));
    return out;
}

QString tsPath(const char *language)
{
    return sy::test::testDataDir() +
           QStringLiteral("/../../translations/switchyard_%1.ts").arg(QLatin1String(language));
}

} // namespace

class TestTranslations : public QObject
{
    Q_OBJECT
private slots:
    void chineseIsComplete()
    {
        QString error;
        const QList<Entry> zh = readTs(tsPath("zh_CN"), &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const QList<Entry> en = readTs(tsPath("en"), &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QVERIFY(zh.size() > 100);

        QSet<QString> translated;
        QStringList problems;
        for (const Entry &e : zh) {
            const QString where = e.context + QStringLiteral(" / \"") + e.source + QLatin1Char('"');
            translated.insert(e.context + QLatin1Char('\x1f') + e.source);
            if (!e.type.isEmpty())
                problems << where + QStringLiteral(": ") + e.type;
            if (e.translations.isEmpty())
                problems << where + QStringLiteral(": no translation");
            for (const QString &t : e.translations) {
                if (t.trimmed().isEmpty())
                    problems << where + QStringLiteral(": empty");
                else if (t == e.source && !translatableRest(e.source).isEmpty())
                    problems << where + QStringLiteral(": identical to the English text");
                if (placeholders(t) != placeholders(e.source))
                    problems << where + QStringLiteral(": placeholders differ in \"%1\"").arg(t);
            }
        }
        for (const Entry &e : en) {
            if (!translated.contains(e.context + QLatin1Char('\x1f') + e.source))
                problems << e.context + QStringLiteral(" / \"") + e.source + QStringLiteral("\": missing in zh_CN");
        }
        QVERIFY2(problems.isEmpty(), qPrintable(problems.join(QLatin1Char('\n'))));
    }

    // The checker itself must catch what it is there to catch.
    void allowListIsNarrow()
    {
        QVERIFY(translatableRest(QStringLiteral("Switchyard — %1")).isEmpty());
        QVERIFY(translatableRest(QStringLiteral("%1 (%2)")).isEmpty());
        QVERIFY(!translatableRest(QStringLiteral("Open dashboard")).isEmpty());
        QVERIFY(!translatableRest(QStringLiteral("%1 ms")).isEmpty());
        QCOMPARE(placeholders(QStringLiteral("%1 of %2, %n")), QSet<QString>({"%1", "%2", "%n"}));
    }
};

QTEST_MAIN(TestTranslations)
#include "tst_translations.moc"
