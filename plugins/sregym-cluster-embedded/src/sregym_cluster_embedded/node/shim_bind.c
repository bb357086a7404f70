/* LD_PRELOAD shim giving each pod its own "localhost" and wildcard address on 127/8.
 * bind() to 0.0.0.0, 127.0.0.1, :: or ::1 binds the pod IP instead (an IPv6 socket gets the
 * v4-mapped pod IP, or EADDRNOTAVAIL when it is IPV6_V6ONLY), so pods on one host can all
 * listen on the same port. connect() to 127.0.0.1 / ::1 goes to the pod IP, so "localhost"
 * inside a pod reaches the pod's own containers. Pods have no IPv6: socket(AF_INET6) fails with
 * EAFNOSUPPORT, as on a host booted with ipv6.disable=1, which servers (memcached, PostgreSQL,
 * Redis, Go, asyncio) handle by using IPv4 only; SREGYM_POD_IPV6=1 keeps IPv6 sockets and maps
 * their wildcard/loopback to the v4-mapped pod IP instead. Env is read once at load time:
 * PostgreSQL and Redis overwrite environ for their process titles. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static int (*real_bind)(int, const struct sockaddr *, socklen_t);
static int (*real_connect)(int, const struct sockaddr *, socklen_t);
static struct in_addr pod_ip;
static int (*real_socket)(int, int, int);
static int active;
static int ipv6_allowed;

__attribute__((constructor)) static void sregym_init(void) {
    const char *value = getenv("SREGYM_POD_IP");
    active = value && inet_pton(AF_INET, value, &pod_ip) == 1;
    real_bind = dlsym(RTLD_NEXT, "bind");
    real_connect = dlsym(RTLD_NEXT, "connect");
    real_socket = dlsym(RTLD_NEXT, "socket");
    const char *v6 = getenv("SREGYM_POD_IPV6");
    ipv6_allowed = v6 && v6[0] == '1';
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
    return real_connect(fd, r ? (struct sockaddr *)&copy : addr, len);
}
