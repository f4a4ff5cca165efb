/*
 * Callback calls against the demo server and the hang.py fault server:
 * 100 concurrent calls with each callback exactly once on an engine thread,
 * cancel (before and after the end, with notifications/cancelled reaching
 * the server), freed handles, what a callback may and may not do, and
 * mcpmux_engine_free waiting for calls in flight.
 */
#include "common.h"

#define N 100

static mcpmux_engine *engine;
static mcpmux_hub *hub;
static pthread_t main_thread;
static char events[1024]; /* the demo server's DEMO_EVENT_LOG */

static void test_hundred_concurrent(void) {
    static outcome outs[N];
    static slot slots[N];
    latch_reset(&the_latch);
    int started = 0;
    for (int i = 0; i < N; i++) {
        char args[128];
        /* Every third call sleeps a little so that the calls overlap and end out of order. */
        if (i % 3 == 0)
            snprintf(args, sizeof args, "{\"seconds\":0.%d,\"steps\":2}", 1 + i % 4);
        else
            snprintf(args, sizeof args, "{\"text\":\"call %d\"}", i);
        slots[i].out = &outs[i];
        slots[i].latch = &the_latch;
        mcpmux_error *err = NULL;
        mcpmux_status st = mcpmux_hub_call_tool_async(hub, i % 3 == 0 ? "mcp_demo_slow" : "mcp_demo_echo", args,
                                                      NULL, record, &slots[i], NULL, &err);
        CHECK(st == MCPMUX_STATUS_OK, "start call %d: %s", i, code_of(err));
        mcpmux_error_free(err);
        if (st == MCPMUX_STATUS_OK) started++;
    }
    int done = wait_done(&the_latch, started, 30000);
    CHECK(done == N, "100 callbacks arrived (%d)", done);
    sleep_ms(200); /* a second, wrong, callback would show up here */
    int once = 0, ok = 0, off_thread = 0;
    for (int i = 0; i < N; i++) {
        pthread_mutex_lock(&the_latch.lock);
        outcome o = outs[i];
        pthread_mutex_unlock(&the_latch.lock);
        once += o.calls == 1;
        off_thread += o.calls == 1 && !pthread_equal(o.thread, main_thread);
        if (i % 3 == 0) {
            ok += o.result != NULL && o.code[0] == '\0' && contains(o.result, "\"content\"");
        } else {
            char needle[64];
            snprintf(needle, sizeof needle, "call %d\"", i);
            ok += o.result != NULL && contains(o.result, needle);
        }
    }
    CHECK(once == N, "every callback exactly once (%d of %d)", once, N);
    CHECK(ok == N, "every result is the right one (%d of %d)", ok, N);
    CHECK(off_thread == N, "every callback on an engine thread (%d of %d)", off_thread, N);
    for (int i = 0; i < N; i++) outcome_clear(&outs[i]);
}

