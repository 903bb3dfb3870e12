#ifndef EVSYNC_CCRC32C_H
#define EVSYNC_CCRC32C_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32C by the processor's own instruction (SSE 4.2's crc32), which Swift
 * cannot name: eight bytes an instruction, where the tables of CRC32C.swift
 * take about twenty. Every stored event's checksum is computed when it is
 * written and checked when it is read, so this is on every read path. */

/* Nonzero when this processor has the instruction (x86-64 with SSE 4.2). */
int evsync_crc32c_available(void);

/* `crc` (already inverted, as the instruction takes it) updated with `count`
 * bytes; call only when evsync_crc32c_available() said yes. */
uint32_t evsync_crc32c_update(uint32_t crc, const void *bytes, size_t count);

#endif
