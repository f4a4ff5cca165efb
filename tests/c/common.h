/*
 * Helpers shared by the C tests of libmcpmux (tests/c/test_*.c).
 *
 * Each test program prints "not ok - ..." for each failed check and ends with
 * "<program>: N passed, M failed"; it exits 1 when a check failed. A watchdog
 * (alarm) kills a program that hangs. The test harness (ffi/tests/c_programs.rs
 * and ffi/ci.sh) passes where the peers are in the environment:
 *
 *   MCPMUX_DEMO_SERVER   the mcpmux-demo-server binary
 *   MCPMUX_PYTHON        the venv Python (runs tests/servers/NAME.py)
 *   MCPMUX_SERVERS_DIR   tests/servers
 *   MCPMUX_EVERYTHING    server-everything's dist/index.js
 *   MCPMUX_NODE          node
 *   MCPMUX_RMCP_TASKS    the rmcp tasks server (tests/servers/rmcp-tasks)
 *   MCPMUX_TEST_TMP      a scratch directory
 *   MCPMUX_TEST_SLOW     a factor for time limits (valgrind runs set 20)
 */
#ifndef MCPMUX_TEST_COMMON_H
#define MCPMUX_TEST_COMMON_H

#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mcpmux.h"

static int t_passed = 0;
static int t_failed = 0;
static const char *t_program = "test";

/* Records one check. */
static inline void check(int ok, const char *fmt, ...) {
    if (ok) {
        t_passed++;
        return;
    }
    t_failed++;
    va_list ap;
    va_start(ap, fmt);
    fputs("not ok - ", stdout);
    vprintf(fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
    fflush(stdout);
}

#define CHECK(cond, ...) check((cond) ? 1 : 0, __VA_ARGS__)

/* Prints the summary line and returns the exit status. */
static inline int finish(void) {
    printf("%s: %d passed, %d failed\n", t_program, t_passed, t_failed);
    fflush(stdout);
    return t_failed == 0 ? 0 : 1;
}

static inline void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stdout, "not ok - fatal: ");
    vfprintf(stdout, fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
    t_failed++;
    finish();
    exit(1);
}

static inline const char *need_env(const char *name) {
    const char *v = getenv(name);
    if (v == NULL || *v == '\0') die("environment variable %s is not set (run through the test harness)", name);
    return v;
}

/* The factor for time limits (valgrind makes everything slower). */
static inline int slow_factor(void) {
    const char *v = getenv("MCPMUX_TEST_SLOW");
    int n = v ? atoi(v) : 1;
    return n > 0 ? n : 1;
}

static inline void on_alarm(int sig) {
    (void)sig;
    static const char msg[] = "not ok - watchdog: the test hung and was stopped\n";
    ssize_t r = write(1, msg, sizeof msg - 1);
    (void)r;
    _exit(3);
}

/* Starts the watchdog: the program dies after `seconds` (times the slow factor). */
static inline void watchdog(const char *program, unsigned seconds) {
    t_program = program;
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGALRM, on_alarm);
    alarm(seconds * (unsigned)slow_factor());
}

static inline double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static inline void sleep_ms(long ms) {
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
    }
}

static inline int contains(const char *haystack, const char *needle) {
    return haystack != NULL && needle != NULL && strstr(haystack, needle) != NULL;
}

/* Counts the occurrences of `needle` in `haystack`. */
static inline int count_of(const char *haystack, const char *needle) {
    int n = 0;
    size_t len = strlen(needle);
    if (haystack == NULL || len == 0) return 0;
    for (const char *p = strstr(haystack, needle); p != NULL; p = strstr(p + len, needle)) n++;
    return n;
}

static inline const char *code_of(const mcpmux_error *err) {
    return err ? mcpmux_error_code(err) : "(no error)";
}

/*
 * Checks that `status` is `expected` and that `*errp` agrees with it (code
 * string, status, message mentioning `message_part` when not NULL); frees
 * it. For OK, checks that it stayed NULL. (`errp` is a pointer so that the
 * call that fills it is evaluated first, whatever the argument order.)
 */
