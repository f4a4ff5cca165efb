/*
 * Review sessions through the C ABI: begin -> wait -> reply -> wait -> end
 * with a host reviewer written in C that calls the demo server's echo tool
 * and then answers with a fenced JSON verdict; the session files on disk;
 * the asynchronous variants; and the error codes of the session verbs.
 */
#include "common.h"

#include <sys/stat.h>

/* What the host callback saw and how it answers. */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int calls;              /* callbacks of the main session */
    char *tool_turn;        /* the request that carried the echo result (owned) */
    int on_session_thread;  /* a callback ran on the thread that called a verb */
    int release_slow;       /* lets the SLOW session's callback return */
    int slow_entered;       /* the SLOW session's callback is running */
    pthread_t main_thread;
} host_state;

static host_state H = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static const char *VERDICT_CHANGES =
    "I checked the tool.\n\n```json\n{\"verdict\": \"REQUEST_CHANGES\", \"blocks\": [{\"title\": \"Missing "
    "tests\", \"severity\": \"major\", \"body\": \"Step 2 has no test.\"}]}\n```\n";
static const char *VERDICT_APPROVE = "Looks good now.\n\n```json\n{\"verdict\": \"APPROVE\", \"blocks\": []}\n```\n";

/* The host reviewer: see the header comment. */
static void host(void *user_data, const char *request_json, mcpmux_host_reply *reply) {
    host_state *h = user_data;
    mcpmux_error *err = NULL;
    mcpmux_status st;
    pthread_mutex_lock(&h->lock);
    if (pthread_equal(pthread_self(), h->main_thread)) h->on_session_thread = 1;
    pthread_mutex_unlock(&h->lock);

    if (contains(request_json, "FAIL-MARKER")) {
        st = mcpmux_host_reply_error(reply, "the host model exploded", &err);
    } else if (contains(request_json, "SLOW-MARKER")) {
        pthread_mutex_lock(&h->lock);
        h->slow_entered = 1;
        pthread_cond_broadcast(&h->cond);
        while (!h->release_slow) pthread_cond_wait(&h->cond, &h->lock);
        pthread_mutex_unlock(&h->lock);
        st = mcpmux_host_reply_text(reply, VERDICT_APPROVE, &err);
    } else {
        pthread_mutex_lock(&h->lock);
        int n = ++h->calls;
        if (n == 2) h->tool_turn = strdup(request_json);
        pthread_mutex_unlock(&h->lock);
        if (n == 1) {
            /* Turn 1: call the demo server's echo tool. */
            st = mcpmux_host_reply_ok(
                reply,
                "{\"text\": \"Let me check.\", \"tool_calls\": [{\"id\": \"call-1\", \"name\": "
                "\"mcp_demo_echo\", \"arguments\": {\"text\": \"ping from the C host\"}}]}",
                &err);
        } else if (n == 2) {
            st = mcpmux_host_reply_text(reply, VERDICT_CHANGES, &err);
        } else {
            st = mcpmux_host_reply_text(reply, VERDICT_APPROVE, &err);
        }
    }
    if (st != MCPMUX_STATUS_OK) {
        printf("not ok - host reply: %s: %s\n", code_of(err), mcpmux_error_message(err));
        mcpmux_error_free(err);
    }
}

/* A copy of the string value of "key" in a compact JSON object (no escapes). */
static char *json_str(const char *json, const char *key) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":\"", key);
    const char *p = json ? strstr(json, pattern) : NULL;
    if (p == NULL) return NULL;
    p += strlen(pattern);
    const char *end = strchr(p, '"');
    if (end == NULL) return NULL;
    size_t n = (size_t)(end - p);
    char *out = malloc(n + 1);
    memcpy(out, p, n);
    out[n] = '\0';
    return out;
}

static int exists(const char *dir, const char *name) {
    char path[1024];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0;
}

/* Runs a blocking verb that must succeed; returns its JSON (caller frees). */
static char *verb_ok(const char *what,
                     mcpmux_status (*fn)(const mcpmux_sessions *, const char *, char **, mcpmux_error **),
                     mcpmux_sessions *s, const char *params) {
    char *out = NULL;
    mcpmux_error *err = NULL;
    mcpmux_status st = fn(s, params, &out, &err);
    CHECK(st == MCPMUX_STATUS_OK, "%s: %s: %s", what, code_of(err), err ? mcpmux_error_message(err) : "");
    mcpmux_error_free(err);
    return out;
}

