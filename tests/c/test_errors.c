/*
 * Every error path of libmcpmux: NULL where a value is required, strings
 * that are not UTF-8, JSON that does not parse, bad options, bad configs,
 * unknown tools/servers/prompts/resources, server errors, timeouts, a
 * server that writes garbage, a server that fails to start; out-params
 * untouched on failure; err untouched on success; every _free(NULL).
 */
#include "common.h"

static char sentinel_byte;
#define SENTINEL ((char *)&sentinel_byte)
#define BAD_UTF8 "\xff\xfe\xc3("

static mcpmux_engine *engine;
static mcpmux_hub *hub;
static char events[1024]; /* the demo server's DEMO_EVENT_LOG */

/* Checks a failing call that has a char** out-param. */
static void expect_json_fail(const char *what, mcpmux_status st, mcpmux_error **err, char **json,
                             mcpmux_status expected, const char *code, const char *part) {
    CHECK(*json == SENTINEL, "%s: out_json written on failure", what);
    expect_status(what, st, err, expected, code, part);
}

static void test_free_null_and_accessors(void) {
    mcpmux_engine_free(NULL);
    mcpmux_hub_free(NULL);
    mcpmux_call_free(NULL);
    mcpmux_call_cancel(NULL);
    mcpmux_error_free(NULL);
    mcpmux_string_free(NULL);
    CHECK(strcmp(mcpmux_error_code(NULL), "") == 0, "mcpmux_error_code(NULL) is \"\"");
    CHECK(strcmp(mcpmux_error_message(NULL), "") == 0, "mcpmux_error_message(NULL) is \"\"");
    CHECK(mcpmux_error_status(NULL) == MCPMUX_STATUS_INVALID_INPUT, "mcpmux_error_status(NULL)");
    int64_t code = 7;
    CHECK(!mcpmux_error_rpc_code(NULL, &code) && code == 7, "mcpmux_error_rpc_code(NULL) is false");
}

