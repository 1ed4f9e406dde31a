#include "util/Faults.h"

#ifdef SWITCHYARD_FAULT_INJECTION
#include <QByteArray>
#include <QList>
#include <QtGlobal>

namespace sy {

bool faultActive(const char *name)
{
    static const QList<QByteArray> active = qgetenv("SWITCHYARD_FAULTS").split(',');
    return active.contains(QByteArray(name));
}

} // namespace sy
#endif
