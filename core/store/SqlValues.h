#pragma once

#include <QString>
#include <QVariant>
#include <optional>

namespace sy::sql {

// Optional values <-> SQL NULL. Unknown stays NULL; it never turns into 0 or "".

inline QVariant nullable(const std::optional<qint64> &v)
{
    return v ? QVariant::fromValue<qint64>(*v) : QVariant();
}

inline QVariant nullable(const std::optional<int> &v)
{
    return v ? QVariant(*v) : QVariant();
}

inline QVariant nullable(const std::optional<double> &v)
{
    return v ? QVariant(*v) : QVariant();
}

inline QVariant nullable(const std::optional<bool> &v)
{
    return v ? QVariant(*v ? 1 : 0) : QVariant();
}

inline QVariant nullable(const std::optional<QString> &v)
{
    return v ? QVariant(*v) : QVariant();
}

// Empty text is stored as NULL.
inline QVariant nullableText(const QString &v)
{
    return v.isEmpty() ? QVariant() : QVariant(v);
}

inline std::optional<qint64> optInt64(const QVariant &v)
{
    return v.isNull() ? std::nullopt : std::optional<qint64>(v.toLongLong());
}

inline std::optional<int> optInt(const QVariant &v)
{
    return v.isNull() ? std::nullopt : std::optional<int>(v.toInt());
}

inline std::optional<double> optDouble(const QVariant &v)
{
    return v.isNull() ? std::nullopt : std::optional<double>(v.toDouble());
}

inline std::optional<bool> optBool(const QVariant &v)
{
    return v.isNull() ? std::nullopt : std::optional<bool>(v.toLongLong() != 0);
}

inline std::optional<QString> optText(const QVariant &v)
{
    return v.isNull() ? std::nullopt : std::optional<QString>(v.toString());
}

} // namespace sy::sql