/* Waits (2 s at a time) until the round is no longer running; returns the last wait result. */
static char *wait_until_done(mcpmux_sessions *s, const char *dir) {
    char params[1200];
    snprintf(params, sizeof params, "{\"session_dir\": \"%s\", \"max_wait_seconds\": 2}", dir);
    char *out = NULL;
    for (int i = 0; i < 60 * slow_factor(); i++) {
        mcpmux_string_free(out);
        out = verb_ok("wait", mcpmux_session_wait, s, params);
        if (out == NULL || !contains(out, "\"status\":\"running\"")) break;
    }
    return out;
}

static char *begin_params(const char *work, const char *user_request) {
    static char buf[2048];
    snprintf(buf, sizeof buf,
             "{\"skill\": \"review-plan\", \"reviewer\": \"host\", \"working_dir\": \"%s\", \"input\": "
             "\"---\\nUSER_REQUEST: %s\\n---\\n## PLAN\\n1. Write hello.c\\n2. Ship it\\n\"}",
             work, user_request);
    return buf;
}

static void test_cycle(mcpmux_sessions *s, const char *work) {
    char *begun = verb_ok("begin", mcpmux_session_begin, s, begin_params(work, "Add a greeting"));
    CHECK(contains(begun, "\"round\":1"), "begin: round 1: %s", begun);
    CHECK(contains(begun, "\"status\":\"running\""), "begin: running: %s", begun);
    char *dir = json_str(begun, "session_dir");
    CHECK(dir != NULL && contains(dir, "/.mcpmux/sessions/review-plan-"), "begin: session_dir %s", dir);
    mcpmux_string_free(begun);
    if (dir == NULL) return;

    char *first = wait_until_done(s, dir);
    CHECK(contains(first, "\"status\":\"completed\""), "wait 1: completed: %s", first);
    CHECK(contains(first, "\"verdict\":\"REQUEST_CHANGES\""), "wait 1: verdict: %s", first);
    CHECK(contains(first, "Missing tests"), "wait 1: the block: %s", first);
    CHECK(contains(first, "\"next\":\"respond\""), "wait 1: next: %s", first);
    CHECK(contains(first, "\"next_reason\":\"open_issues\""), "wait 1: next_reason: %s", first);
    mcpmux_string_free(first);

    pthread_mutex_lock(&H.lock);
    CHECK(H.calls == 2, "round 1 took two host turns, not %d", H.calls);
    CHECK(contains(H.tool_turn, "ping from the C host"), "turn 2 carries the echo result: %s", H.tool_turn);
    CHECK(contains(H.tool_turn, "call-1"), "turn 2 names the call id");
    pthread_mutex_unlock(&H.lock);

    char params[2048];
    snprintf(params, sizeof params,
             "{\"session_dir\": \"%s\", \"input\": \"---\\nRESPONSE: Added a test for step 2.\\n---\\n\"}", dir);
    char *replied = verb_ok("reply", mcpmux_session_reply, s, params);
    CHECK(contains(replied, "\"status\":\"started\""), "reply: started: %s", replied);
    CHECK(contains(replied, "\"round\":2"), "reply: round 2: %s", replied);
    mcpmux_string_free(replied);

    char *second = wait_until_done(s, dir);
    CHECK(contains(second, "\"status\":\"completed\""), "wait 2: completed: %s", second);
    CHECK(contains(second, "\"verdict\":\"APPROVE\""), "wait 2: verdict: %s", second);
    CHECK(contains(second, "\"next\":\"done\""), "wait 2: next: %s", second);
    CHECK(contains(second, "\"next_reason\":\"approved\""), "wait 2: next_reason: %s", second);
    CHECK(contains(second, "\"round\":2"), "wait 2: round 2: %s", second);
    mcpmux_string_free(second);

    /* end, asynchronously */
    outcome o = {0};
    slot sl = {&o, &the_latch};
    latch_reset(&the_latch);
    snprintf(params, sizeof params, "{\"session_dir\": \"%s\"}", dir);
    mcpmux_error *err = NULL;
    mcpmux_status st = mcpmux_session_end_async(s, params, record, &sl, &err);
    expect_status("end_async", st, &err, MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(wait_done(&the_latch, 1, 30000) == 1, "end_async: callback ran");
    CHECK(o.calls == 1, "end_async: callback ran once (%d)", o.calls);
    CHECK(o.code[0] == '\0', "end_async: no error (%s %s)", o.code, o.message);
    CHECK(contains(o.result, "\"status\":\"ended\""), "end: ended: %s", o.result);
    CHECK(contains(o.result, "\"finalized\":true"), "end: finalized: %s", o.result);
    CHECK(contains(o.result, "\"verdict\":\"APPROVE\""), "end: verdict: %s", o.result);
    CHECK(!pthread_equal(o.thread, pthread_self()), "end_async: callback on an engine thread");
    outcome_clear(&o);

    CHECK(exists(dir, "session.json"), "session.json in %s", dir);
    CHECK(exists(dir, "thread.json"), "thread.json in %s", dir);
    CHECK(exists(dir, "round-001/input.md"), "round-001/input.md in %s", dir);
    CHECK(exists(dir, "round-001/result.json"), "round-001/result.json in %s", dir);
    CHECK(exists(dir, "round-002/input.md"), "round-002/input.md in %s", dir);
    CHECK(exists(dir, "meta.json"), "meta.json in %s", dir);
    pthread_mutex_lock(&H.lock);
    CHECK(!H.on_session_thread, "the host callback never ran on the caller's thread");
    pthread_mutex_unlock(&H.lock);
    free(dir);
}

static void test_host_failure(mcpmux_sessions *s, const char *work) {
    char *begun = verb_ok("begin FAIL", mcpmux_session_begin, s, begin_params(work, "FAIL-MARKER"));
    char *dir = json_str(begun, "session_dir");
    mcpmux_string_free(begun);
    if (dir == NULL) return;
    char *out = wait_until_done(s, dir);
    CHECK(contains(out, "\"status\":\"failed\""), "a throwing host fails the round: %s", out);
    CHECK(contains(out, "the host model exploded"), "the failure carries the host's message: %s", out);
    CHECK(contains(out, "\"next\":\"stopped\""), "failed round: next stopped: %s", out);
    mcpmux_string_free(out);
    free(dir);
}

static void test_still_running(mcpmux_sessions *s, const char *work) {
    char *begun = verb_ok("begin SLOW", mcpmux_session_begin, s, begin_params(work, "SLOW-MARKER"));
    char *dir = json_str(begun, "session_dir");
    mcpmux_string_free(begun);
    if (dir == NULL) return;
    /* Wait until the round is inside the host callback. */
    pthread_mutex_lock(&H.lock);
    while (!H.slow_entered) pthread_cond_wait(&H.cond, &H.lock);
    pthread_mutex_unlock(&H.lock);

    char params[2048], *out = NULL;
    mcpmux_error *err = NULL;
    snprintf(params, sizeof params, "{\"session_dir\": \"%s\", \"max_wait_seconds\": 1}", dir);
    out = verb_ok("wait while running", mcpmux_session_wait, s, params);
    CHECK(contains(out, "\"status\":\"running\""), "wait while running: %s", out);
    CHECK(contains(out, "\"next\":\"running\""), "wait while running: next: %s", out);
    mcpmux_string_free(out);
    out = NULL;

    snprintf(params, sizeof params, "{\"session_dir\": \"%s\", \"input\": \"---\\nRESPONSE: too early\\n---\\n\"}",
             dir);
    mcpmux_status st = mcpmux_session_reply(s, params, &out, &err);
    expect_status("reply while running", st, &err, MCPMUX_STATUS_ROUND_STILL_RUNNING, "ROUND_STILL_RUNNING", NULL);
    CHECK(out == NULL, "reply while running: no result");

    pthread_mutex_lock(&H.lock);
    H.release_slow = 1;
    pthread_cond_broadcast(&H.cond);
    pthread_mutex_unlock(&H.lock);
    out = wait_until_done(s, dir);
    CHECK(contains(out, "\"verdict\":\"APPROVE\""), "slow round approves after release: %s", out);
    mcpmux_string_free(out);
    free(dir);
}

static void test_errors(mcpmux_engine *engine, mcpmux_sessions *s, const char *work) {
    char params[2048], *out = NULL;
    mcpmux_error *err = NULL;
    mcpmux_status st;

    snprintf(params, sizeof params,
             "{\"skill\": \"no-such-skill\", \"reviewer\": \"host\", \"working_dir\": \"%s\", \"input\": \"x\"}", work);
    st = mcpmux_session_begin(s, params, &out, &err);
    expect_status("unknown skill", st, &err, MCPMUX_STATUS_UNKNOWN_SKILL, "UNKNOWN_SKILL", "no-such-skill");

    snprintf(params, sizeof params,
             "{\"skill\": \"review-plan\", \"reviewer\": \"host\", \"working_dir\": \"%s\", \"input\": "
             "\"---\\nUSER_REQUEST: no plan here\\n---\\n\"}",
             work);
    st = mcpmux_session_begin(s, params, &out, &err);
    expect_status("missing placeholder", st, &err, MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "PLAN");

    st = mcpmux_session_wait(s, "{\"session_dir\": \"/nonexistent/mcpmux-session\"}", &out, &err);
    expect_status("bad session dir", st, &err, MCPMUX_STATUS_INVALID_SESSION, "INVALID_SESSION", NULL);

    st = mcpmux_session_wait(s, "{\"session_dir\": \"/x\", \"max_wait_second\": 1}", &out, &err);
    expect_status("misspelt parameter", st, &err, MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT",
                  "'max_wait_second' (did you mean 'max_wait_seconds'?");
    st = mcpmux_session_wait(s, "[1, 2]", &out, &err);
    expect_status("params not an object", st, &err, MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "params_json");
    st = mcpmux_session_wait(s, NULL, &out, &err);
    expect_status("params NULL", st, &err, MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "params_json");
    st = mcpmux_session_end(NULL, "{}", &out, &err);
    expect_status("sessions NULL", st, &err, MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "sessions");
    CHECK(out == NULL, "no output on errors");

    /* async: the error reaches the callback */
    outcome o = {0};
    slot sl = {&o, &the_latch};
    latch_reset(&the_latch);
    st = mcpmux_session_wait_async(s, "{\"session_dir\": \"/nonexistent/mcpmux-session\"}", record, &sl, &err);
    expect_status("wait_async bad dir", st, &err, MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(wait_done(&the_latch, 1, 30000) == 1, "wait_async: callback ran");
    CHECK(strcmp(o.code, "INVALID_SESSION") == 0, "wait_async: INVALID_SESSION, got '%s'", o.code);
    CHECK(o.result == NULL, "wait_async: no result with an error");
    outcome_clear(&o);

    /* a context without a host reviewer */
    mcpmux_sessions *bare = NULL;
    st = mcpmux_sessions_new(engine, NULL, NULL, NULL, NULL, &bare, &err);
    expect_status("sessions_new bare", st, &err, MCPMUX_STATUS_OK, NULL, NULL);
    st = mcpmux_session_begin(bare, begin_params(work, "no host"), &out, &err);
    expect_status("host reviewer without a callback", st, &err, MCPMUX_STATUS_REVIEWER_NOT_FOUND,
                  "REVIEWER_NOT_FOUND", NULL);
    mcpmux_sessions_free(bare);

    mcpmux_sessions *bad = NULL;
    st = mcpmux_sessions_new(engine, "this is = = not a config", NULL, host, &H, &bad, &err);
    expect_status("bad config", st, &err, MCPMUX_STATUS_CONFIG_INVALID, "CONFIG_INVALID", NULL);
    st = mcpmux_sessions_new(engine, "{}", "/x.toml", host, &H, &bad, &err);
    expect_status("both configs", st, &err, MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "config_path");
    CHECK(bad == NULL, "no context on errors");
    mcpmux_sessions_free(NULL);
}

int main(void) {
    watchdog("test_session", 120);
    H.main_thread = pthread_self();
    const char *tmp = need_env("MCPMUX_TEST_TMP");
    char work[900];
    snprintf(work, sizeof work, "%s/session-work", tmp);
    mkdir(work, 0700);

    const char *demo = need_env("MCPMUX_DEMO_SERVER");
    char config[1400];
    snprintf(config, sizeof config,
             "[[mcp.servers]]\nname = \"demo\"\ncommand = \"%s\"\nallow_tools = [\"echo\"]\n"
             "[session]\nmax_turns = 4\n",
             demo);

    mcpmux_engine *engine = new_engine(NULL);
    mcpmux_sessions *s = NULL;
    mcpmux_error *err = NULL;
    mcpmux_status st = mcpmux_sessions_new(engine, config, NULL, host, &H, &s, &err);
    expect_status("sessions_new", st, &err, MCPMUX_STATUS_OK, NULL, NULL);
    if (s == NULL) return finish();

    test_cycle(s, work);
    test_host_failure(s, work);
    test_still_running(s, work);
    test_errors(engine, s, work);

    mcpmux_sessions_free(s);
    mcpmux_engine_free(engine);
    free(H.tool_turn);
    return finish();
}