static void test_engine_new(void) {
    mcpmux_engine *e = (mcpmux_engine *)SENTINEL;
    mcpmux_error *err = NULL;
    struct {
        const char *options, *part;
    } bad[] = {
        {"{bad json", "not valid JSON"},
        {"[1, 2]", "must be a JSON object"},
        {"{\"worker_threads\": 0}", "worker_threads"},
        {"{\"worker_threads\": \"two\"}", "worker_threads"},
        {"{\"worker_threads\": 2.5}", "worker_threads"},
        {"{\"worker_threads\": 100000}", "worker_threads"},
        {"{\"threads\": 2}", "unknown option 'threads'"},
        {"{\"worker_thread\": 2}", "unknown option 'worker_thread' (did you mean 'worker_threads'?"},
        {BAD_UTF8, "UTF-8"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err = NULL;
        char what[128];
        snprintf(what, sizeof what, "engine_new(%s)", i + 1 == sizeof bad / sizeof bad[0] ? "<bad utf-8>" : bad[i].options);
        mcpmux_status st = mcpmux_engine_new(bad[i].options, &e, &err);
        CHECK(e == (mcpmux_engine *)SENTINEL, "%s: out written on failure", what);
        expect_status(what, st, &err, MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", bad[i].part);
    }
    err = NULL;
    expect_status("engine_new(out NULL)", mcpmux_engine_new(NULL, NULL, &err), &err, MCPMUX_STATUS_INVALID_INPUT,
                  "INVALID_INPUT", "'out' is NULL");
    CHECK(mcpmux_engine_new("{bad", &e, NULL) == MCPMUX_STATUS_INVALID_INPUT, "err NULL: status still returned");
    /* {} is fine. */
    e = NULL;
    err = NULL;
    expect_status("engine_new({})", mcpmux_engine_new("{}", &e, &err), &err, MCPMUX_STATUS_OK, NULL, NULL);
    mcpmux_engine_free(e);
}

static void test_connect(void) {
    mcpmux_hub *h = (mcpmux_hub *)SENTINEL;
    mcpmux_error *err = NULL;
    expect_status("connect(engine NULL)", mcpmux_hub_connect(NULL, "", &h, &err), &err, MCPMUX_STATUS_INVALID_INPUT,
                  "INVALID_INPUT", "'engine' is NULL");
    err = NULL;
    expect_status("connect(config NULL)", mcpmux_hub_connect(engine, NULL, &h, &err), &err,
                  MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "'config_text' is NULL");
    err = NULL;
    expect_status("connect(out NULL)", mcpmux_hub_connect(engine, "", NULL, &err), &err, MCPMUX_STATUS_INVALID_INPUT,
                  "INVALID_INPUT", "'out' is NULL");
    err = NULL;
    expect_status("connect(bad utf-8)", mcpmux_hub_connect(engine, BAD_UTF8, &h, &err), &err,
                  MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "UTF-8");
    err = NULL;
    expect_status("connect_with_options(misspelt key)",
                  mcpmux_hub_connect_with_options(engine, "", "{\"startup_timeout\": 1}", &h, &err), &err,
                  MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT",
                  "unknown option 'startup_timeout' (did you mean 'startup_timeout_ms'?");
    CHECK(h == (mcpmux_hub *)SENTINEL, "connect_with_options: out untouched on failure");
    struct {
        const char *config, *part;
    } bad[] = {
        {"[[mcp.servers]\nname = ", NULL},
        {"{\"mcpServers\": {", NULL},
        {"[[mcp.servers]]\nname = \"x\"\ntype = \"stdio\"\n", "command"},
        {"[[mcp.servers]]\nname = \"x\"\ntype = \"carrier-pigeon\"\ncommand = \"x\"\n", "carrier-pigeon"},
        {"[[mcp.servers]]\nname = \"x\"\ncommand = \"${MCPMUX_TEST_SURELY_UNSET_VAR}\"\n",
         "MCPMUX_TEST_SURELY_UNSET_VAR"},
        {"[[mcp.servers]]\nname = \"x\"\ncommand = \"a\"\n[[mcp.servers]]\nname = \"x\"\ncommand = \"b\"\n", "x"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err = NULL;
        char what[64];
        snprintf(what, sizeof what, "connect(bad config %zu)", i);
        expect_status(what, mcpmux_hub_connect(engine, bad[i].config, &h, &err), &err, MCPMUX_STATUS_CONFIG_INVALID,
                      "CONFIG_INVALID", bad[i].part);
    }
    err = NULL;
    expect_status("connect_file(missing)", mcpmux_hub_connect_file(engine, "/nonexistent/mcpmux.toml", &h, &err), &err,
                  MCPMUX_STATUS_CONFIG_INVALID, "CONFIG_INVALID", "/nonexistent/mcpmux.toml");
    err = NULL;
    expect_status("connect_file(path NULL)", mcpmux_hub_connect_file(engine, NULL, &h, &err), &err,
                  MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "'path' is NULL");
    err = NULL;
    expect_status("connect_file(bad utf-8)", mcpmux_hub_connect_file(engine, BAD_UTF8, &h, &err), &err,
                  MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "UTF-8");
    CHECK(h == (mcpmux_hub *)SENTINEL, "connect never wrote out on failure");
}

static void test_listing(void) {
    char *json = SENTINEL;
    mcpmux_error *err = NULL;
    expect_json_fail("servers(hub NULL)", mcpmux_hub_servers(NULL, &json, &err), &err, &json,
                     MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "'hub' is NULL");
    err = NULL;
    expect_status("servers(out NULL)", mcpmux_hub_servers(hub, NULL, &err), &err, MCPMUX_STATUS_INVALID_INPUT,
                  "INVALID_INPUT", "'out_json' is NULL");
    err = NULL;
    expect_json_fail("list_tools(hub NULL)", mcpmux_hub_list_tools(NULL, &json, &err), &err, &json,
                     MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "'hub' is NULL");
    err = NULL;
    expect_status("list_tools(out NULL)", mcpmux_hub_list_tools(hub, NULL, &err), &err, MCPMUX_STATUS_INVALID_INPUT,
                  "INVALID_INPUT", "'out_json' is NULL");
    err = NULL;
    expect_json_fail("tools_for(format NULL)", mcpmux_hub_tools_for(hub, NULL, &json, &err), &err, &json,
                     MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "'format' is NULL");
    err = NULL;
    expect_json_fail("tools_for(yaml)", mcpmux_hub_tools_for(hub, "yaml", &json, &err), &err, &json,
                     MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "yaml");
    err = NULL;
    expect_json_fail("tools_for(bad utf-8)", mcpmux_hub_tools_for(hub, BAD_UTF8, &json, &err), &err, &json,
                     MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "UTF-8");
    err = NULL;
    expect_json_fail("list_resources(unknown server)", mcpmux_hub_list_resources(hub, "nope", &json, &err), &err,
                     &json, MCPMUX_STATUS_UNKNOWN_SERVER, "UNKNOWN_SERVER", "nope");
    err = NULL;
    expect_json_fail("list_prompts(disabled server)", mcpmux_hub_list_prompts(hub, "off", &json, &err), &err, &json,
                     MCPMUX_STATUS_UNKNOWN_SERVER, "UNKNOWN_SERVER", "disabled");
    err = NULL;
    expect_json_fail("list_prompts(hub NULL)", mcpmux_hub_list_prompts(NULL, NULL, &json, &err), &err, &json,
                     MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "'hub' is NULL");
    err = NULL;
    expect_json_fail("list_resources(bad utf-8 server)", mcpmux_hub_list_resources(hub, BAD_UTF8, &json, &err), &err,
                     &json, MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "'server'");
}

static void test_call_tool(void) {
    char *json = SENTINEL;
    mcpmux_error *err = NULL;
    expect_json_fail("call(hub NULL)", mcpmux_hub_call_tool(NULL, "mcp_demo_echo", NULL, NULL, &json, &err), &err,
                     &json, MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "'hub' is NULL");
    err = NULL;
    expect_json_fail("call(name NULL)", mcpmux_hub_call_tool(hub, NULL, NULL, NULL, &json, &err), &err, &json,
                     MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "'name' is NULL");
    err = NULL;
    expect_status("call(out NULL)", mcpmux_hub_call_tool(hub, "mcp_demo_echo", NULL, NULL, NULL, &err), &err,
                  MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "'out_json' is NULL");
    err = NULL;
    expect_json_fail("call(name bad utf-8)", mcpmux_hub_call_tool(hub, BAD_UTF8, NULL, NULL, &json, &err), &err, &json,
                     MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "'name' is not valid UTF-8");
    struct {
        const char *args, *options, *part;
    } bad[] = {
        {"{\"text\": ", NULL, "'args_json' is not valid JSON"},
        {"[1, 2]", NULL, "'args_json' must be a JSON object"},
        {"42", NULL, "'args_json' must be a JSON object"},
        {BAD_UTF8, NULL, "'args_json' is not valid UTF-8"},
        {"{}", "{timeout", "'options_json' is not valid JSON"},
        {"{}", "\"fast\"", "'options_json' must be a JSON object"},
        {"{}", "{\"deadline\": 5}", "unknown option 'deadline'"},
        /* A misspelt key is named with the nearest known one. */
        {"{}", "{\"timeout\": 5}", "unknown option 'timeout' (did you mean 'timeout_ms'?"},
        {"{}", "{\"task_tll_seconds\": 5}", "(did you mean 'task_ttl_seconds'?"},
        {"{}", "{\"traceparnt\": \"x\"}", "(did you mean 'traceparent'?"},
        {"{}", "{\"timeout_ms\": -5}", "timeout_ms"},
        {"{}", "{\"timeout_ms\": 0}", "timeout_ms"},
        {"{}", "{\"timeout_seconds\": \"soon\"}", "timeout_seconds"},
        {"{}", "{\"timeout_ms\": 100, \"timeout_seconds\": 1}", "twice"},
        {"{}", BAD_UTF8, "'options_json' is not valid UTF-8"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err = NULL;
        char what[64];
        snprintf(what, sizeof what, "call(bad args/options %zu)", i);
        expect_json_fail(what, mcpmux_hub_call_tool(hub, "mcp_demo_echo", bad[i].args, bad[i].options, &json, &err),
                         &err, &json, MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", bad[i].part);
    }
    err = NULL;
    expect_json_fail("call(unknown tool)", mcpmux_hub_call_tool(hub, "mcp_demo_nope", NULL, NULL, &json, &err), &err,
                     &json, MCPMUX_STATUS_UNKNOWN_TOOL, "UNKNOWN_TOOL", "mcp_demo_nope");
    err = NULL;
    expect_json_fail("call(tool of a failed server)",
                     mcpmux_hub_call_tool(hub, "mcp_missing_anything", NULL, NULL, &json, &err), &err, &json,
                     MCPMUX_STATUS_CONNECT_FAILED, "CONNECT_FAILED", "server 'missing' failed");
    err = NULL;
    expect_json_fail("call(tool of a disabled server)", mcpmux_hub_call_tool(hub, "mcp_off_x", NULL, NULL, &json, &err),
                     &err, &json, MCPMUX_STATUS_UNKNOWN_TOOL, "UNKNOWN_TOOL", "disabled");
    err = NULL;
    /* The server would answer after an hour and its own timeout is an hour
     * too: only the call's timeout_ms ends the call (ignored, the watchdog
     * fails the program), and the server is told to stop it. */
    int cancelled_before = count_events(events, "cancelled ");
    expect_json_fail("call(timeout)",
                     mcpmux_hub_call_tool(hub, "mcp_demo_slow", "{\"seconds\":3600,\"steps\":0}",
                                          "{\"timeout_ms\":300}", &json, &err),
                     &err, &json, MCPMUX_STATUS_TIMEOUT, "TIMEOUT", "no response to 'tools/call'");
    CHECK(wait_events(events, "cancelled ", cancelled_before + 1) == cancelled_before + 1,
          "the timed-out call was cancelled at the server");

    /* err untouched on success. */
    mcpmux_error *untouched = (mcpmux_error *)SENTINEL;
    char *ok = NULL;
    CHECK(mcpmux_hub_call_tool(hub, "mcp_demo_echo", "{\"text\":\"a\"}", NULL, &ok, &untouched) == MCPMUX_STATUS_OK &&
              untouched == (mcpmux_error *)SENTINEL,
          "err not written on success");
    mcpmux_string_free(ok);
}

static int async_called = 0;
static void count_cb(void *user_data, char *result_json, mcpmux_error *error) {
    (void)user_data;
    __atomic_add_fetch(&async_called, 1, __ATOMIC_SEQ_CST);
    mcpmux_string_free(result_json);
    mcpmux_error_free(error);
}

static void test_call_tool_async(void) {
    mcpmux_call *call = (mcpmux_call *)SENTINEL;
    mcpmux_error *err = NULL;
    expect_status("async(cb NULL)", mcpmux_hub_call_tool_async(hub, "mcp_demo_echo", NULL, NULL, NULL, NULL, &call, &err),
                  &err, MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "'cb' is NULL");
    err = NULL;
    expect_status("async(hub NULL)", mcpmux_hub_call_tool_async(NULL, "x", NULL, NULL, count_cb, NULL, &call, &err),
                  &err, MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "'hub' is NULL");
    err = NULL;
    expect_status("async(name NULL)", mcpmux_hub_call_tool_async(hub, NULL, NULL, NULL, count_cb, NULL, &call, &err),
                  &err, MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "'name' is NULL");
    err = NULL;
    expect_status("async(bad args)",
                  mcpmux_hub_call_tool_async(hub, "mcp_demo_echo", "{oops", NULL, count_cb, NULL, &call, &err), &err,
                  MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "'args_json' is not valid JSON");
    err = NULL;
    expect_status("async(bad options)",
                  mcpmux_hub_call_tool_async(hub, "mcp_demo_echo", NULL, "{\"x\":1}", count_cb, NULL, &call, &err),
                  &err, MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "unknown option 'x'");
    CHECK(call == (mcpmux_call *)SENTINEL, "out_call untouched on failure");
    sleep_ms(200);
    CHECK(__atomic_load_n(&async_called, __ATOMIC_SEQ_CST) == 0, "no callback for a call that did not start");

    /* An unknown tool is reported through the callback. */
    outcome out = {0};
    slot s = {&out, &the_latch};
    latch_reset(&the_latch);
    CHECK(mcpmux_hub_call_tool_async(hub, "mcp_demo_nope", NULL, NULL, record, &s, NULL, NULL) == MCPMUX_STATUS_OK,
          "async unknown tool starts");
    CHECK(wait_done(&the_latch, 1, 5000) == 1 && strcmp(out.code, "UNKNOWN_TOOL") == 0 && out.result == NULL,
          "async unknown tool: callback with UNKNOWN_TOOL (%s)", out.code);
    outcome_clear(&out);
}

static void test_resources_prompts_refresh(void) {
    char *json = SENTINEL;
    mcpmux_error *err = NULL;
    expect_json_fail("read(uri NULL)", mcpmux_hub_read_resource(hub, NULL, NULL, &json, &err), &err, &json,
                     MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "'uri' is NULL");
    err = NULL;
    expect_status("read(out NULL)", mcpmux_hub_read_resource(hub, "demo://readme", NULL, NULL, &err), &err,
                  MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "'out_json' is NULL");
    err = NULL;
    expect_json_fail("read(unknown server)", mcpmux_hub_read_resource(hub, "demo://readme", "nope", &json, &err), &err,
                     &json, MCPMUX_STATUS_UNKNOWN_SERVER, "UNKNOWN_SERVER", "nope");
    err = NULL;
    mcpmux_status st = mcpmux_hub_read_resource(hub, "demo://nothing-here", "demo", &json, &err);
    int64_t rpc = 0;
    CHECK(err != NULL && mcpmux_error_rpc_code(err, &rpc) && rpc == -32002, "SERVER_ERROR carries rpc code -32002 (%lld)",
          (long long)rpc);
    CHECK(err != NULL && !mcpmux_error_rpc_code(err, NULL), "rpc_code with NULL out is false");
    expect_json_fail("read(missing resource)", st, &err, &json, MCPMUX_STATUS_SERVER_ERROR, "SERVER_ERROR",
                     "demo://nothing-here");

    err = NULL;
    expect_json_fail("prompt(name NULL)", mcpmux_hub_get_prompt(hub, NULL, NULL, NULL, &json, &err), &err, &json,
                     MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "'name' is NULL");
    err = NULL;
    expect_json_fail("prompt(bad args)", mcpmux_hub_get_prompt(hub, "greet", "{\"name\":", NULL, &json, &err), &err,
                     &json, MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "'args_json' is not valid JSON");
    err = NULL;
    expect_json_fail("prompt(unknown)", mcpmux_hub_get_prompt(hub, "nope", NULL, NULL, &json, &err), &err, &json,
                     MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "nope");
    err = NULL;
    st = mcpmux_hub_get_prompt(hub, "nope", NULL, "demo", &json, &err);
    rpc = 0;
    CHECK(err != NULL && mcpmux_error_rpc_code(err, &rpc) && rpc == -32602, "prompt server error code -32602");
    expect_json_fail("prompt(unknown, server named)", st, &err, &json, MCPMUX_STATUS_SERVER_ERROR, "SERVER_ERROR",
                     "Unknown prompt");
    err = NULL;
    expect_json_fail("prompt(missing argument)", mcpmux_hub_get_prompt(hub, "greet", "{}", "demo", &json, &err), &err,
                     &json, MCPMUX_STATUS_SERVER_ERROR, "SERVER_ERROR", "name");
    err = NULL;
    int64_t untouched = 5;
    mcpmux_hub_get_prompt(hub, "nope", NULL, NULL, &json, &err);
    CHECK(err != NULL && !mcpmux_error_rpc_code(err, &untouched) && untouched == 5,
          "rpc_code is false for other codes");
    mcpmux_error_free(err);

    err = NULL;
    expect_status("refresh(server NULL)", mcpmux_hub_refresh(hub, NULL, &err), &err, MCPMUX_STATUS_INVALID_INPUT,
                  "INVALID_INPUT", "'server' is NULL");
    err = NULL;
    expect_status("refresh(unknown)", mcpmux_hub_refresh(hub, "nope", &err), &err, MCPMUX_STATUS_UNKNOWN_SERVER,
                  "UNKNOWN_SERVER", "nope");
    err = NULL;
    expect_status("refresh(disabled)", mcpmux_hub_refresh(hub, "off", &err), &err, MCPMUX_STATUS_UNKNOWN_SERVER,
                  "UNKNOWN_SERVER", "disabled");
    err = NULL;
    expect_status("refresh(cannot start)", mcpmux_hub_refresh(hub, "missing", &err), &err,
                  MCPMUX_STATUS_CONNECT_FAILED, "CONNECT_FAILED", "mcpmux-no-such-server");
    err = NULL;
    expect_status("close(hub NULL)", mcpmux_hub_close(NULL, &err), &err, MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT",
                  "'hub' is NULL");
}

/* Servers that fail to start, and one that writes garbage. */
static void test_faulty_servers(void) {
    char *config = concat_free(python_server_entry("early", "exit_during_init.py", NULL),
                               concat_free(python_server_entry("slowpoke", "hang_in_init.py", "timeout_seconds = 1"),
                                           python_server_entry("garbage", "garbage_stdout.py", NULL)));
    mcpmux_hub *h = connect_text(engine, config);
    free(config);
    char *json = NULL;
    CHECK(mcpmux_hub_servers(h, &json, NULL) == MCPMUX_STATUS_OK, "servers of faulty hub");
    CHECK(count_of(json, "\"error_code\":\"CONNECT_FAILED\"") == 2, "two servers failed with CONNECT_FAILED: %s",
          json);
    CHECK(contains(json, "database at /nonexistent is unavailable"), "the failed server's stderr in its error: %s",
          json);
    mcpmux_string_free(json);

    /* The tool list says which servers are missing from it, as `mcpmux tools` does. */
    char *note = SENTINEL;
    CHECK(mcpmux_hub_failed_servers_note(h, &note, NULL) == MCPMUX_STATUS_OK, "failed_servers_note");
    CHECK(note != SENTINEL && note != NULL, "a note when servers failed");
    CHECK(contains(note, "early (CONNECT_FAILED)") && contains(note, "slowpoke (CONNECT_FAILED)"),
          "the note names both failed servers: %s", note);
    mcpmux_string_free(note);

    json = SENTINEL;
    mcpmux_error *err = NULL;
    mcpmux_status st = mcpmux_hub_call_tool(h, "mcp_garbage_garble", NULL, "{\"timeout_ms\": 3000}", &json, &err);
    CHECK(json == SENTINEL, "garbage: no result");
    expect_status("garbage on stdout", st, &err, MCPMUX_STATUS_PROTOCOL_ERROR, "PROTOCOL_ERROR", "not JSON-RPC");
    mcpmux_hub_free(h);
}

int main(void) {
    watchdog("test_errors", 120);
    test_free_null_and_accessors();
    test_engine_new();
    engine = new_engine(NULL);
    test_connect();
    /* The demo server's own timeout is an hour: see call(timeout). */
    char *config = concat_free(demo_config_logged("demo", 3600, event_log_path(events, sizeof events, "errors-demo-events.log")),
                               concat_free(strdup("[[mcp.servers]]\nname = \"off\"\ncommand = \"true\"\n"
                                                  "enabled = false\n"),
                                           strdup("[[mcp.servers]]\nname = \"missing\"\n"
                                                  "command = \"/nonexistent/mcpmux-no-such-server\"\n")));
    hub = connect_text(engine, config);
    free(config);
    test_listing();
    test_call_tool();
    test_call_tool_async();
    test_resources_prompts_refresh();
    test_faulty_servers();
    mcpmux_hub_free(hub);
    mcpmux_engine_free(engine);
    return finish();
}
