/* The container's init, as a container runtime's shim plus tini would be.
 *
 *   podinit run  UID GID GROUPS CAPS -- argv...   (main process: the caller unshared a PID namespace)
 *   podinit exec UID GID GROUPS CAPS -- argv...   (kubectl exec: the caller joined the pod's namespaces)
 *
 * GROUPS is a comma-separated list of supplementary gids ("-" for none); CAPS the hexadecimal mask
 * of the capabilities the process keeps (bounding set; also effective/permitted when UID is 0).
 *
 * The process the node agent started (the "relay") stays in the host's PID namespace: it forks
 * the container's PID 1, forwards every signal to it and exits as the container's main process did
 * (the same exit code, or killed by the same signal). In "run" mode PID 1 mounts the namespace's
 * own /proc (with the runtime's masked and read-only paths), drops its capabilities, then forks the
 * command as PID 2, forwards signals to it and reaps orphans, so a command without a SIGTERM handler
 * still stops on SIGTERM (the runtime's --init). When PID 1 exits the kernel kills whatever is left
 * in the namespace. The command runs with the pod's uid/gid/groups, the capability set above and
 * PR_SET_NO_NEW_PRIVS. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void die(const char *what) {
    fprintf(stderr, "podinit: %s: %s\n", what, strerror(errno));
    _exit(127);
}

static int last_cap(void) {
    int fd = open("/proc/sys/kernel/cap_last_cap", O_RDONLY);
    char buf[16] = {0};
    if (fd >= 0) {
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n > 0) return atoi(buf);
    }
    return 40;
}

/* Bounding set reduced to `keep`; as uid 0 also effective/permitted/inheritable = `keep`. */
static void limit_caps(uint64_t keep, int maxcap) {
    for (int cap = 0; cap <= maxcap; cap++)
        if (!(keep & (1ULL << cap)) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL)
            die("drop capability");
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof(data));
    data[0].effective = data[0].permitted = (uint32_t)keep;
    data[1].effective = data[1].permitted = (uint32_t)(keep >> 32);
    if (syscall(SYS_capset, &hdr, data) != 0) die("capset");
}

static void become(uid_t uid, gid_t gid, const char *groups, uint64_t caps) {
    gid_t list[64];
    int n = 0;
    if (strcmp(groups, "-") != 0) {
        char *copy = strdup(groups), *save = NULL;
        for (char *tok = strtok_r(copy, ",", &save); tok && n < 64; tok = strtok_r(NULL, ",", &save))
            list[n++] = (gid_t)strtoul(tok, NULL, 10);
    }
    int maxcap = last_cap();
    /* the bounding set first, while CAP_SETPCAP is still effective */
    for (int cap = 0; cap <= maxcap; cap++)
        if (!(caps & (1ULL << cap)) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL)
            die("drop capability");
    if (setgroups(n, list) != 0) die("setgroups");
    if (setresgid(gid, gid, gid) != 0) die("setgid");
    if (uid != 0) {
        if (setresuid(uid, uid, uid) != 0) die("setuid");  /* clears every capability */
    } else {
        limit_caps(caps, maxcap);
    }
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die("no_new_privs");
}

static void mask_proc(void) {
    if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0) die("mount /proc");
    static const char *readonly[] = {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger", NULL};
    static const char *masked[] = {"/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
                                   "/proc/timer_stats", "/proc/sched_debug", "/proc/acpi", "/proc/scsi", NULL};
    for (int i = 0; readonly[i]; i++) {
        if (mount(readonly[i], readonly[i], NULL, MS_BIND | MS_REC, NULL) != 0) continue;
        mount(NULL, readonly[i], NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
    }
    for (int i = 0; masked[i]; i++) {
        if (access(masked[i], F_OK) != 0) continue;
        if (mount("/dev/null", masked[i], NULL, MS_BIND, NULL) != 0)
            mount("tmpfs", masked[i], "tmpfs", MS_RDONLY, "size=0");
    }
}

/* Forward every catchable signal to `target` until it exits; returns its wait status. In PID 1,
 * also reap orphans (processes re-parented to it). */
static int supervise(pid_t target, int reap_all) {
    sigset_t all;
    sigfillset(&all);
    for (;;) {
        int status;
        pid_t done;
        while ((done = waitpid(reap_all ? -1 : target, &status, WNOHANG)) > 0)
            if (done == target) return status;
        siginfo_t info;
        int sig = sigwaitinfo(&all, &info);
        if (sig < 0 || sig == SIGCHLD) continue;
        kill(target, sig);
    }
}

static void exit_like(int status) {
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        signal(sig, SIG_DFL);
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, sig);
        sigprocmask(SIG_UNBLOCK, &set, NULL);
        kill(getpid(), sig);
        _exit(128 + sig);
    }
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

static void exec_command(uid_t uid, gid_t gid, const char *groups, uint64_t caps, char **argv, sigset_t *old) {
    become(uid, gid, groups, caps);
    sigprocmask(SIG_SETMASK, old, NULL);
    execvp(argv[0], argv);
    fprintf(stderr, "podinit: exec %s: %s\n", argv[0], strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
}

int main(int argc, char **argv) {
    if (argc < 8 || strcmp(argv[6], "--") != 0 || (strcmp(argv[1], "run") != 0 && strcmp(argv[1], "exec") != 0)) {
        fprintf(stderr, "usage: podinit run|exec UID GID GROUPS CAPS -- argv...\n");
        return 2;
    }
    int run = strcmp(argv[1], "run") == 0;
    uid_t uid = (uid_t)strtoul(argv[2], NULL, 10);
    gid_t gid = (gid_t)strtoul(argv[3], NULL, 10);
    const char *groups = argv[4];
    uint64_t caps = strtoull(argv[5], NULL, 16);
    char **command = argv + 7;
    sigset_t all, old;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, &old);

    int pipefd[2] = {-1, -1};
    if (run && pipe2(pipefd, O_CLOEXEC) != 0) die("pipe");
    pid_t child = fork();
    if (child < 0) die("fork");
    if (child == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        if (!run) exec_command(uid, gid, groups, caps, command, &old);
        /* PID 1 of the container */
        close(pipefd[0]);
        mask_proc();
        pid_t app = fork();
        if (app < 0) die("fork");
        if (app == 0) exec_command(uid, gid, groups, caps, command, &old);
        prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
        limit_caps(1ULL << CAP_KILL, last_cap());  /* only what signalling the command needs */
        int status = supervise(app, 1);
        if (write(pipefd[1], &status, sizeof(status)) != sizeof(status)) _exit(1);
        _exit(0);
    }
    if (run) close(pipefd[1]);
    int status = supervise(child, 0);
    if (run) {
        int app_status;
        if (read(pipefd[0], &app_status, sizeof(app_status)) == sizeof(app_status)) status = app_status;
    }
    exit_like(status);
    return 0;
}
