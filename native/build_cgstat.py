"""cffi out-of-line API-mode build of the cgstat helper (run by setup.py's cffi_modules)."""

from cffi import FFI

# setuptools wants paths relative to the project root (where setup.py runs).
HERE = "native"

ffibuilder = FFI()
ffibuilder.cdef(
    """
    #define CG_INT ...
    #define CG_KV ...
    #define CG_IOSTAT ...
    #define CG_BLKIO ...
    typedef struct {
        int fd;
        int kind;
        int nkeys;
        const char *const *keys;
        int slot;
    } cg_file;
    int cg_read(const cg_file *files, int nfiles, long long *out, int nout);
    int cg_sample(const cg_file *files, int nfiles, int nout, long long interval_ns,
                  long long *due_ns, long long until_ns, int stop_fd, long long *times,
                  long long *rows, int max_rows, long long *missed, int *stopped);
    """
)
ffibuilder.set_source(
    "edgeprof.backends._cgstat",
    '#include "cgstat.h"',
    sources=[f"{HERE}/cgstat.c"],
    include_dirs=[HERE],
    extra_compile_args=["-O2", "-std=c99", "-Wall"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
