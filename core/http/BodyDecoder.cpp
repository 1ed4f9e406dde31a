#include "http/BodyDecoder.h"

#include "http/HttpRequest.h"

#include <QList>
#include <memory>
#include <zlib.h>
#include <zstd.h>

namespace sy {

namespace {

enum class Coding
{
    Identity,
    Gzip,
    Deflate,
    Zstd,
    Unknown
};

Coding codingFor(QByteArrayView token)
{
    if (token.isEmpty() || headerNameEquals(token, "identity"))
        return Coding::Identity;
    if (headerNameEquals(token, "gzip") || headerNameEquals(token, "x-gzip"))
        return Coding::Gzip;
    if (headerNameEquals(token, "deflate"))
        return Coding::Deflate;
    if (headerNameEquals(token, "zstd"))
        return Coding::Zstd;
    return Coding::Unknown;
}

QList<Coding> parseCodings(QByteArrayView headerValue)
{
    QList<Coding> codings;
    const QList<QByteArray> tokens = headerValue.toByteArray().split(',');
    for (const QByteArray &token : tokens) {
        const Coding c = codingFor(token.trimmed());
        if (c != Coding::Identity)
            codings.append(c);
    }
    return codings;
}

BodyDecodeResult failure(BodyDecodeResult::Status status, const QString &detail)
{
    BodyDecodeResult r;
    r.status = status;
    r.detail = detail;
    return r;
}

QString tooLargeDetail(qint64 max)
{
    return QStringLiteral("decoded request body exceeds %1 bytes").arg(max);
}

// windowBits selects the container: 15 + 32 auto-detects zlib or gzip headers, -15 is a raw deflate stream.
BodyDecodeResult inflateWith(const QByteArray &in, qint64 max, int windowBits)
{
    z_stream zs{};
    if (inflateInit2(&zs, windowBits) != Z_OK)
        return failure(BodyDecodeResult::Corrupt, QStringLiteral("zlib initialisation failed"));
    std::unique_ptr<z_stream, int (*)(z_stream *)> guard(&zs, inflateEnd);

    BodyDecodeResult r;
    zs.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(in.constData()));
    zs.avail_in = uInt(in.size());
    char buffer[64 * 1024];
    for (;;) {
        zs.next_out = reinterpret_cast<Bytef *>(buffer);
        zs.avail_out = sizeof buffer;
        const int rc = inflate(&zs, Z_NO_FLUSH);
        r.body.append(buffer, qsizetype(sizeof buffer - zs.avail_out));
        if (r.body.size() > max)
            return failure(BodyDecodeResult::TooLarge, tooLargeDetail(max));
        if (rc == Z_STREAM_END) {
            if (zs.avail_in == 0)
                return r;
            // Concatenated gzip members form one body.
            if (inflateReset(&zs) != Z_OK)
                return failure(BodyDecodeResult::Corrupt, QStringLiteral("zlib reset failed"));
            continue;
        }
        if (rc == Z_BUF_ERROR && zs.avail_in == 0)
            return failure(BodyDecodeResult::Corrupt, QStringLiteral("compressed body is truncated"));
        if (rc != Z_OK)
            return failure(BodyDecodeResult::Corrupt, QStringLiteral("compressed body is corrupt"));
    }
}

BodyDecodeResult inflateDeflate(const QByteArray &in, qint64 max)
{
    // RFC 9110 says "deflate" is zlib-wrapped, but some clients send a raw deflate stream.
    BodyDecodeResult r = inflateWith(in, max, 15);
    if (r.status == BodyDecodeResult::Corrupt)
        r = inflateWith(in, max, -15);
    return r;
}

BodyDecodeResult decompressZstd(const QByteArray &in, qint64 max)
{
    std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx *)> dctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
    if (!dctx)
        return failure(BodyDecodeResult::Corrupt, QStringLiteral("zstd initialisation failed"));

    BodyDecodeResult r;
    QByteArray buffer(qsizetype(ZSTD_DStreamOutSize()), Qt::Uninitialized);
    ZSTD_inBuffer input{in.constData(), size_t(in.size()), 0};
    size_t hint = 0;
    // Frames need not declare their content size, so decode in a loop and keep flushing until the decoder
    // reports a completed frame with nothing left buffered.
    for (;;) {
        ZSTD_outBuffer output{buffer.data(), size_t(buffer.size()), 0};
        const size_t before = input.pos;
        hint = ZSTD_decompressStream(dctx.get(), &output, &input);
        if (ZSTD_isError(hint))
            return failure(BodyDecodeResult::Corrupt,
                           QStringLiteral("zstd body is corrupt: %1").arg(QString::fromUtf8(ZSTD_getErrorName(hint))));
        r.body.append(buffer.constData(), qsizetype(output.pos));
        if (r.body.size() > max)
            return failure(BodyDecodeResult::TooLarge, tooLargeDetail(max));
        const bool inputDone = input.pos == input.size;
        if (inputDone && hint == 0)
            return r;
        if (inputDone && output.pos == 0 && input.pos == before)
            return failure(BodyDecodeResult::Corrupt, QStringLiteral("zstd body is truncated"));
    }
}

} // namespace

bool isSupportedContentEncoding(QByteArrayView headerValue)
{
    const QList<Coding> codings = parseCodings(headerValue);
    for (Coding c : codings) {
        if (c == Coding::Unknown)
            return false;
    }
    return true;
}

BodyDecodeResult decodeContentEncoding(QByteArrayView headerValue, const QByteArray &body, qint64 maxDecodedBytes)
{
    const QList<Coding> codings = parseCodings(headerValue);
    if (!isSupportedContentEncoding(headerValue))
        return failure(BodyDecodeResult::Unsupported,
                       QStringLiteral("unsupported content-encoding '%1'")
                           .arg(QString::fromLatin1(headerValue.toByteArray().left(64))));
    BodyDecodeResult current;
    current.body = body;
    if (body.isEmpty())
        return current;
    // Codings are listed in the order they were applied; undo them in reverse.
    for (qsizetype i = codings.size() - 1; i >= 0; --i) {
        switch (codings.at(i)) {
        case Coding::Gzip:
            current = inflateWith(current.body, maxDecodedBytes, 15 + 32);
            break;
        case Coding::Deflate:
            current = inflateDeflate(current.body, maxDecodedBytes);
            break;
        case Coding::Zstd:
            current = decompressZstd(current.body, maxDecodedBytes);
            break;
        case Coding::Identity:
        case Coding::Unknown:
            break;
        }
        if (current.status != BodyDecodeResult::Ok)
            return current;
    }
    if (current.body.size() > maxDecodedBytes)
        return failure(BodyDecodeResult::TooLarge, tooLargeDetail(maxDecodedBytes));
    return current;
}

} // namespace sy
