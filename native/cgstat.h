/* cgstat: read a run's cgroup counter files in one call (edgeprof's sampling hot path).
 *
 * Each file is kept open by the caller; one cg_read() preads every file at offset 0 (the
 * kernel regenerates cgroupfs contents on each read) and parses the wanted values into a
 * caller-owned array of long long.  A value that is absent stays CG_MISSING.
 */
#ifndef EDGEPROF_CGSTAT_H
#define EDGEPROF_CGSTAT_H

#define CG_MISSING (-9223372036854775807LL - 1)  /* LLONG_MIN: "not in the file" */
#define CG_UNLIMITED (-1LL)                     /* the word "max" in a limit file */

enum cg_kind {
    CG_INT = 0,    /* one integer (or "max"): out[slot]                                 */
    CG_KV = 1,     /* "key value" lines: out[slot + i] = value of keys[i]               */
    CG_IOSTAT = 2, /* v2 io.stat: out[slot] = sum rbytes=, out[slot + 1] = sum wbytes=  */
    CG_BLKIO = 3,  /* v1 blkio: out[slot] = sum of "<dev> Read N", out[slot + 1] = Write */
                   /* (both summed over the disks not named in keys[], "MAJ:MIN")       */
    CG_PSI = 4     /* pressure: out[slot] = "some ... total=N", out[slot + 1] = "full" one */
};

typedef struct {
    int fd;
    int kind;
    int nkeys;
    const char *const *keys;
    int slot;
} cg_file;

/* Returns 0, or -errno of the first file that could not be read (the others are still read). */
int cg_read(const cg_file *files, int nfiles, long long *out, int nout);

/* The sampling loop, with no Python in it: sample every interval_ns on an absolute schedule
 * (*due_ns is the next due time, in and out) until stop_fd is readable (*stopped = 1),
 * max_rows rows are stored, or the next sample would be due after until_ns.  Row i holds
 * nout values at rows[i * nout] and its CLOCK_MONOTONIC time (the midpoint of its read) at
 * times[i].  Ticks that could not be kept are skipped and counted in *missed.
 * Returns the number of rows stored, or -errno. */
int cg_sample(const cg_file *files, int nfiles, int nout, long long interval_ns,
              long long *due_ns, long long until_ns, int stop_fd, long long *times,
              long long *rows, int max_rows, long long *missed, int *stopped);

#endif
