/* LD_PRELOAD fault shim: node-level I/O and syscall faults for the pods of one virtual node.
 *
 * Loaded into every pod process (after the bind shim). It does nothing until the pod's rules
 * channel holds rules. The channel is a read-only memfd ("sregym-faults") the node agent hands
 * to a container's main process at start (never to `kubectl exec` processes) and writes only the
 * rules that apply to that pod into; nothing names it in the environment or the filesystem. The
 * shim finds it among its inherited descriptors, maps it, keeps it open across the process's own
 * close()/close_range()/closefrom() so children inherit it, and marks the process non-dumpable,
 * so another process of the pod (a `kubectl exec` shell, same uid, no CAP_SYS_PTRACE) can read
 * neither its descriptors, nor its memory, nor its environment.
 *
 * Channel layout: a uint64 generation (odd while the writer is mid-update, a seqlock), a uint32
 * length at offset 8, the rules text from offset 16. The generation is checked on every call (one
 * load), so the cluster arms and disarms running processes without restarting them. One rule per
 * line, space-separated key=value:
 *
 *   pods=*|ip,ip   calls=read,write,fsync,open,connect   errno=5   rate=0.3   prefix=/a:/b
 *   mode=random|badblocks   block=8192   frac=0.05   seed=7   port=5432   delay_us=0
 *
 * A rule applies to a call when the process's pod IP ($SREGYM_POD_IP) is listed (or pods=*), the
 * call is listed, and the file's path starts with one of the prefixes (for connect: the port
 * matches, 0 = any). mode=random fails a matching call with probability `rate`; mode=badblocks
 * fails every read whose byte range covers a "bad" block, a deterministic function of the file's
 * inode, the block number and the seed (fraction `frac` of the blocks), like a dm-dust map.
 *
 * calls=clock with offset_ms=N shifts the wall clock the process reads (clock_gettime for
 * CLOCK_REALTIME and CLOCK_REALTIME_COARSE, gettimeofday, time) by N ms: a node whose clock drifted.
 * Monotonic clocks are untouched, as a stepped system clock leaves CLOCK_MONOTONIC alone.
 *
 * Entry points covered beyond read/write (see fault-fidelity.md §4): the _FORTIFY_SOURCE __*_chk
 * variants, stdio (fread/fwrite and their _unlocked forms, whose internal __read cannot be
 * interposed), copy_file_range and sendfile. Env values are copied at load time: PostgreSQL and
 * Redis overwrite environ for their process titles. Not covered: static binaries, mmap, io_uring. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#undef fread_unlocked   /* stdio.h may define these as macros under optimisation */
#undef fwrite_unlocked

#define C_READ 1
#define C_WRITE 2
#define C_FSYNC 4
#define C_OPEN 8
#define C_CONNECT 16
#define C_CLOCK 32
#define MAX_RULES 16
#define MAX_PREFIXES 4

struct rule {
    int calls, err, badblocks, port;
    double rate, frac;
    long block, delay_us, offset_ms;
    uint64_t seed;
    int npfx;
    char pfx[MAX_PREFIXES][512];
};
struct ruleset { int n; struct rule r[MAX_RULES]; };

#define CHANNEL_NAME "/memfd:sregym-faults"
#define CHANNEL_SIZE 16384
#define CHANNEL_TEXT 16

static char *pod_ip;
static int channel_fd = -1;
static const volatile unsigned char *channel;  /* the mapped memfd, or NULL */
static struct ruleset *volatile current;   /* swapped whole; old sets are leaked (rare, tiny) */
static uint64_t seen_gen;
static pthread_mutex_t reload_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread uint64_t rng;

