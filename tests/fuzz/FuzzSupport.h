#pragma once

// Shared by the libFuzzer targets and by tst_fuzz_corpus, which replays the corpus through the same functions
// in the ordinary build. Each target is one function; its LLVMFuzzerTestOneInput exists only in the fuzz build.
#include <QByteArray>
#include <QByteArrayView>
#include <QList>
#include <cstddef>
#include <cstdint>

namespace sy::fuzz {

// A broken invariant: prints what and where, then aborts, which libFuzzer and QTest both report as a crash
// with the input that caused it.
[[noreturn]] void checkFailed(const char *target, const char *what, const char *file, int line);

#define SY_FUZZ_CHECK(target, cond, what)                                                                              \
    do {                                                                                                               \
        if (!(cond))                                                                                                   \
            ::sy::fuzz::checkFailed(target, what, __FILE__, __LINE__);                                                 \
    } while (false)

// Some targets take a control byte first: it picks where the rest is split into chunks, so the fuzzer explores
// chunk boundaries as well as content. 0 means one chunk; otherwise chunk sizes come from a tiny generator
// seeded by the byte (lengths 1..8 for seeds below 64, 1..256 below 192, 1..4096 above).
// After maxChunks chunks the rest is one chunk (bounds the cost of one run where every chunk is expensive).
QList<QByteArrayView> splitByControlByte(quint8 control, QByteArrayView bytes, qsizetype maxChunks = -1);

// Creates the QCoreApplication once (targets that need an event loop), unless one exists (tst_fuzz_corpus).
void ensureCoreApplication();

int httpRequest(const uint8_t *data, size_t size);
int sseParser(const uint8_t *data, size_t size);
int translateRequest(const uint8_t *data, size_t size);
int translateStream(const uint8_t *data, size_t size);
int authJson(const uint8_t *data, size_t size);
int configLoader(const uint8_t *data, size_t size);

} // namespace sy::fuzz

// One libFuzzer entry point per executable, forwarding to the target function.
#ifdef SWITCHYARD_FUZZ_ENTRY
#define SY_FUZZ_ENTRY(function)                                                                                        \
    extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)                                            \
    {                                                                                                                  \
        return ::sy::fuzz::function(data, size);                                                                       \
    }
#else
#define SY_FUZZ_ENTRY(function)
#endif
