#include "http/HttpRequest.h"

namespace sy {

namespace {

char lowerAscii(char c)
{
    return (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c;
}

} // namespace

bool headerNameEquals(QByteArrayView a, QByteArrayView b)
{
    if (a.size() != b.size())
        return false;
    for (qsizetype i = 0; i < a.size(); ++i) {
        if (lowerAscii(a[i]) != lowerAscii(b[i]))
            return false;
    }
    return true;
}

bool headerNameStartsWith(QByteArrayView name, QByteArrayView prefix)
{
    return name.size() >= prefix.size() && headerNameEquals(name.first(prefix.size()), prefix);
}

QByteArray HttpRequest::header(QByteArrayView name) const
{
    for (const HttpHeader &h : headers) {
        if (headerNameEquals(h.first, name))
            return h.second;
    }
    return {};
}

QList<QByteArray> HttpRequest::headerValues(QByteArrayView name) const
{
    QList<QByteArray> values;
    for (const HttpHeader &h : headers) {
        if (headerNameEquals(h.first, name))
            values.append(h.second);
    }
    return values;
}

bool HttpRequest::hasHeader(QByteArrayView name) const
{
    for (const HttpHeader &h : headers) {
        if (headerNameEquals(h.first, name))
            return true;
    }
    return false;
}

bool HttpRequest::isWebSocketUpgrade() const
{
    for (const QByteArray &value : headerValues("upgrade")) {
        for (const QByteArray &token : value.split(',')) {
            if (headerNameEquals(token.trimmed(), "websocket"))
                return true;
        }
    }
    return false;
}

} // namespace sy
