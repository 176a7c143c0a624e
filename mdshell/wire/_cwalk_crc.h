/* CRC-32C (the CPU's instruction where it has one, else tables) and big-endian reads.
 *
 * Part of _cwalk.c (one compilation unit: it includes the parts in order, each
 * using what the parts before it define). */

/* ------------------------------------------------------------------ CRC-32C */

/* Slicing-by-8 tables of the reflected Castagnoli polynomial, made at import. */
static uint32_t crc_table[8][256];

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xFF];
}

/* CRC-32C of p[0:n] from the tables: the portable reference (crc32c_portable, for tests). */
static uint32_t crc32c_tables(const uint8_t *p, Py_ssize_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    while (n >= 8) {
        /* bytes taken one by one: no alignment or byte-order assumption */
        uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                           (uint32_t)p[3] << 24);
        c = crc_table[7][lo & 0xFF] ^ crc_table[6][(lo >> 8) & 0xFF] ^
            crc_table[5][(lo >> 16) & 0xFF] ^ crc_table[4][lo >> 24] ^
            crc_table[3][p[4]] ^ crc_table[2][p[5]] ^ crc_table[1][p[6]] ^ crc_table[0][p[7]];
        p += 8;
        n -= 8;
    }
    while (n-- > 0)
        c = crc_table[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#include <string.h>
/* The same with SSE 4.2's crc32 instruction (8 bytes a step), where the CPU has it. */
__attribute__((target("sse4.2")))
static uint32_t crc32c_sse42(const uint8_t *p, Py_ssize_t n)
{
    uint64_t c = 0xFFFFFFFFu;
    while (n >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);  /* no alignment assumption; x86 is little-endian */
        c = _mm_crc32_u64(c, word);
        p += 8;
        n -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (n-- > 0)
        c32 = _mm_crc32_u8(c32, *p++);
    return c32 ^ 0xFFFFFFFFu;
}
#define HAVE_SSE42_CRC 1
#endif

static int crc_hardware = 0;  /* set at import: the CPU has the instruction */

/* CRC-32C of p[0:n] (Kafka's batch checksum): the instruction where there is one. */
static uint32_t crc32c(const uint8_t *p, Py_ssize_t n)
{
#ifdef HAVE_SSE42_CRC
    if (crc_hardware)
        return crc32c_sse42(p, n);
#endif
    return crc32c_tables(p, n);
}

/* ------------------------------------------------------------------ big-endian reads */

static inline int64_t be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return (int64_t)v;
}

static inline int32_t be32(const uint8_t *p)
{
    return (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]);
}

static inline int16_t be16(const uint8_t *p)
{
    return (int16_t)((uint16_t)p[0] << 8 | p[1]);
}
