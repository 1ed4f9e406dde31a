#include "accounts/AccountRecord.h"

namespace sy {

QStringList accountStatusNames()
{
    return {QStringLiteral("active"), QStringLiteral("rate_limited"),    QStringLiteral("quota_exceeded"),
            QStringLiteral("paused"), QStringLiteral("reauth_required"), QStringLiteral("deactivated")};
}

bool isAccountStatusName(const QString &name)
{
    return accountStatusNames().contains(name);
}

} // namespace sy
