// Writing Switchyard into the Codex CLI's config.toml and OpenCode's opencode.json: only our provider (and
// Codex's root model_provider) change, every other line and comment survives, broken files are refused and
// left alone, writes are idempotent and --undo restores what was there.
#include "config/ClientConfigFiles.h"

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

using namespace sy;

namespace {

const QString kBase = QStringLiteral("http://127.0.0.1:2455");

QString codexWrite(const QString &text)
{
    QString error;
    const std::optional<QString> out = codexConfigWithSwitchyard(text, kBase, &error);
    if (!out)
        qWarning("write refused: %s", qPrintable(error));
    return out.value_or(QStringLiteral("<refused>"));
}

QString codexUndo(const QString &text)
{
    QString error;
    const std::optional<QString> out = codexConfigWithoutSwitchyard(text, &error);
    if (!out)
        qWarning("undo refused: %s", qPrintable(error));
    return out.value_or(QStringLiteral("<refused>"));
}

QByteArray readAll(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray("<missing>");
}

void writeFile(const QString &path, const QByteArray &bytes)
{
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(bytes);
}

} // namespace

class TestClientConfigFiles : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;

private slots:
    void codexEmptyFileGetsProviderAndSelection()
    {
        const QString out = codexWrite(QString());
        QVERIFY2(out.startsWith(QStringLiteral("model_provider = \"switchyard\"")), qPrintable(out));
        QVERIFY(out.contains(QStringLiteral("[model_providers.switchyard]\n")));
        QVERIFY(out.contains(QStringLiteral("base_url = \"http://127.0.0.1:2455/backend-api/codex\"\n")));
        QVERIFY(out.contains(QStringLiteral("wire_api = \"responses\"\n")));
        QVERIFY(out.contains(QStringLiteral("env_key = \"SWITCHYARD_API_KEY\"\n")));
        QCOMPARE(codexWrite(out), out);
        QCOMPARE(codexUndo(out), QString());
    }

    void codexKeepsCommentsOtherProvidersAndRestoresTheOldSelection()
    {
        const QString original = QStringLiteral("# my codex settings\n"
                                                "model = \"gpt-5-codex\"  # the default model\n"
                                                "model_provider = \"openai-proxy\"\n"
                                                "approval_policy = \"never\"\n"
                                                "\n"
                                                "[model_providers.openai-proxy]\n"
                                                "name = \"Mine\" # keep me\n"
                                                "base_url = \"https://example.invalid/v1\"\n"
                                                "\n"
                                                "# profiles below\n"
                                                "[profiles.fast]\n"
                                                "model = \"gpt-5\"\n"
                                                "mcp = { command = \"npx\", args = [\"-y\", \"thing\"] }\n");
        const QString written = codexWrite(original);
        QVERIFY2(written != QLatin1String("<refused>"), qPrintable(written));
        // Every original line is still there except the one model_provider line, now saved in a comment.
        for (const QString &line : original.split(QLatin1Char('\n'))) {
            if (line.startsWith(QLatin1String("model_provider")))
                QVERIFY(written.contains(QStringLiteral("# switchyard saved: ") + line + QLatin1Char('\n')));
            else
                QVERIFY2(written.contains(line), qPrintable(line));
        }
        QVERIFY(written.contains(QStringLiteral("\nmodel_provider = \"switchyard\" # set by Switchyard")));
        QCOMPARE(codexWrite(written), written);
        QCOMPARE(codexUndo(written), original);
        QCOMPARE(codexUndo(original), original);
    }

    void codexReplacesAnExistingSwitchyardTableInPlaceOfItsOldOne()
    {
        const QString original = QStringLiteral("model_provider = \"switchyard\"\n"
                                                "[model_providers.\"switchyard\"]\n"
                                                "base_url = \"http://127.0.0.1:9999/backend-api/codex\"\n"
                                                "wire_api = \"chat\"\n"
                                                "[model_providers.switchyard.http_headers]\n"
                                                "x = \"y\"\n"
                                                "\n"
                                                "# the next table's comment\n"
                                                "[tui]\n"
                                                "notifications = true\n");
        const QString written = codexWrite(original);
        QVERIFY2(!written.contains(QLatin1String("9999")), qPrintable(written));
        QVERIFY(!written.contains(QLatin1String("http_headers")));
        QCOMPARE(written.count(QLatin1String("[model_providers.switchyard]")), 1);
        QVERIFY(written.contains(QStringLiteral("# the next table's comment\n[tui]\nnotifications = true\n")));
        QVERIFY(written.contains(QStringLiteral("# switchyard saved: model_provider = \"switchyard\"\n")));
        QCOMPARE(codexWrite(written), written);
    }

    void codexRefusesWhatItCannotEditSafely_data()
    {
        QTest::addColumn<QString>("text");
        QTest::newRow("not toml") << QStringLiteral("model = \"unterminated\n[tui\n");
        QTest::newRow("duplicate key") << QStringLiteral("model = \"a\"\nmodel = \"b\"\n");
        QTest::newRow("inline providers") << QStringLiteral("model_providers = { other = { name = \"x\" } }\n");
        QTest::newRow("dotted switchyard keys")
            << QStringLiteral("model_providers.switchyard.base_url = \"http://x\"\n");
    }

    void codexRefusesWhatItCannotEditSafely()
    {
        QFETCH(QString, text);
        QString error;
        QVERIFY(!codexConfigWithSwitchyard(text, kBase, &error));
        QVERIFY(!error.isEmpty());
    }

    void codexFileWriteBacksUpIsIdempotentAndUndoes()
    {
        const QString path = m_dir.filePath(QStringLiteral("codex/config.toml"));
        QVERIFY(QDir().mkpath(m_dir.filePath(QStringLiteral("codex"))));
        const QByteArray original = "# mine\nmodel = \"o3\"\n";
        writeFile(path, original);
        QFile::setPermissions(path, QFileDevice::ReadOwner | QFileDevice::WriteOwner);

        ClientConfigEdit e = writeCodexConfig(path, kBase);
        QVERIFY2(e.ok && e.changed, qPrintable(e.error));
        QCOMPARE(e.backupPath, path + QStringLiteral(".switchyard-backup"));
        QCOMPARE(readAll(e.backupPath), original);
        // The file may hold secrets (other providers' headers): the rewrite keeps it private.
        QCOMPARE(QFile::permissions(path) & (QFileDevice::ReadGroup | QFileDevice::ReadOther),
                 QFileDevice::Permissions());
        QCOMPARE(QFile::permissions(e.backupPath) & (QFileDevice::ReadGroup | QFileDevice::ReadOther),
                 QFileDevice::Permissions());
        const QByteArray written = readAll(path);
        QVERIFY(written.contains("[model_providers.switchyard]"));

        e = writeCodexConfig(path, kBase);
        QVERIFY(e.ok && !e.changed);
        QCOMPARE(readAll(path), written);

        e = undoCodexConfig(path);
        QVERIFY2(e.ok && e.changed, qPrintable(e.error));
        QCOMPARE(readAll(path), original);
        QCOMPARE(readAll(e.backupPath), written);
        e = undoCodexConfig(path);
        QVERIFY(e.ok && !e.changed);
    }

    void codexBrokenFileIsLeftAlone()
    {
        const QString path = m_dir.filePath(QStringLiteral("broken.toml"));
        const QByteArray broken = "model = [1, 2\n# half written\n";
        writeFile(path, broken);
        const ClientConfigEdit e = writeCodexConfig(path, kBase);
        QVERIFY(!e.ok);
        QVERIFY2(e.error.contains(QLatin1String("not valid TOML")), qPrintable(e.error));
        QCOMPARE(readAll(path), broken);
        QVERIFY(!QFile::exists(path + QStringLiteral(".switchyard-backup")));
    }

    void codexMissingFileIsCreated()
    {
        const QString path = m_dir.filePath(QStringLiteral("fresh/.codex/config.toml"));
        const ClientConfigEdit e = writeCodexConfig(path, kBase);
        QVERIFY2(e.ok && e.changed, qPrintable(e.error));
        QVERIFY(e.backupPath.isEmpty());
        QVERIFY(readAll(path).startsWith("model_provider = \"switchyard\""));
        QCOMPARE(codexConfigPath({{QStringLiteral("HOME"), QStringLiteral("/h")}}),
                 QStringLiteral("/h/.codex/config.toml"));
        QCOMPARE(codexConfigPath({{QStringLiteral("HOME"), QStringLiteral("/h")},
                                  {QStringLiteral("CODEX_HOME"), QStringLiteral("/c")}}),
                 QStringLiteral("/c/config.toml"));
    }

    void openCodeKeepsOtherKeysAndUndoes()
    {
        const QString path = m_dir.filePath(QStringLiteral("opencode/opencode.json"));
        QVERIFY(QDir().mkpath(m_dir.filePath(QStringLiteral("opencode"))));
        const QByteArray original = "{\"theme\": \"dark\", \"model\": \"anthropic/claude\", \"provider\": "
                                    "{\"other\": {\"name\": \"Other\"}}}";
        writeFile(path, original);
        ClientConfigEdit e = writeOpenCodeConfig(path, kBase);
        QVERIFY2(e.ok && e.changed, qPrintable(e.error));
        QCOMPARE(readAll(e.backupPath), original);
        const QJsonObject root = QJsonDocument::fromJson(readAll(path)).object();
        QCOMPARE(root.value(QLatin1String("theme")).toString(), QStringLiteral("dark"));
        QCOMPARE(root.value(QLatin1String("model")).toString(), QStringLiteral("anthropic/claude"));
        const QJsonObject providers = root.value(QLatin1String("provider")).toObject();
        QVERIFY(providers.contains(QLatin1String("other")));
        QCOMPARE(providers.value(QLatin1String("switchyard"))
                     .toObject()
                     .value(QLatin1String("options"))
                     .toObject()
                     .value(QLatin1String("baseURL"))
                     .toString(),
                 QStringLiteral("http://127.0.0.1:2455/v1"));
        const QByteArray written = readAll(path);
        e = writeOpenCodeConfig(path, kBase);
        QVERIFY(e.ok && !e.changed);
        QCOMPARE(readAll(path), written);

        e = undoOpenCodeConfig(path);
        QVERIFY2(e.ok && e.changed, qPrintable(e.error));
        const QJsonObject undone = QJsonDocument::fromJson(readAll(path)).object();
        QVERIFY(!undone.value(QLatin1String("provider")).toObject().contains(QLatin1String("switchyard")));
        QVERIFY(undone.value(QLatin1String("provider")).toObject().contains(QLatin1String("other")));
        QCOMPARE(undone.value(QLatin1String("theme")).toString(), QStringLiteral("dark"));
    }

    void openCodeBrokenFileIsLeftAlone()
    {
        const QString path = m_dir.filePath(QStringLiteral("oc-broken.json"));
        const QByteArray broken = "{\"theme\": \"dark\", // a comment\n}";
        writeFile(path, broken);
        const ClientConfigEdit e = writeOpenCodeConfig(path, kBase);
        QVERIFY(!e.ok);
        QVERIFY2(e.error.contains(QLatin1String("not valid JSON")), qPrintable(e.error));
        QCOMPARE(readAll(path), broken);
    }
};

QTEST_GUILESS_MAIN(TestClientConfigFiles)
#include "tst_client_config_files.moc"
