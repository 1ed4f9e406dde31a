#include "upstream/HttpResponseParser.h"

#include <http_parser.h>

namespace sy {

struct HttpResponseParserCallbacks
{
    static HttpResponseParser &self(http_parser *p) { return *static_cast<HttpResponseParser *>(p->data); }

    static int onMessageBegin(http_parser *p)
    {
        HttpResponseParser &r = self(p);
        r.m_headers.clear();
        r.m_field.clear();
        r.m_value.clear();
        r.m_lastWasValue = false;
        r.m_status = -1;
        r.m_headComplete = false;
        return 0;
    }

    static int onHeaderField(http_parser *p, const char *at, size_t length)
    {
        HttpResponseParser &r = self(p);
        if (r.m_lastWasValue)
            r.commitHeader();
        r.m_lastWasValue = false;
        r.m_field.append(at, qsizetype(length));
        return 0;
    }

    static int onHeaderValue(http_parser *p, const char *at, size_t length)
    {
        HttpResponseParser &r = self(p);
        r.m_lastWasValue = true;
        r.m_value.append(at, qsizetype(length));
        return 0;
    }

    static int onHeadersComplete(http_parser *p)
    {
        HttpResponseParser &r = self(p);
        if (r.m_lastWasValue || !r.m_field.isEmpty())
            r.commitHeader();
        r.m_status = int(p->status_code);
        if (r.m_status == 101) {
            // Nothing here asks for an upgrade, so the bytes that follow would be in an unknown protocol.
            r.m_error = QStringLiteral("the upstream switched protocols unasked");
            return -1;
        }
        if (r.m_status >= 200)
            r.m_headComplete = true;
        // 1 = this response has no body.
        return r.m_headRequest && r.m_status >= 200 ? 1 : 0;
    }

    static int onBody(http_parser *p, const char *at, size_t length)
    {
        HttpResponseParser &r = self(p);
        if (r.m_bodyConsumer)
            r.m_bodyConsumer(QByteArrayView(at, qsizetype(length)));
        else
            r.m_body.append(at, qsizetype(length));
        return 0;
    }

    static int onMessageComplete(http_parser *p)
    {
        HttpResponseParser &r = self(p);
        // An interim 1xx response (100 Continue, 103 Early Hints) precedes the real one.
        if (!r.m_headComplete)
            return 0;
        r.m_complete = true;
        r.m_keepAlive = http_should_keep_alive(p) != 0;
        // Stop at the end of this response: whatever follows is not ours to read.
        http_parser_pause(p, 1);
        return 0;
    }

    static const http_parser_settings &settings()
    {
        static const http_parser_settings s = [] {
            http_parser_settings out;
            http_parser_settings_init(&out);
            out.on_message_begin = &onMessageBegin;
            out.on_header_field = &onHeaderField;
            out.on_header_value = &onHeaderValue;
            out.on_headers_complete = &onHeadersComplete;
            out.on_body = &onBody;
            out.on_message_complete = &onMessageComplete;
            return out;
        }();
        return s;
    }
};

HttpResponseParser::HttpResponseParser(bool headRequest) : m_parser(new http_parser), m_headRequest(headRequest)
{
    http_parser_init(m_parser.get(), HTTP_RESPONSE);
    // Transfer-Encoding wins over a stray Content-Length (RFC 9112 6.3) instead of failing the response.
    m_parser->allow_chunked_length = 1;
    m_parser->data = this;
}

HttpResponseParser::~HttpResponseParser() = default;

void HttpResponseParser::commitHeader()
{
    if (!m_field.isEmpty())
        m_headers.append({m_field, m_value.trimmed()});
    m_field.clear();
    m_value.clear();
}

qsizetype HttpResponseParser::feed(const char *data, qsizetype size)
{
    if (m_complete || hasError() || size <= 0)
        return 0;
    const size_t used = http_parser_execute(m_parser.get(), &HttpResponseParserCallbacks::settings(), data,
                                            size_t(size));
    const http_errno error = HTTP_PARSER_ERRNO(m_parser.get());
    if (error != HPE_OK && error != HPE_PAUSED && m_error.isEmpty())
        m_error = QStringLiteral("malformed response from the upstream: %1")
                      .arg(QString::fromLatin1(http_errno_description(error)));
    return qsizetype(used);
}

void HttpResponseParser::feedEof()
{
    if (m_complete || hasError())
        return;
    // A close-delimited body ends here; any other unfinished state is a cut-off response.
    http_parser_execute(m_parser.get(), &HttpResponseParserCallbacks::settings(), nullptr, 0);
    if (m_complete)
        return;
    m_error = m_headComplete ? QStringLiteral("the upstream closed the connection before the response ended")
                             : QStringLiteral("the upstream closed the connection before the response head");
}

} // namespace sy