static ssize_t (*r_read)(int, void *, size_t);
static ssize_t (*r_pread)(int, void *, size_t, off_t);
static ssize_t (*r_readv)(int, const struct iovec *, int);
static ssize_t (*r_preadv)(int, const struct iovec *, int, off_t);
static ssize_t (*r_write)(int, const void *, size_t);
static ssize_t (*r_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*r_writev)(int, const struct iovec *, int);
static ssize_t (*r_pwritev)(int, const struct iovec *, int, off_t);
static size_t (*r_fread)(void *, size_t, size_t, FILE *);
static size_t (*r_fread_unlocked)(void *, size_t, size_t, FILE *);
static size_t (*r_fwrite)(const void *, size_t, size_t, FILE *);
static size_t (*r_fwrite_unlocked)(const void *, size_t, size_t, FILE *);
static int (*r_fsync)(int);
static int (*r_fdatasync)(int);
static int (*r_openat)(int, const char *, int, ...);
static FILE *(*r_fopen)(const char *, const char *);
static int (*r_connect)(int, const struct sockaddr *, socklen_t);
static ssize_t (*r_cfr)(int, off_t *, int, off_t *, size_t, unsigned int);
static ssize_t (*r_sendfile)(int, int, off_t *, size_t);
static int ready;

static void resolve(void) {
    if (ready) return;
    r_read = dlsym(RTLD_NEXT, "read"); r_pread = dlsym(RTLD_NEXT, "pread64");
    r_readv = dlsym(RTLD_NEXT, "readv"); r_preadv = dlsym(RTLD_NEXT, "preadv64");
    r_write = dlsym(RTLD_NEXT, "write"); r_pwrite = dlsym(RTLD_NEXT, "pwrite64");
    r_writev = dlsym(RTLD_NEXT, "writev"); r_pwritev = dlsym(RTLD_NEXT, "pwritev64");
    r_fread = dlsym(RTLD_NEXT, "fread"); r_fread_unlocked = dlsym(RTLD_NEXT, "fread_unlocked");
    r_fwrite = dlsym(RTLD_NEXT, "fwrite"); r_fwrite_unlocked = dlsym(RTLD_NEXT, "fwrite_unlocked");
    r_fsync = dlsym(RTLD_NEXT, "fsync"); r_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
    r_openat = dlsym(RTLD_NEXT, "openat64"); r_fopen = dlsym(RTLD_NEXT, "fopen64");
    r_connect = dlsym(RTLD_NEXT, "connect");
    r_cfr = dlsym(RTLD_NEXT, "copy_file_range"); r_sendfile = dlsym(RTLD_NEXT, "sendfile64");
    /* after the real functions are known: strdup may enter malloc, which may read (jemalloc) */
    const char *s = getenv("SREGYM_POD_IP");
    pod_ip = strdup(s ? s : "");
    ready = 1;
}

static __thread int busy;                  /* no faults inside the shim's own calls */

/* The rules channel among the inherited descriptors (only a pod's own processes have one). */
static void find_channel(void) {
    DIR *dir = opendir("/proc/self/fd");
    if (!dir) return;
    int skip = dirfd(dir);
    struct dirent *entry;
    char link[64], target[128];
    while ((entry = readdir(dir)) != NULL) {
        if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
        int fd = atoi(entry->d_name);
        if (fd == skip) continue;
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n <= 0) continue;
        target[n] = 0;
        if (strncmp(target, CHANNEL_NAME, strlen(CHANNEL_NAME)) != 0) continue;
        void *map = mmap(NULL, CHANNEL_SIZE, PROT_READ, MAP_SHARED, fd, 0);
        if (map == MAP_FAILED) continue;
        channel_fd = fd;
        channel = map;
        break;
    }
    closedir(dir);
}

__attribute__((constructor)) static void sregym_fault_init(void) {
    resolve();
    /* every process that loads the shim, armed or not, so that being targeted shows nowhere */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    busy = 1;
    find_channel();
    busy = 0;
}

static int (*r_clock_gettime)(clockid_t, struct timespec *);

static int real_clock(clockid_t id, struct timespec *ts) {
    if (!r_clock_gettime) r_clock_gettime = dlsym(RTLD_NEXT, "clock_gettime");
    return r_clock_gettime(id, ts);
}

static int listed(const char *list, const char *item) {   /* comma-separated membership */
    size_t len = strlen(item);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == len && strncmp(p, item, n) == 0) return 1;
        if (!end) break;
        p = end + 1;
    }
    return 0;
}

