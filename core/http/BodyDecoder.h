#pragma once

#include <QByteArray>
#include <QByteArrayView>
#include <QString>

namespace sy {

// Removes a request's Content-Encoding (zstd, gzip, x-gzip, deflate, identity; a comma-separated list is
// undone last-applied first) while bounding the decoded size, so a small compressed body cannot expand
// into unbounded memory.
struct BodyDecodeResult
{
    enum Status
    {
        Ok,
        Unsupported,
        TooLarge,
        Corrupt
    };
    Status status = Ok;
    QByteArray body;
    QString detail; // human-readable reason when status != Ok (never contains body bytes)
};

// True when every coding listed in the Content-Encoding header value is one we can undo.
bool isSupportedContentEncoding(QByteArrayView headerValue);

BodyDecodeResult decodeContentEncoding(QByteArrayView headerValue, const QByteArray &body, qint64 maxDecodedBytes);

} // namespace sy
