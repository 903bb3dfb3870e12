#include "CCRC32C.h"

#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>

int evsync_crc32c_available(void) {
    unsigned int eax, ebx, ecx, edx;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_SSE4_2) != 0;
}

__attribute__((target("sse4.2")))
uint32_t evsync_crc32c_update(uint32_t crc, const void *bytes, size_t count) {
    const unsigned char *p = bytes;
    uint64_t wide = crc;
    for (; count >= 8; p += 8, count -= 8) {
        uint64_t word;
        memcpy(&word, p, 8);   /* unaligned: an event sits anywhere in an LMDB page */
        wide = _mm_crc32_u64(wide, word);
    }
    crc = (uint32_t)wide;
    for (; count > 0; p++, count--) crc = _mm_crc32_u8(crc, *p);
    return crc;
}

#else

int evsync_crc32c_available(void) { return 0; }

uint32_t evsync_crc32c_update(uint32_t crc, const void *bytes, size_t count) {
    (void)bytes;
    (void)count;
    return crc;
}

#endif