static void test_cancel_slow_call(void) {
    outcome out = {0};
    slot s = {&out, &the_latch};
    latch_reset(&the_latch);
    mcpmux_call *call = NULL;
    mcpmux_error *err = NULL;
    /* The server would answer after an hour (the server timeout is 30 s): a
     * callback with CANCELLED can only come from the cancel, and the wait
     * below is only a guard against a hang. */
    int slow_before = count_events(events, "slow ");
    mcpmux_status st = mcpmux_hub_call_tool_async(hub, "mcp_demo_slow", "{\"seconds\":3600,\"steps\":3600}", NULL,
                                                  record, &s, &call, &err);
    expect_status("start slow call", st, &err, MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(call != NULL, "a call handle");
    CHECK(wait_events(events, "slow ", slow_before + 1) == slow_before + 1, "the slow call reached the server");
    CHECK(wait_done(&the_latch, 1, 1) == 0, "not done before cancel");
    mcpmux_call_cancel(call);
    int done = wait_done(&the_latch, 1, 60000);
    CHECK(done == 1, "callback after cancel");
    CHECK(strcmp(out.code, "CANCELLED") == 0 && out.result == NULL, "cancelled with CANCELLED: %s %s", out.code,
          out.message);
    CHECK(wait_events(events, "cancelled ", 1) == 1, "the server got notifications/cancelled");
    mcpmux_call_cancel(call); /* again: nothing happens */
    sleep_ms(100);
    CHECK(out.calls == 1, "still exactly one callback after a second cancel (%d)", out.calls);
    mcpmux_call_free(call);
    outcome_clear(&out);

    /* The server still works after the cancelled call. */
    char *json = call_ok(hub, "mcp_demo_echo", "{\"text\":\"after cancel\"}", NULL);
    CHECK(contains(json, "after cancel"), "call after cancel");
    mcpmux_string_free(json);
}

static void test_cancel_after_end(void) {
    outcome out = {0};
    slot s = {&out, &the_latch};
    latch_reset(&the_latch);
    mcpmux_call *call = NULL;
    CHECK(mcpmux_hub_call_tool_async(hub, "mcp_demo_echo", "{\"text\":\"quick\"}", NULL, record, &s, &call, NULL) ==
              MCPMUX_STATUS_OK,
          "start quick call");
    CHECK(wait_done(&the_latch, 1, 5000) == 1, "quick call done");
    mcpmux_call_cancel(call);
    sleep_ms(100);
    CHECK(out.calls == 1 && out.result != NULL && contains(out.result, "quick"),
          "cancel after the end changes nothing (calls %d, code %s)", out.calls, out.code);
    mcpmux_call_free(call);
    mcpmux_call_cancel(NULL);
    mcpmux_call_free(NULL);
    outcome_clear(&out);
}

static void test_freed_handle_does_not_cancel(void) {
    outcome out = {0};
    slot s = {&out, &the_latch};
    latch_reset(&the_latch);
    mcpmux_call *call = NULL;
    CHECK(mcpmux_hub_call_tool_async(hub, "mcp_demo_slow", "{\"seconds\":0.3,\"steps\":1}", NULL, record, &s, &call,
                                     NULL) == MCPMUX_STATUS_OK,
          "start call to free its handle");
    mcpmux_call_free(call);
    CHECK(wait_done(&the_latch, 1, 10000) == 1, "callback after the handle was freed");
    CHECK(out.result != NULL && out.code[0] == '\0', "freeing the handle did not cancel (%s)", out.code);
    outcome_clear(&out);
}

/* Cancel reaches the server: hang.py logs every notifications/cancelled. */
static void test_cancel_notifies_server(void) {
    const char *tmp = need_env("MCPMUX_TEST_TMP");
    char log[1024], extra[1200];
    snprintf(log, sizeof log, "%s/hang-cancel.log", tmp);
    unlink(log);
    snprintf(extra, sizeof extra, "[mcp.servers.env]\nHANG_CANCEL_LOG = \"%s\"\n", log);
    char *config = python_server_entry("hang", "hang.py", extra);
    mcpmux_hub *h = connect_text(engine, config);
    free(config);

    outcome out = {0};
    slot s = {&out, &the_latch};
    latch_reset(&the_latch);
    mcpmux_call *call = NULL;
    CHECK(mcpmux_hub_call_tool_async(h, "mcp_hang_wait_forever", NULL, NULL, record, &s, &call, NULL) ==
              MCPMUX_STATUS_OK,
          "start a call that never ends");
    sleep_ms(300);
    mcpmux_call_cancel(call);
    CHECK(wait_done(&the_latch, 1, 5000) == 1 && strcmp(out.code, "CANCELLED") == 0, "hang call cancelled: %s",
          out.code);
    int seen = 0;
    for (int i = 0; i < 50 * slow_factor() && !seen; i++) {
        FILE *f = fopen(log, "r");
        if (f != NULL) {
            char line[64] = {0};
            seen = fgets(line, sizeof line, f) != NULL && line[0] != '\0';
            fclose(f);
        }
        if (!seen) sleep_ms(100);
    }
    CHECK(seen, "the server received notifications/cancelled");
    mcpmux_call_free(call);
    outcome_clear(&out);

    /* A timeout also ends such a call, with TIMEOUT. */
    latch_reset(&the_latch);
    CHECK(mcpmux_hub_call_tool_async(h, "mcp_hang_wait_forever", "{}", "{\"timeout_ms\":300}", record, &s, NULL,
                                     NULL) == MCPMUX_STATUS_OK,
          "start a call with timeout_ms");
    CHECK(wait_done(&the_latch, 1, 10000) == 1 && strcmp(out.code, "TIMEOUT") == 0, "async timeout: %s %s",
          out.code, out.message);
    outcome_clear(&out);
    mcpmux_hub_free(h);
}

/* ---------------------------------------------------------------- inside a callback */

typedef struct {
    mcpmux_status blocking_status;
    char blocking_code[32];
    mcpmux_status nested_status;
    int nested_calls;
    char nested_result[256];
    int engine_free_returned;
    latch *latch;
} inside;

static void nested_cb(void *user_data, char *result_json, mcpmux_error *error) {
    inside *in = user_data;
    pthread_mutex_lock(&in->latch->lock);
    in->nested_calls++;
    snprintf(in->nested_result, sizeof in->nested_result, "%s", result_json ? result_json : "(null)");
    in->latch->done++;
    pthread_cond_broadcast(&in->latch->cond);
    pthread_mutex_unlock(&in->latch->lock);
    mcpmux_string_free(result_json);
    mcpmux_error_free(error);
}

static void probing_cb(void *user_data, char *result_json, mcpmux_error *error) {
    inside *in = user_data;
    mcpmux_string_free(result_json);
    mcpmux_error_free(error);

    /* A blocking call here would deadlock: it is refused at once. */
    char *out = NULL;
    mcpmux_error *err = NULL;
    in->blocking_status = mcpmux_hub_call_tool(hub, "mcp_demo_echo", "{\"text\":\"x\"}", NULL, &out, &err);
    snprintf(in->blocking_code, sizeof in->blocking_code, "%s", code_of(err));
    mcpmux_error_free(err);
    mcpmux_string_free(out);

    /* So is freeing the engine: nothing happens. */
    mcpmux_engine_free(engine);
    in->engine_free_returned = 1;

    /* Non-blocking functions work, and so does starting another call. */
    char *servers = NULL;
    if (mcpmux_hub_servers(hub, &servers, NULL) == MCPMUX_STATUS_OK) mcpmux_string_free(servers);
    in->nested_status =
        mcpmux_hub_call_tool_async(hub, "mcp_demo_echo", "{\"text\":\"nested\"}", NULL, nested_cb, in, NULL, NULL);

    pthread_mutex_lock(&in->latch->lock);
    in->latch->done++;
    pthread_cond_broadcast(&in->latch->cond);
    pthread_mutex_unlock(&in->latch->lock);
}

static void test_inside_callback(void) {
    inside in;
    memset(&in, 0, sizeof in);
    in.latch = &the_latch;
    latch_reset(&the_latch);
    CHECK(mcpmux_hub_call_tool_async(hub, "mcp_demo_echo", "{\"text\":\"outer\"}", NULL, probing_cb, &in, NULL,
                                     NULL) == MCPMUX_STATUS_OK,
          "start the probing call");
    CHECK(wait_done(&the_latch, 2, 10000) == 2, "outer and nested callbacks ran");
    CHECK(in.blocking_status == MCPMUX_STATUS_INVALID_INPUT && strcmp(in.blocking_code, "INVALID_INPUT") == 0,
          "blocking call inside a callback refused (%d %s)", (int)in.blocking_status, in.blocking_code);
    CHECK(in.engine_free_returned, "mcpmux_engine_free inside a callback returned");
    CHECK(in.nested_status == MCPMUX_STATUS_OK && in.nested_calls == 1 && contains(in.nested_result, "nested"),
          "a call started inside a callback works (%s)", in.nested_result);

    /* The engine survived the refused free. */
    char *json = call_ok(hub, "mcp_demo_echo", "{\"text\":\"engine still alive\"}", NULL);
    CHECK(contains(json, "engine still alive"), "engine alive after a refused free");
    mcpmux_string_free(json);
}

/* Freeing the hub while its calls run: the calls still end and call back. */
static void test_free_hub_during_call(void) {
    char *config = demo_config_named("short", 30);
    mcpmux_hub *h = connect_text(engine, config);
    free(config);
    outcome out = {0};
    slot s = {&out, &the_latch};
    latch_reset(&the_latch);
    CHECK(mcpmux_hub_call_tool_async(h, "mcp_short_slow", "{\"seconds\":0.3,\"steps\":1}", NULL, record, &s, NULL,
                                     NULL) == MCPMUX_STATUS_OK,
          "start a call, then free the hub");
    mcpmux_hub_free(h);
    CHECK(wait_done(&the_latch, 1, 10000) == 1, "callback after the hub was freed");
    CHECK(out.calls == 1 && out.result != NULL, "the call finished (%s %s)", out.code, out.message);
    outcome_clear(&out);
}

/* mcpmux_engine_free waits for calls in flight; their callbacks run first. */
static void test_engine_free_waits(void) {
    static outcome outs[5];
    static slot slots[5];
    latch_reset(&the_latch);
    for (int i = 0; i < 5; i++) {
        slots[i].out = &outs[i];
        slots[i].latch = &the_latch;
        CHECK(mcpmux_hub_call_tool_async(hub, "mcp_demo_slow", "{\"seconds\":0.5,\"steps\":2}", NULL, record,
                                         &slots[i], NULL, NULL) == MCPMUX_STATUS_OK,
              "start call %d before engine free", i);
    }
    int cancelled_before = count_events(events, "cancelled ");
    mcpmux_engine_free(engine);
    /* Read after engine_free returned: every callback ran before, each with
     * the server's own answer ("done after ...", sent only when the slow call
     * ran to its end), and the server was sent no cancellation. */
    pthread_mutex_lock(&the_latch.lock);
    int done = the_latch.done;
    pthread_mutex_unlock(&the_latch.lock);
    CHECK(done == 5, "engine_free returned after all 5 callbacks (%d)", done);
    int ok = 0;
    for (int i = 0; i < 5; i++) ok += outs[i].calls == 1 && contains(outs[i].result, "done after");
    CHECK(ok == 5, "all 5 calls completed with the server's answer before engine_free returned (%d)", ok);
    CHECK(count_events(events, "cancelled ") == cancelled_before, "engine_free cancelled no call");
    for (int i = 0; i < 5; i++) outcome_clear(&outs[i]);

    /* The hub outlives its engine as a handle: calls fail, free works. */
    char *json = NULL;
    mcpmux_error *err = NULL;
    expect_status("call after engine free", mcpmux_hub_call_tool(hub, "mcp_demo_echo", "{}", NULL, &json, &err), &err,
                  MCPMUX_STATUS_TRANSPORT_CLOSED, "TRANSPORT_CLOSED", "engine");
    err = NULL;
    expect_status("async call after engine free",
                  mcpmux_hub_call_tool_async(hub, "mcp_demo_echo", "{}", NULL, record, &slots[0], NULL, &err), &err,
                  MCPMUX_STATUS_TRANSPORT_CLOSED, "TRANSPORT_CLOSED", "engine");
    json = NULL;
    CHECK(mcpmux_hub_servers(hub, &json, NULL) == MCPMUX_STATUS_OK && contains(json, "\"state\":\"failed\""),
          "servers after engine free shows the closed server: %s", json);
    mcpmux_string_free(json);
    mcpmux_hub_free(hub);
}

int main(void) {
    watchdog("test_async", 180);
    main_thread = pthread_self();
    engine = new_engine("{\"worker_threads\": 4}");
    char *config = demo_config_logged("demo", 30, event_log_path(events, sizeof events, "async-demo-events.log"));
    hub = connect_text(engine, config);
    free(config);

    test_hundred_concurrent();
    test_cancel_slow_call();
    test_cancel_after_end();
    test_freed_handle_does_not_cancel();
    test_cancel_notifies_server();
    test_inside_callback();
    test_free_hub_during_call();
    test_engine_free_waits();
    return finish();
}