static int parse_rule(char *line, struct rule *r) {
    memset(r, 0, sizeof *r);
    r->err = EIO; r->rate = 1.0; r->block = 8192;
    int for_me = 0;
    char *save = NULL;
    for (char *tok = strtok_r(line, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) continue;
        *eq = 0;
        const char *k = tok, *v = eq + 1;
        if (!strcmp(k, "pods")) for_me = !strcmp(v, "*") || (*pod_ip && listed(v, pod_ip));
        else if (!strcmp(k, "calls")) {
            r->calls = (listed(v, "read") ? C_READ : 0) | (listed(v, "write") ? C_WRITE : 0)
                     | (listed(v, "fsync") ? C_FSYNC : 0) | (listed(v, "open") ? C_OPEN : 0)
                     | (listed(v, "connect") ? C_CONNECT : 0) | (listed(v, "clock") ? C_CLOCK : 0);
        } else if (!strcmp(k, "errno")) r->err = atoi(v);
        else if (!strcmp(k, "rate")) r->rate = atof(v);
        else if (!strcmp(k, "frac")) r->frac = atof(v);
        else if (!strcmp(k, "block")) r->block = atol(v) > 0 ? atol(v) : 8192;
        else if (!strcmp(k, "seed")) r->seed = strtoull(v, NULL, 10);
        else if (!strcmp(k, "port")) r->port = atoi(v);
        else if (!strcmp(k, "delay_us")) r->delay_us = atol(v);
        else if (!strcmp(k, "offset_ms")) r->offset_ms = atol(v);
        else if (!strcmp(k, "mode")) r->badblocks = !strcmp(v, "badblocks");
        else if (!strcmp(k, "prefix")) {
            char *copy = strdup(v), *s2 = NULL;
            for (char *p = strtok_r(copy, ":", &s2); p && r->npfx < MAX_PREFIXES; p = strtok_r(NULL, ":", &s2))
                snprintf(r->pfx[r->npfx++], sizeof r->pfx[0], "%s", p);
            free(copy);
        }
    }
    return for_me && r->calls && r->err > 0;
}

/* Copy the channel's text under its seqlock; 0 when the writer was mid-update (try again later). */
static int snapshot(char *buf, size_t size, uint64_t *gen) {
    uint64_t before = __atomic_load_n((const uint64_t *)channel, __ATOMIC_ACQUIRE);
    if (before & 1) return 0;
    uint32_t len = *(const volatile uint32_t *)(channel + 8);
    if (len > CHANNEL_SIZE - CHANNEL_TEXT || len >= size) len = 0;
    for (uint32_t i = 0; i < len; i++) buf[i] = (char)channel[CHANNEL_TEXT + i];
    buf[len] = 0;
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n((const uint64_t *)channel, __ATOMIC_RELAXED) != before) return 0;
    *gen = before;
    return 1;
}

static void reload(void) {
    static char buf[CHANNEL_SIZE];
    uint64_t gen;
    if (!snapshot(buf, sizeof buf, &gen)) return;
    struct ruleset *set = calloc(1, sizeof *set);
    if (!set) return;
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line && set->n < MAX_RULES; line = strtok_r(NULL, "\n", &save))
        if (line[0] != '#' && parse_rule(line, &set->r[set->n])) set->n++;
    seen_gen = gen;
    current = set->n ? set : NULL;
    if (!set->n) free(set);
}

/* The rules in force, or NULL (the fast path: one load of the channel's generation per call). */
static struct ruleset *rules(void) {
    resolve();   /* other libraries' constructors may call in before ours has run */
    if (!channel || busy) return NULL;
    if (__atomic_load_n((const uint64_t *)channel, __ATOMIC_ACQUIRE) != seen_gen
            && pthread_mutex_trylock(&reload_lock) == 0) {
        busy = 1;
        reload();
        busy = 0;
        pthread_mutex_unlock(&reload_lock);
    }
    return current;
}

/* ---- the channel stays open for the process's children, whatever the process closes ---- */

static int (*r_close)(int);
static int (*r_close_range)(unsigned int, unsigned int, int);
static void (*r_closefrom)(int);

int close(int fd) {
    if (!r_close) r_close = dlsym(RTLD_NEXT, "close");
    if (channel_fd >= 0 && fd == channel_fd) return 0;
    return r_close(fd);
}

