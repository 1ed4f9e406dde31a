#pragma once

#include <QJsonObject>
#include <QList>
#include <QString>

namespace sy {

// One fact the health check verified, by a component other than the one that wrote what it checks.
struct HealthCriterion
{
    QString name; // "config", "egress_pool:<name>", "accounts", "account:<alias or id>", "requests", "aggregates"
    bool ok = false;
    QString detail;    // what was found, for people
    QJsonObject facts; // what an outsider needs to recompute it
};

// The health command's answer (DESIGN.md: exit 0 clean, 2 problem found or a fact unavailable, 3
// configuration unavailable or invalid; the last is decided before any criterion runs).
struct HealthReport
{
    QList<HealthCriterion> criteria;

    bool allHold() const;
    // 0 only for a non-empty table whose every criterion holds; a check that checked nothing is not green.
    int exitCode() const;
    // {"exit_code": N, "healthy": bool, "criteria": [{"name", "ok", "detail", "facts"}]}
    QJsonObject toJson() const;
    QString toText() const;
};

} // namespace sy
