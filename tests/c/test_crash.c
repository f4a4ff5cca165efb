/*
 * A server that crashes mid-call: the blocking call and every call in
 * flight fail at once with TRANSPORT_CLOSED (callbacks exactly once), later
 * calls fail too and do not kill the host with SIGPIPE, the other servers of
 * the hub go on working, and mcpmux_hub_refresh brings the server back.
 */
#include "common.h"

#define IN_FLIGHT 10

static void test_sigpipe_disposition(void) {
    /* The host starts with the default SIGPIPE action; mcpmux_engine_new ignores it. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigaction(SIGPIPE, &sa, NULL);
    mcpmux_engine *e = new_engine(NULL);
    struct sigaction now;
    sigaction(SIGPIPE, NULL, &now);
    CHECK(now.sa_handler == SIG_IGN, "SIGPIPE is ignored after mcpmux_engine_new");
    mcpmux_engine_free(e);
}

static volatile sig_atomic_t host_sigpipes = 0;
static void host_handler(int sig) {
    (void)sig;
    host_sigpipes++;
}

int main(void) {
    watchdog("test_crash", 120);
    test_sigpipe_disposition();

    mcpmux_engine *engine = new_engine("{\"worker_threads\": 2}");
    /* restart = "never": the crashed servers stay down (restarts are tested in Rust). */
    char *config = concat_free(strdup("[mcp]\nrestart = \"never\"\n"),
                               concat_free(demo_config(),
                                           concat_free(demo_config_named("spare", 30),
                                                       python_server_entry("py", "crash_mid_call.py", NULL))));
    mcpmux_hub *hub = connect_text(engine, config);
    free(config);

    /* Calls in flight when the server dies all fail at once: the server would
     * answer them after an hour, and its timeout (30 s) would end them with
     * TIMEOUT; TRANSPORT_CLOSED shows they ended with the process. */
    static outcome outs[IN_FLIGHT];
    static slot slots[IN_FLIGHT];
    latch_reset(&the_latch);
    for (int i = 0; i < IN_FLIGHT; i++) {
        slots[i].out = &outs[i];
        slots[i].latch = &the_latch;
        CHECK(mcpmux_hub_call_tool_async(hub, "mcp_demo_slow", "{\"seconds\":3600,\"steps\":0}", NULL, record, &slots[i],
                                         NULL, NULL) == MCPMUX_STATUS_OK,
              "start slow call %d", i);
    }
    sleep_ms(300);
    char *json = (char *)&outs; /* sentinel */
    mcpmux_error *err = NULL;
    mcpmux_status st = mcpmux_hub_call_tool(hub, "mcp_demo_crash", NULL, NULL, &json, &err);
    CHECK(json == (char *)&outs, "no result from a crashed call");
    expect_status("blocking call to a crashing tool", st, &err, MCPMUX_STATUS_TRANSPORT_CLOSED, "TRANSPORT_CLOSED",
                  NULL);
    int done = wait_done(&the_latch, IN_FLIGHT, 60000); /* a guard against a hang only */
    CHECK(done == IN_FLIGHT, "every call in flight called back (%d)", done);
    int closed = 0;
    for (int i = 0; i < IN_FLIGHT; i++) closed += outs[i].calls == 1 && strcmp(outs[i].code, "TRANSPORT_CLOSED") == 0;
    CHECK(closed == IN_FLIGHT, "each with TRANSPORT_CLOSED exactly once (%d; first: %s %s)", closed, outs[0].code,
          outs[0].message);
    for (int i = 0; i < IN_FLIGHT; i++) outcome_clear(&outs[i]);

    /* Later calls fail cleanly, and the host is not killed (SIGPIPE). */
    for (int i = 0; i < 3; i++) {
        json = NULL;
        err = NULL;
        st = mcpmux_hub_call_tool(hub, "mcp_demo_echo", "{\"text\":\"anyone?\"}", NULL, &json, &err);
        CHECK(st != MCPMUX_STATUS_OK && json == NULL, "call to the dead server fails (%s)", code_of(err));
        mcpmux_error_free(err);
    }
    json = NULL;
    CHECK(mcpmux_hub_servers(hub, &json, NULL) == MCPMUX_STATUS_OK, "servers after the crash");
    CHECK(contains(json, "\"error_code\":\"TRANSPORT_CLOSED\""), "the crashed server shows TRANSPORT_CLOSED: %s", json);
    mcpmux_string_free(json);

    /* The other servers of the hub are unaffected. */
    json = call_ok(hub, "mcp_spare_echo", "{\"text\":\"still here\"}", NULL);
    CHECK(contains(json, "still here"), "the spare server works: %s", json);
    mcpmux_string_free(json);

    /* The Python fault server crashes mid-call, reported through a callback. */
    outcome out = {0};
    slot s = {&out, &the_latch};
    latch_reset(&the_latch);
    CHECK(mcpmux_hub_call_tool_async(hub, "mcp_py_work", NULL, NULL, record, &s, NULL, NULL) == MCPMUX_STATUS_OK,
          "start py work");
    CHECK(wait_done(&the_latch, 1, 5000) == 1, "py crash called back");
    CHECK(strcmp(out.code, "TRANSPORT_CLOSED") == 0 && out.result == NULL, "py crash: TRANSPORT_CLOSED (%s: %s)",
          out.code, out.message);
    CHECK(contains(out.message, "simulated crash") || contains(out.message, "exit"),
          "the message says what happened: %s", out.message);
    outcome_clear(&out);

    /* Refresh restarts the crashed demo server. */
    err = NULL;
    expect_status("refresh the crashed server", mcpmux_hub_refresh(hub, "demo", &err), &err, MCPMUX_STATUS_OK, NULL,
                  NULL);
    json = call_ok(hub, "mcp_demo_echo", "{\"text\":\"back again\"}", NULL);
    CHECK(contains(json, "back again"), "the demo server is back: %s", json);
    mcpmux_string_free(json);

    /* A host with its own SIGPIPE handler keeps it. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = host_handler;
    sigaction(SIGPIPE, &sa, NULL);
    mcpmux_engine *e2 = new_engine(NULL);
    struct sigaction now;
    sigaction(SIGPIPE, NULL, &now);
    CHECK(now.sa_handler == host_handler, "the host's own SIGPIPE handler is kept");
    mcpmux_engine_free(e2);

    mcpmux_hub_free(hub);
    mcpmux_engine_free(engine);
    return finish();
}