int close_range(unsigned int first, unsigned int last, int flags) {
    if (!r_close_range) r_close_range = dlsym(RTLD_NEXT, "close_range");
    if (!r_close_range) { errno = ENOSYS; return -1; }
    unsigned int keep = (unsigned int)channel_fd;
    if (channel_fd < 0 || keep < first || keep > last) return r_close_range(first, last, flags);
    int rc = 0;
    if (keep > first) rc = r_close_range(first, keep - 1, flags);
    if (rc == 0 && keep < last) rc = r_close_range(keep + 1, last, flags);
    return rc;
}

void closefrom(int low) {
    if (channel_fd >= 0 && channel_fd >= low && close_range((unsigned int)low, ~0U, 0) == 0) return;
    if (!r_closefrom) r_closefrom = dlsym(RTLD_NEXT, "closefrom");
    if (r_closefrom) r_closefrom(low);
}

static double rnd(void) {
    if (!rng) rng = ((uint64_t)getpid() * 2654435761u) ^ (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)&rng;
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (rng >> 11) * (1.0 / 9007199254740992.0);
}

static int under(const struct rule *r, const char *path) {
    if (!r->npfx) return 1;
    for (int i = 0; i < r->npfx; i++) {
        size_t n = strlen(r->pfx[i]);
        if (strncmp(path, r->pfx[i], n) == 0 && (path[n] == 0 || path[n] == '/' || r->pfx[i][n - 1] == '/')) return 1;
    }
    return 0;
}

static int fd_path(int fd, char *out, size_t size) {
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, out, size - 1);
    if (n <= 0) return 0;
    out[n] = 0;
    return out[0] == '/';
}

