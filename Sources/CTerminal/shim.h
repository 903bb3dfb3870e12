#ifndef EVSYNC_CTERMINAL_SHIM_H
#define EVSYNC_CTERMINAL_SHIM_H
#include <stdio.h>
#include <wchar.h>

/* What the CLI asks of libc about its output that Swift's Glibc module does not offer. */

/* The columns a character takes on a terminal (wchar.h declares wcwidth only
   for X/Open, which the Glibc module is not built for): 0, 1, 2, or -1 when
   not printable. Answers only under a UTF-8 LC_CTYPE. */
int wcwidth(wchar_t c);

static inline int evsync_wcwidth(unsigned int scalar) {
    return wcwidth((wchar_t)scalar);
}

/* Whether writing to standard output has failed (its reader went away):
   `stdout` is a global variable, which Swift 6 will not read. */
static inline int evsync_stdout_failed(void) {
    return ferror(stdout);
}

#endif
