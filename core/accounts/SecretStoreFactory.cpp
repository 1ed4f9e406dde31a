#include "accounts/SecretStoreFactory.h"

#include "accounts/DatabaseSecretStore.h"
#include "accounts/KeychainSecretStore.h"
#include "config/Config.h"
#include "util/CoreDumps.h"

#include <QLoggingCategory>

namespace sy {

Q_LOGGING_CATEGORY(lcSecrets, "sy.secrets", QtInfoMsg)

SecretStore *makeSecretStore(const Config &config, QString *error)
{
    // From here on the process holds tokens in memory: a crash must not write them into a core file.
    QString hardeningError;
    if (!disableCoreDumps(&hardeningError))
        qCWarning(lcSecrets).noquote() << "core dumps could not be turned off:" << hardeningError;
    if (config.secretBackend == QLatin1String("keychain"))
        return new KeychainSecretStore();
    if (config.secretBackend == QLatin1String("database")) {
        // The key is read again here rather than kept in Config, so it lives only inside the store.
        const std::optional<SecretKey> key = SecretKey::fromFile(config.secretKeyFile, error);
        if (!key)
            return nullptr;
        return new DatabaseSecretStore(config.databaseLocation(), *key);
    }
    if (error)
        *error = QStringLiteral("SWITCHYARD_SECRET_BACKEND is \"%1\"; expected keychain or database")
                     .arg(config.secretBackend);
    return nullptr;
}

} // namespace sy