static uint64_t mix(uint64_t x) {   /* splitmix64 finaliser: a stable hash of (inode, block, seed) */
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static int bad_range(const struct rule *r, int fd, off_t off, size_t len) {
    struct stat st;
    if (fstat(fd, &st) != 0 || len == 0) return 0;
    if (off < 0) off = lseek(fd, 0, SEEK_CUR);
    if (off < 0) return 0;
    long first = off / r->block, last = (off + (off_t)len - 1) / r->block;
    if (last - first > 4096) last = first + 4096;
    uint64_t limit = (uint64_t)(r->frac * 1e6);
    for (long b = first; b <= last; b++)
        if (mix((uint64_t)st.st_ino * 1000003ULL ^ mix((uint64_t)b ^ (r->seed << 32))) % 1000000ULL < limit) return 1;
    return 0;
}

/* errno to inject for a call on fd (or path when fd < 0), or 0. off < 0 means "current offset". */
static int decide(int call, int fd, const char *path, off_t off, size_t len) {
    struct ruleset *set = rules();
    if (!set) return 0;
    char buf[4096];
    int have_path = 0;
    for (int i = 0; i < set->n; i++) {
        const struct rule *r = &set->r[i];
        if (!(r->calls & call)) continue;
        if (!have_path) {
            if (path) {
                if (path[0] == '/') snprintf(buf, sizeof buf, "%s", path);
                else {
                    char cwd[2048];
                    if (!getcwd(cwd, sizeof cwd)) continue;
                    snprintf(buf, sizeof buf, "%s/%s", cwd, path);
                }
            } else if (!fd_path(fd, buf, sizeof buf)) return 0;
            have_path = 1;
        }
        if (!under(r, buf)) continue;
        if (r->delay_us > 0) usleep(r->delay_us);
        if (r->badblocks) {
            if (call == C_READ && fd >= 0 && bad_range(r, fd, off, len)) return r->err;
        } else if (r->rate > 0 && rnd() < r->rate) {
            return r->err;
        }
    }
    return 0;
}

#define FAIL_IF(expr) do { int e_ = (expr); if (e_) { errno = e_; return -1; } } while (0)
#define RD(fd, off, len) decide(C_READ, fd, NULL, off, len)
#define WR(fd) decide(C_WRITE, fd, NULL, -1, 0)

static size_t iov_len(const struct iovec *v, int c) {
    size_t n = 0;
    for (int i = 0; i < c; i++) n += v[i].iov_len;
    return n;
}

ssize_t read(int fd, void *b, size_t n) { FAIL_IF(RD(fd, -1, n)); return r_read(fd, b, n); }
ssize_t __read_chk(int fd, void *b, size_t n, size_t bl) { (void)bl; return read(fd, b, n); }
ssize_t pread(int fd, void *b, size_t n, off_t o) { FAIL_IF(RD(fd, o, n)); return r_pread(fd, b, n, o); }
ssize_t pread64(int fd, void *b, size_t n, off_t o) { return pread(fd, b, n, o); }
ssize_t __pread_chk(int fd, void *b, size_t n, off_t o, size_t bl) { (void)bl; return pread(fd, b, n, o); }
ssize_t __pread64_chk(int fd, void *b, size_t n, off_t o, size_t bl) { (void)bl; return pread(fd, b, n, o); }
ssize_t readv(int fd, const struct iovec *v, int c) { FAIL_IF(RD(fd, -1, iov_len(v, c))); return r_readv(fd, v, c); }
ssize_t preadv(int fd, const struct iovec *v, int c, off_t o) { FAIL_IF(RD(fd, o, iov_len(v, c))); return r_preadv(fd, v, c, o); }
ssize_t preadv64(int fd, const struct iovec *v, int c, off_t o) { return preadv(fd, v, c, o); }
ssize_t write(int fd, const void *b, size_t n) { FAIL_IF(WR(fd)); return r_write(fd, b, n); }
ssize_t pwrite(int fd, const void *b, size_t n, off_t o) { FAIL_IF(WR(fd)); return r_pwrite(fd, b, n, o); }
ssize_t pwrite64(int fd, const void *b, size_t n, off_t o) { return pwrite(fd, b, n, o); }
ssize_t writev(int fd, const struct iovec *v, int c) { FAIL_IF(WR(fd)); return r_writev(fd, v, c); }
ssize_t pwritev(int fd, const struct iovec *v, int c, off_t o) { FAIL_IF(WR(fd)); return r_pwritev(fd, v, c, o); }
ssize_t pwritev64(int fd, const struct iovec *v, int c, off_t o) { return pwritev(fd, v, c, o); }
int fsync(int fd) { FAIL_IF(decide(C_FSYNC, fd, NULL, -1, 0)); return r_fsync(fd); }
int fdatasync(int fd) { FAIL_IF(decide(C_FSYNC, fd, NULL, -1, 0)); return r_fdatasync(fd); }

ssize_t copy_file_range(int in, off_t *ioff, int out, off_t *ooff, size_t n, unsigned int flags) {
    FAIL_IF(RD(in, ioff ? *ioff : -1, n));
    FAIL_IF(WR(out));
    return r_cfr(in, ioff, out, ooff, n, flags);
}
ssize_t sendfile(int out, int in, off_t *off, size_t n) {
    FAIL_IF(RD(in, off ? *off : -1, n));
    return r_sendfile(out, in, off, n);
}
ssize_t sendfile64(int out, int in, off_t *off, size_t n) { return sendfile(out, in, off, n); }

/* stdio: a failed call sets the stream's error flag, as a real I/O error would */
static size_t stdio_fail(FILE *f, int e) {
    errno = e;
    f->_flags |= 0x0020; /* _IO_ERR_SEEN: ferror() reports it */
    return 0;
}
size_t fread(void *p, size_t sz, size_t nm, FILE *f) {
    int e = RD(fileno(f), -1, sz * nm);
    return e ? stdio_fail(f, e) : r_fread(p, sz, nm, f);
}
size_t fread_unlocked(void *p, size_t sz, size_t nm, FILE *f) {
    int e = RD(fileno(f), -1, sz * nm);
    return e ? stdio_fail(f, e) : r_fread_unlocked(p, sz, nm, f);
}
size_t __fread_chk(void *p, size_t pl, size_t sz, size_t nm, FILE *f) { (void)pl; return fread(p, sz, nm, f); }
size_t __fread_unlocked_chk(void *p, size_t pl, size_t sz, size_t nm, FILE *f) { (void)pl; return fread_unlocked(p, sz, nm, f); }
size_t fwrite(const void *p, size_t sz, size_t nm, FILE *f) {
    int e = WR(fileno(f));
    return e ? stdio_fail(f, e) : r_fwrite(p, sz, nm, f);
}
size_t fwrite_unlocked(const void *p, size_t sz, size_t nm, FILE *f) {
    int e = WR(fileno(f));
    return e ? stdio_fail(f, e) : r_fwrite_unlocked(p, sz, nm, f);
}

/* open family: the path is checked before the call (relative paths against the cwd) */
static int open_mode(int flags, va_list ap) {
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, int) : 0;
}
static int do_openat(int dirfd, const char *path, int flags, int mode) {
    resolve();
    if (dirfd == AT_FDCWD || (path && path[0] == '/')) FAIL_IF(decide(C_OPEN, -1, path, -1, 0));
    return r_openat(dirfd, path, flags, mode);
}
int open(const char *path, int flags, ...) {
    va_list ap; va_start(ap, flags); int mode = open_mode(flags, ap); va_end(ap);
    return do_openat(AT_FDCWD, path, flags, mode);
}
int open64(const char *path, int flags, ...) {
    va_list ap; va_start(ap, flags); int mode = open_mode(flags, ap); va_end(ap);
    return do_openat(AT_FDCWD, path, flags, mode);
}
int openat(int dirfd, const char *path, int flags, ...) {
    va_list ap; va_start(ap, flags); int mode = open_mode(flags, ap); va_end(ap);
    return do_openat(dirfd, path, flags, mode);
}
int openat64(int dirfd, const char *path, int flags, ...) {
    va_list ap; va_start(ap, flags); int mode = open_mode(flags, ap); va_end(ap);
    return do_openat(dirfd, path, flags, mode);
}
int __open_2(const char *path, int flags) { return do_openat(AT_FDCWD, path, flags, 0); }
int __open64_2(const char *path, int flags) { return do_openat(AT_FDCWD, path, flags, 0); }
FILE *fopen(const char *path, const char *mode) {
    int e = decide(C_OPEN, -1, path, -1, 0);
    if (e) { errno = e; return NULL; }
    return r_fopen(path, mode);
}
FILE *fopen64(const char *path, const char *mode) { return fopen(path, mode); }