static inline void expect_status(const char *what, mcpmux_status status, mcpmux_error **errp,
                                 mcpmux_status expected, const char *code, const char *message_part) {
    mcpmux_error *err = *errp;
    *errp = NULL;
    if (expected == MCPMUX_STATUS_OK) {
        CHECK(status == MCPMUX_STATUS_OK, "%s: status %d, expected OK (%s: %s)", what, (int)status,
              code_of(err), err ? mcpmux_error_message(err) : "");
        CHECK(err == NULL, "%s: err set on success", what);
    } else {
        CHECK(status == expected, "%s: status %d, expected %d (%s: %s)", what, (int)status, (int)expected,
              code_of(err), err ? mcpmux_error_message(err) : "");
        CHECK(err != NULL, "%s: no error object", what);
        if (err != NULL) {
            CHECK(strcmp(mcpmux_error_code(err), code) == 0, "%s: code %s, expected %s", what,
                  mcpmux_error_code(err), code);
            CHECK(mcpmux_error_status(err) == status, "%s: mcpmux_error_status disagrees", what);
            CHECK(strlen(mcpmux_error_message(err)) > 0, "%s: empty message", what);
            if (message_part != NULL)
                CHECK(contains(mcpmux_error_message(err), message_part), "%s: message '%s' lacks '%s'", what,
                      mcpmux_error_message(err), message_part);
        }
    }
    mcpmux_error_free(err);
}

/* A TOML config with the demo server named `name` (timeout in seconds). */
static inline char *demo_config_named(const char *name, int timeout_seconds) {
    const char *demo = need_env("MCPMUX_DEMO_SERVER");
    size_t n = strlen(demo) + strlen(name) + 200;
    char *text = malloc(n);
    snprintf(text, n,
             "[[mcp.servers]]\nname = \"%s\"\ntype = \"stdio\"\ncommand = \"%s\"\ntimeout_seconds = %d\n", name,
             demo, timeout_seconds);
    return text;
}

static inline char *demo_config(void) { return demo_config_named("demo", 30); }

/* A TOML server entry running tests/servers/<script> with the venv Python. */
static inline char *python_server_entry(const char *name, const char *script, const char *extra) {
    const char *py = need_env("MCPMUX_PYTHON");
    const char *dir = need_env("MCPMUX_SERVERS_DIR");
    size_t n = strlen(py) + strlen(dir) + strlen(script) + strlen(name) + (extra ? strlen(extra) : 0) + 200;
    char *text = malloc(n);
    snprintf(text, n, "[[mcp.servers]]\nname = \"%s\"\ncommand = \"%s\"\nargs = [\"%s/%s\"]\n%s\n", name, py, dir,
             script, extra ? extra : "");
    return text;
}

/* Concatenates two malloc'ed strings, freeing both. */
static inline char *concat_free(char *a, char *b) {
    size_t n = strlen(a) + strlen(b) + 1;
    char *out = malloc(n);
    snprintf(out, n, "%s%s", a, b);
    free(a);
    free(b);
    return out;
}

/*
 * Event logs: what the tests check instead of timings (no test measures
 * time; see docs/testing.md). The demo server with DEMO_EVENT_LOG appends
 * "slow <id>" when a slow call starts and "cancelled <id>" when a
 * cancellation arrives; tests/servers/hang.py with HANG_CANCEL_LOG appends
 * the id of each cancellation.
 */

/* A fresh (removed) file MCPMUX_TEST_TMP/<name>; the buffer is the caller's. */
static inline const char *event_log_path(char *buf, size_t size, const char *name) {
    snprintf(buf, size, "%s/%s", need_env("MCPMUX_TEST_TMP"), name);
    unlink(buf);
    return buf;
}

/* demo_config_named whose server logs its events to `log` (DEMO_EVENT_LOG). */
static inline char *demo_config_logged(const char *name, int timeout_seconds, const char *log) {
    char *entry = demo_config_named(name, timeout_seconds);
    size_t n = strlen(log) + 64;
    char *env = malloc(n);
    snprintf(env, n, "[mcp.servers.env]\nDEMO_EVENT_LOG = \"%s\"\n", log);
    return concat_free(entry, env);
}

/* How many lines of file `path` start with `prefix` (0 when it is missing). */
static inline int count_events(const char *path, const char *prefix) {
    FILE *f = fopen(path, "r");
    if (f == NULL) return 0;
    char line[512];
    int n = 0;
    size_t len = strlen(prefix);
    while (fgets(line, sizeof line, f) != NULL) n += strncmp(line, prefix, len) == 0;
    fclose(f);
    return n;
}

