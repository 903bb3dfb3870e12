#ifndef EVSYNC_CBUILDINFO_SHIM_H
#define EVSYNC_CBUILDINFO_SHIM_H

/* The commit the binary was built from, for `evsync --version`. SwiftPM has no
   way to pass a value into Swift code, but the Clang importer reads -Xcc
   definitions: Tools/install builds with -Xcc -DEVSYNC_COMMIT='"<hash>"'.
   Empty in a build without it (swift build, the tests). */
static inline const char *evsync_build_commit(void) {
#ifdef EVSYNC_COMMIT
    return EVSYNC_COMMIT;
#else
    return "";
#endif
}

#endif