/* connect: rules match by destination port (port=0: any) instead of a path */
int connect(int fd, const struct sockaddr *addr, socklen_t len) {
    struct ruleset *set = rules();
    if (set && addr && (addr->sa_family == AF_INET || addr->sa_family == AF_INET6)) {
        int port = ntohs(addr->sa_family == AF_INET ? ((const struct sockaddr_in *)addr)->sin_port
                                                    : ((const struct sockaddr_in6 *)addr)->sin6_port);
        for (int i = 0; i < set->n; i++) {
            const struct rule *r = &set->r[i];
            if (!(r->calls & C_CONNECT) || (r->port && r->port != port)) continue;
            if (r->delay_us > 0) usleep(r->delay_us);
            if (r->rate > 0 && rnd() < r->rate) { errno = r->err; return -1; }
        }
    }
    return r_connect(fd, addr, len);
}

/* ---- the node's wall clock (calls=clock offset_ms=N) ---- */

static long clock_offset_ms(void) {
    struct ruleset *set = rules();
    if (!set) return 0;
    for (int i = 0; i < set->n; i++)
        if (set->r[i].calls & C_CLOCK) return set->r[i].offset_ms;
    return 0;
}

static void shift(struct timespec *ts, long ms) {
    long long ns = (long long)ts->tv_nsec + (ms % 1000) * 1000000LL;
    ts->tv_sec += ms / 1000 + (time_t)(ns >= 1000000000LL ? 1 : ns < 0 ? -1 : 0);
    ts->tv_nsec = (long)(ns >= 1000000000LL ? ns - 1000000000LL : ns < 0 ? ns + 1000000000LL : ns);
}

int clock_gettime(clockid_t id, struct timespec *ts) {
    int rc = real_clock(id, ts);
    if (rc == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) {
        long ms = clock_offset_ms();
        if (ms) shift(ts, ms);
    }
    return rc;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
    (void)tz;
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return -1;
    if (tv) { tv->tv_sec = ts.tv_sec; tv->tv_usec = ts.tv_nsec / 1000; }
    return 0;
}

time_t time(time_t *out) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (out) *out = ts.tv_sec;
    return ts.tv_sec;
}
