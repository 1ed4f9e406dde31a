#include "accounts/AuthJsonImportStore.h"

#include "accounts/SecretStore.h"
#include "store/AccountRepository.h"

#include <QFile>

namespace sy {

namespace {

void setError(QString *error, const QString &text)
{
    if (error)
        *error = text;
}

} // namespace

bool readAuthJsonFiles(const QStringList &files, QList<AuthJsonImport> *parsed, QString *error)
{
    QList<AuthJsonImport> out;
    for (const QString &file : files) {
        QFile f(file);
        if (!f.open(QIODevice::ReadOnly)) {
            setError(error, QStringLiteral("%1: cannot read: %2").arg(file, f.errorString()));
            return false;
        }
        QString why;
        AuthJsonImport imp = parseAuthJson(f.readAll(), &why);
        if (!why.isEmpty()) {
            setError(error, QStringLiteral("%1: %2 (nothing was imported)").arg(file, why));
            return false;
        }
        out.append(imp);
    }
    *parsed = out;
    return true;
}

std::optional<ImportedAccount> storeAuthJsonImport(Database &db, SecretStore &secrets, const AuthJsonImport &imp,
                                                   const std::optional<QString> &alias, QString *error)
{
    const QString id = AccountRepository::makeAccountId(imp.chatgptAccountId, imp.userId);
    const SecretOutcome stored = secrets.writeTokensBlocking(id, imp.tokens);
    if (!stored.ok) {
        setError(error, QStringLiteral("tokens not stored: %1").arg(stored.errorText));
        return std::nullopt;
    }
    AccountRepository::Identity identity;
    identity.chatgptAccountId = imp.chatgptAccountId;
    identity.userId = imp.userId;
    identity.email = imp.email;
    identity.plan = imp.plan;
    identity.tokenExpiresAtMs = imp.accessTokenExpiresAtMs;
    identity.lastRefreshMs = imp.lastRefreshMs;
    identity.alias = alias;
    AccountRepository repo(db);
    QString why;
    const auto result = repo.upsert(identity, &why);
    if (!result) {
        if (!repo.find(id))
            secrets.removeTokensBlocking(id); // do not leave an orphaned secret behind
        setError(error, why);
        return std::nullopt;
    }
    return ImportedAccount{result->id, result->created, imp.email, imp.plan};
}

} // namespace sy