/*
 * Waits until `n` lines of `path` start with `prefix`; returns the count.
 * The limit (60 s, times the slow factor) only turns a hang into a failure.
 */
static inline int wait_events(const char *path, const char *prefix, int n) {
    int seen = count_events(path, prefix);
    for (long i = 0; i < 3000L * slow_factor() && seen < n; i++) {
        sleep_ms(20);
        seen = count_events(path, prefix);
    }
    return seen;
}


static inline mcpmux_engine *new_engine(const char *options) {
    mcpmux_engine *engine = NULL;
    mcpmux_error *err = NULL;
    mcpmux_status st = mcpmux_engine_new(options, &engine, &err);
    if (st != MCPMUX_STATUS_OK) die("mcpmux_engine_new: %s: %s", code_of(err), mcpmux_error_message(err));
    return engine;
}

static inline mcpmux_hub *connect_text(mcpmux_engine *engine, const char *config) {
    mcpmux_hub *hub = NULL;
    mcpmux_error *err = NULL;
    mcpmux_status st = mcpmux_hub_connect(engine, config, &hub, &err);
    if (st != MCPMUX_STATUS_OK) die("mcpmux_hub_connect: %s: %s", code_of(err), mcpmux_error_message(err));
    return hub;
}

/* A blocking call that must succeed; returns the result JSON (caller frees). */
static inline char *call_ok(mcpmux_hub *hub, const char *tool, const char *args, const char *options) {
    char *out = NULL;
    mcpmux_error *err = NULL;
    mcpmux_status st = mcpmux_hub_call_tool(hub, tool, args, options, &out, &err);
    CHECK(st == MCPMUX_STATUS_OK, "call %s %s: %s: %s", tool, args ? args : "NULL", code_of(err),
          err ? mcpmux_error_message(err) : "");
    mcpmux_error_free(err);
    return out;
}

/* ------------------------------------------------------------------ async */

/* The outcome of one asynchronous call, filled by `record`. */
typedef struct {
    int calls;            /* how many times the callback ran (must end at 1) */
    char *result;         /* result_json, owned here */
    char code[32];        /* error code, "" on success */
    char message[512];    /* error message */
    pthread_t thread;     /* the thread the callback ran on */
} outcome;

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int done;
} latch;

/* Not static: test_basic does not use it (each program is one translation unit). */
latch the_latch = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};

typedef struct {
    outcome *out;
    latch *latch;
} slot;

/* A callback that stores its outcome and counts down the latch. */
static inline void record(void *user_data, char *result_json, mcpmux_error *error) {
    slot *s = user_data;
    pthread_mutex_lock(&s->latch->lock);
    outcome *o = s->out;
    o->calls++;
    o->thread = pthread_self();
    if (o->result != NULL) mcpmux_string_free(o->result);
    o->result = result_json;
    if (error != NULL) {
        snprintf(o->code, sizeof o->code, "%s", mcpmux_error_code(error));
        snprintf(o->message, sizeof o->message, "%s", mcpmux_error_message(error));
        mcpmux_error_free(error);
    } else {
        o->code[0] = '\0';
    }
    s->latch->done++;
    pthread_cond_broadcast(&s->latch->cond);
    pthread_mutex_unlock(&s->latch->lock);
}

/* Waits until `n` callbacks ran in total, or `ms` passed; returns the count. */
static inline int wait_done(latch *l, int n, long ms) {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    long total = ms * slow_factor();
    deadline.tv_sec += total / 1000;
    deadline.tv_nsec += (total % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&l->lock);
    while (l->done < n) {
        if (pthread_cond_timedwait(&l->cond, &l->lock, &deadline) == ETIMEDOUT) break;
    }
    int done = l->done;
    pthread_mutex_unlock(&l->lock);
    return done;
}

static inline void latch_reset(latch *l) {
    pthread_mutex_lock(&l->lock);
    l->done = 0;
    pthread_mutex_unlock(&l->lock);
}

static inline void outcome_clear(outcome *o) {
    mcpmux_string_free(o->result);
    memset(o, 0, sizeof *o);
}

#endif
