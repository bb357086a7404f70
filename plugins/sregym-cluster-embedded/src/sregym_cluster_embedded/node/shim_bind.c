/* LD_PRELOAD shim giving each pod its own "localhost" and wildcard address on 127/8.
 * bind() to 0.0.0.0, 127.0.0.1, :: or ::1 binds the pod IP instead (an IPv6 socket gets the
 * v4-mapped pod IP, or EADDRNOTAVAIL when it is IPV6_V6ONLY), so pods on one host can all
 * listen on the same port. connect() to 127.0.0.1 / ::1 goes to the pod IP, so "localhost"
 * inside a pod reaches the pod's own containers. Pods have no IPv6: socket(AF_INET6) fails with
 * EAFNOSUPPORT, as on a host booted with ipv6.disable=1, which servers (memcached, PostgreSQL,
 * Redis, Go, asyncio) handle by using IPv4 only; SREGYM_POD_IPV6=1 keeps IPv6 sockets and maps
 * their wildcard/loopback to the v4-mapped pod IP instead. SREGYM_LOCAL_PORT_RANGE="low high" (set
 * by the node only where its cgroup program cannot run, see node/portrange.py) is the pod's
 * net.ipv4.ip_local_port_range for these processes: connect() of an unbound IPv4 TCP/UDP socket
 * first binds it to a free port of the range, and fails with EADDRNOTAVAIL when none is free.
 * Env is read once at load time: PostgreSQL and Redis overwrite environ for their process titles. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int (*real_bind)(int, const struct sockaddr *, socklen_t);
static int (*real_connect)(int, const struct sockaddr *, socklen_t);
static struct in_addr pod_ip;
static int (*real_socket)(int, int, int);
static int active;
static int ipv6_allowed;
static int range_low, range_count;
static unsigned range_next;

__attribute__((constructor)) static void sregym_init(void) {
    const char *value = getenv("SREGYM_POD_IP");
    active = value && inet_pton(AF_INET, value, &pod_ip) == 1;
    real_bind = dlsym(RTLD_NEXT, "bind");
    real_connect = dlsym(RTLD_NEXT, "connect");
    real_socket = dlsym(RTLD_NEXT, "socket");
    const char *v6 = getenv("SREGYM_POD_IPV6");
    ipv6_allowed = v6 && v6[0] == '1';
    const char *range = getenv("SREGYM_LOCAL_PORT_RANGE");
    int low, high;
    if (range && sscanf(range, "%d %d", &low, &high) == 2 && low > 0 && low <= high && high < 65536) {
        range_low = low;
        range_count = high - low + 1;
        range_next = (unsigned)getpid();
    }
}

/* The pod's port range at connect(): 0 when bound to a free port of it (or not asked), -1 when
 * every port is taken (in use or in TIME_WAIT), as the kernel's own port choice fails. */
static int take_port(int fd, const struct sockaddr *dest, socklen_t len) {
    if (!range_count || dest == NULL || len < sizeof(struct sockaddr_in) || dest->sa_family != AF_INET) return 0;
    int type = 0; socklen_t type_len = sizeof(type);
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &type_len) != 0 || (type != SOCK_STREAM && type != SOCK_DGRAM))
        return 0;
    struct sockaddr_in mine; socklen_t mine_len = sizeof(mine);
    if (getsockname(fd, (struct sockaddr *)&mine, &mine_len) != 0 || mine.sin_family != AF_INET || mine.sin_port != 0)
        return 0;  /* the application bound a port itself: the range is not asked */
    if (mine.sin_addr.s_addr == htonl(INADDR_ANY) && active) mine.sin_addr = pod_ip;
    unsigned start = __atomic_fetch_add(&range_next, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < range_count; i++) {
        mine.sin_port = htons((unsigned short)(range_low + (start + i) % range_count));
        if (real_bind(fd, (struct sockaddr *)&mine, sizeof(mine)) == 0) return 0;
        if (errno != EADDRINUSE) return 0;
    }
    errno = EADDRNOTAVAIL;
    return -1;
}

int socket(int domain, int type, int protocol) {
    if (active && domain == AF_INET6 && !ipv6_allowed) { errno = EAFNOSUPPORT; return -1; }
    return real_socket(domain, type, protocol);
}

static int is_v4_local(const struct sockaddr_in *a, int wildcard_too) {
    uint32_t ip = ntohl(a->sin_addr.s_addr);
    return ip == INADDR_LOOPBACK || (wildcard_too && ip == INADDR_ANY);
}

static int is_v6_local(const struct sockaddr_in6 *a, int wildcard_too) {
    return IN6_IS_ADDR_LOOPBACK(&a->sin6_addr) || (wildcard_too && IN6_IS_ADDR_UNSPECIFIED(&a->sin6_addr));
}

static int rewrite(int fd, const struct sockaddr *addr, socklen_t len, int wildcard_too,
                   struct sockaddr_storage *out) {
    if (!active || addr == NULL) return 0;
    if (addr->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)
        && is_v4_local((const struct sockaddr_in *)addr, wildcard_too)) {
        memcpy(out, addr, sizeof(struct sockaddr_in));
        ((struct sockaddr_in *)out)->sin_addr = pod_ip;
        return 1;
    }
    if (addr->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)
        && is_v6_local((const struct sockaddr_in6 *)addr, wildcard_too)) {
        int v6only = 0; socklen_t optlen = sizeof(v6only);
        getsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, &optlen);
        if (v6only) return -1;
        struct sockaddr_in6 *six = (struct sockaddr_in6 *)out;
        memcpy(six, addr, sizeof(struct sockaddr_in6));
        memset(&six->sin6_addr, 0, sizeof(six->sin6_addr));
        six->sin6_addr.s6_addr[10] = 0xff; six->sin6_addr.s6_addr[11] = 0xff;
        memcpy(&six->sin6_addr.s6_addr[12], &pod_ip, 4);
        return 1;
    }
    return 0;
}

int bind(int fd, const struct sockaddr *addr, socklen_t len) {
    struct sockaddr_storage copy;
    int r = rewrite(fd, addr, len, 1, &copy);
    if (r < 0) { errno = EADDRNOTAVAIL; return -1; }
    return real_bind(fd, r ? (struct sockaddr *)&copy : addr, len);
}

int connect(int fd, const struct sockaddr *addr, socklen_t len) {
    struct sockaddr_storage copy;
    int r = rewrite(fd, addr, len, 0, &copy);
    if (r < 0) { errno = ENETUNREACH; return -1; }
    const struct sockaddr *target = r ? (struct sockaddr *)&copy : addr;
    if (take_port(fd, target, len) < 0) return -1;
    return real_connect(fd, target, len);
}
