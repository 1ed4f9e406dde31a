// The Codex half of ClientConfigFiles.h: edits ~/.codex/config.toml as text and checks every edit with toml++.
#include "config/ClientConfigFiles.h"

#include <QRegularExpression>
#include <QStringList>
#include <string>
#include <toml++/toml.h>

namespace sy {

namespace {

const QString kProvider = QStringLiteral("switchyard");
// Our root line says where it came from, and the line it replaced is kept in a comment above it, so --undo
// can put it back even after the user edited the rest of the file.
const QString kOurLine = QStringLiteral(
    "model_provider = \"switchyard\" # set by Switchyard; `switchyard client-config codex --undo` restores the "
    "previous value");
const QString kSavedPrefix = QStringLiteral("# switchyard saved: ");

bool isHeader(const QString &line)
{
    return line.trimmed().startsWith(QLatin1Char('['));
}

// "[ model_providers . \"switchyard\" ] # c" -> "model_providers.switchyard"
QString headerName(const QString &line)
{
    QString t = line.trimmed();
    const int close = t.lastIndexOf(QLatin1Char(']'));
    if (close > 0)
        t = t.left(close);
    t.remove(QLatin1Char('[')).remove(QLatin1Char(']')).remove(QLatin1Char('"')).remove(QLatin1Char('\''));
    t.remove(QRegularExpression(QStringLiteral("\\s")));
    return t;
}

bool isOurHeader(const QString &line)
{
    if (!isHeader(line))
        return false;
    const QString name = headerName(line);
    return name == QLatin1String("model_providers.switchyard") ||
           name.startsWith(QLatin1String("model_providers.switchyard."));
}

bool isBlankOrComment(const QString &line)
{
    const QString t = line.trimmed();
    return t.isEmpty() || t.startsWith(QLatin1Char('#'));
}

// Removes our table (and its sub-tables); comments and blank lines right before the next table stay, since
// they belong to it.
void removeOurTables(QStringList &lines)
{
    for (int i = 0; i < lines.size();) {
        if (!isOurHeader(lines.at(i))) {
            ++i;
            continue;
        }
        int end = i + 1;
        while (end < lines.size() && (!isHeader(lines.at(end)) || isOurHeader(lines.at(end))))
            ++end;
        if (end < lines.size()) {
            while (end > i + 1 && isBlankOrComment(lines.at(end - 1)))
                --end;
        }
        lines.erase(lines.begin() + i, lines.begin() + end);
    }
}

int rootEnd(const QStringList &lines)
{
    for (int i = 0; i < lines.size(); ++i) {
        if (isHeader(lines.at(i)))
            return i;
    }
    return int(lines.size());
}

int findRootLine(const QStringList &lines, const QRegularExpression &re)
{
    const int end = rootEnd(lines);
    for (int i = 0; i < end; ++i) {
        if (re.match(lines.at(i)).hasMatch())
            return i;
    }
    return -1;
}

const QRegularExpression &modelProviderLine()
{
    static const QRegularExpression re(QStringLiteral("^\\s*model_provider\\s*="));
    return re;
}

const QRegularExpression &savedLine()
{
    static const QRegularExpression re(QStringLiteral("^") + QRegularExpression::escape(kSavedPrefix));
    return re;
}

void trimTrailingBlankLines(QStringList &lines)
{
    while (!lines.isEmpty() && lines.constLast().trimmed().isEmpty())
        lines.removeLast();
}

QString tomlString(const QString &s)
{
    QString e = s;
    e.replace(QLatin1Char('\\'), QStringLiteral("\\\\")).replace(QLatin1Char('"'), QStringLiteral("\\\""));
    return QLatin1Char('"') + e + QLatin1Char('"');
}

std::optional<toml::table> parse(const QString &text, QString *error)
{
    try {
        const std::string utf8 = text.toStdString();
        return toml::parse(utf8);
    } catch (const toml::parse_error &e) {
        *error = QStringLiteral("line %1, column %2: %3")
                     .arg(e.source().begin.line)
                     .arg(e.source().begin.column)
                     .arg(QString::fromUtf8(e.description().data(), int(e.description().size())));
        return std::nullopt;
    }
}

// The document minus what Switchyard owns: a write or undo must leave this exactly as it was.
toml::table withoutOurKeys(toml::table t)
{
    t.erase("model_provider");
    if (toml::table *providers = t["model_providers"].as_table()) {
        providers->erase("switchyard");
        if (providers->empty())
            t.erase("model_providers");
    }
    return t;
}

QString joined(QStringList lines)
{
    trimTrailingBlankLines(lines);
    return lines.isEmpty() ? QString() : lines.join(QLatin1Char('\n')) + QLatin1Char('\n');
}

// Re-parses the edited text and checks that only our keys differ from the original.
bool verify(const toml::table &before, const QString &after, QString *error, toml::table *parsed)
{
    QString parseError;
    const std::optional<toml::table> t = parse(after, &parseError);
    if (!t) {
        *error = QStringLiteral("after the edit it would not parse (%1)").arg(parseError);
        return false;
    }
    if (withoutOurKeys(*t) != withoutOurKeys(before)) {
        *error = QStringLiteral("the edit would change settings that are not Switchyard's");
        return false;
    }
    *parsed = *t;
    return true;
}

} // namespace

std::optional<QString> codexConfigWithSwitchyard(const QString &text, const QString &baseUrl, QString *error)
{
    QString parseError;
    const std::optional<toml::table> before = parse(text, &parseError);
    if (!before) {
        *error = QStringLiteral("it is not valid TOML (%1)").arg(parseError);
        return std::nullopt;
    }
    QStringList lines = text.isEmpty() ? QStringList() : text.split(QLatin1Char('\n'));
    removeOurTables(lines);

    const int current = findRootLine(lines, modelProviderLine());
    if (current < 0) {
        lines.prepend(kOurLine);
    } else if (lines.at(current).trimmed() != kOurLine) {
        // Keep what it said, so --undo can restore it (one saved line: the latest one that was not ours).
        const QString saved = kSavedPrefix + lines.at(current).trimmed();
        lines[current] = kOurLine;
        const int old = findRootLine(lines, savedLine());
        if (old >= 0)
            lines[old] = saved;
        else
            lines.insert(current, saved);
    }
    trimTrailingBlankLines(lines);
    if (!lines.isEmpty())
        lines << QString();
    lines << QStringLiteral("[model_providers.switchyard]") << QStringLiteral("name = \"Switchyard\"")
          << QStringLiteral("base_url = %1").arg(tomlString(baseUrl + QStringLiteral("/backend-api/codex")))
          << QStringLiteral("wire_api = \"responses\"") << QStringLiteral("env_key = \"SWITCHYARD_API_KEY\"");
    const QString after = joined(lines);

    toml::table parsed;
    if (!verify(*before, after, error, &parsed))
        return std::nullopt;
    const std::string expectedUrl = QString(baseUrl + QStringLiteral("/backend-api/codex")).toStdString();
    if (parsed["model_provider"].value<std::string>() != std::optional<std::string>(kProvider.toStdString()) ||
        parsed["model_providers"]["switchyard"]["base_url"].value<std::string>() != expectedUrl) {
        *error = QStringLiteral("after the edit the file would not select Switchyard");
        return std::nullopt;
    }
    // Unchanged apart from line endings and trailing blank lines: leave the file alone.
    return after == joined(text.split(QLatin1Char('\n'))) ? text : after;
}

std::optional<QString> codexConfigWithoutSwitchyard(const QString &text, QString *error)
{
    QString parseError;
    const std::optional<toml::table> before = parse(text, &parseError);
    if (!before) {
        *error = QStringLiteral("it is not valid TOML (%1)").arg(parseError);
        return std::nullopt;
    }
    QStringList lines = text.isEmpty() ? QStringList() : text.split(QLatin1Char('\n'));
    const QStringList original = lines;
    removeOurTables(lines);
    const int saved = findRootLine(lines, savedLine());
    const int current = findRootLine(lines, modelProviderLine());
    if (current >= 0 && lines.at(current).trimmed() == kOurLine) {
        if (saved >= 0)
            lines[current] = lines.at(saved).mid(kSavedPrefix.size());
        else
            lines.removeAt(current);
    }
    const int savedNow = findRootLine(lines, savedLine());
    if (savedNow >= 0)
        lines.removeAt(savedNow);
    if (lines == original)
        return text;
    const QString after = joined(lines);
    toml::table parsed;
    if (!verify(*before, after, error, &parsed))
        return std::nullopt;
    if (parsed["model_providers"]["switchyard"]) {
        *error = QStringLiteral("the switchyard provider is not in a [model_providers.switchyard] table; remove it by "
                                "hand");
        return std::nullopt;
    }
    return after;
}

} // namespace sy
