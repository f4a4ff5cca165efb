/*
 * libmcpmux against the reference server @modelcontextprotocol/server-everything
 * (stdio): connect, list, blocking calls, 100 concurrent callback calls,
 * cancel of a long-running operation, a resource and a prompt.
 */
#include "common.h"

#define N 100

int main(void) {
    watchdog("test_everything", 180);
    pthread_t main_thread = pthread_self();
    mcpmux_engine *engine = new_engine(NULL);
    const char *node = need_env("MCPMUX_NODE");
    const char *js = need_env("MCPMUX_EVERYTHING");
    char config[4096];
    snprintf(config, sizeof config,
             "{\"mcpServers\": {\"everything\": {\"command\": \"%s\", \"args\": [\"%s\", \"stdio\"]}}}", node, js);
    mcpmux_hub *hub = connect_text(engine, config);

    char *json = NULL;
    CHECK(mcpmux_hub_servers(hub, &json, NULL) == MCPMUX_STATUS_OK, "servers");
    CHECK(contains(json, "\"state\":\"connected\"") && contains(json, "mcp-servers/everything"),
          "server-everything connected: %s", json);
    mcpmux_string_free(json);

    json = NULL;
    CHECK(mcpmux_hub_list_tools(hub, &json, NULL) == MCPMUX_STATUS_OK, "list_tools");
    const char *names[] = {"mcp_everything_echo", "mcp_everything_get-sum", "mcp_everything_trigger-long-running-operation",
                           "mcp_everything_get-structured-content"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char needle[128];
        snprintf(needle, sizeof needle, "\"name\":\"%s\"", names[i]);
        CHECK(contains(json, needle), "lists %s", names[i]);
    }
    CHECK(count_of(json, "\"server\":\"everything\"") >= 10, "at least 10 tools");
    mcpmux_string_free(json);

    json = call_ok(hub, "mcp_everything_echo", "{\"message\":\"hi from C\"}", NULL);
    CHECK(contains(json, "Echo: hi from C"), "echo: %s", json);
    mcpmux_string_free(json);
    json = call_ok(hub, "mcp_everything_get-sum", "{\"a\":2,\"b\":3}", "{\"timeout_seconds\": 20}");
    CHECK(contains(json, "The sum of 2 and 3 is 5."), "get-sum: %s", json);
    mcpmux_string_free(json);
    json = call_ok(hub, "mcp_everything_get-structured-content", "{\"location\":\"New York\"}", NULL);
    CHECK(contains(json, "\"structuredContent\"") && contains(json, "temperature"), "structured: %s", json);
    mcpmux_string_free(json);
    /* The server answers an unknown tool with an isError result. */
    mcpmux_error *err = NULL;
    json = NULL;
    expect_status("unknown hub tool", mcpmux_hub_call_tool(hub, "mcp_everything_nope", NULL, NULL, &json, &err), &err,
                  MCPMUX_STATUS_UNKNOWN_TOOL, "UNKNOWN_TOOL", NULL);

    /* 100 concurrent callback calls. */
    static outcome outs[N];
    static slot slots[N];
    latch_reset(&the_latch);
    for (int i = 0; i < N; i++) {
        char args[64];
        snprintf(args, sizeof args, "{\"a\":%d,\"b\":1000}", i);
        slots[i].out = &outs[i];
        slots[i].latch = &the_latch;
        CHECK(mcpmux_hub_call_tool_async(hub, "mcp_everything_get-sum", args, NULL, record, &slots[i], NULL, NULL) ==
                  MCPMUX_STATUS_OK,
              "start get-sum %d", i);
    }
    CHECK(wait_done(&the_latch, N, 30000) == N, "100 callbacks");
    sleep_ms(200);
    int ok = 0;
    for (int i = 0; i < N; i++) {
        char needle[96];
        snprintf(needle, sizeof needle, "The sum of %d and 1000 is %d.", i, i + 1000);
        ok += outs[i].calls == 1 && contains(outs[i].result, needle) && !pthread_equal(outs[i].thread, main_thread);
    }
    CHECK(ok == N, "each callback once, on an engine thread, with its own sum (%d of %d)", ok, N);
    for (int i = 0; i < N; i++) outcome_clear(&outs[i]);

    /* Cancel a long-running operation: it would end after an hour, so a
     * callback with CANCELLED comes from the cancel (the wait is a guard). */
    outcome out = {0};
    slot s = {&out, &the_latch};
    latch_reset(&the_latch);
    mcpmux_call *call = NULL;
    CHECK(mcpmux_hub_call_tool_async(hub, "mcp_everything_trigger-long-running-operation",
                                     "{\"duration\":3600,\"steps\":3600}", NULL, record, &s, &call,
                                     NULL) == MCPMUX_STATUS_OK,
          "start long-running operation");
    sleep_ms(500);
    CHECK(wait_done(&the_latch, 1, 1) == 0, "not done before cancel");
    mcpmux_call_cancel(call);
    CHECK(wait_done(&the_latch, 1, 60000) == 1 && strcmp(out.code, "CANCELLED") == 0, "long operation cancelled: %s",
          out.code);
    mcpmux_call_free(call);
    outcome_clear(&out);

    /* The server goes on after the cancel. */
    json = call_ok(hub, "mcp_everything_echo", "{\"message\":\"after cancel\"}", NULL);
    CHECK(contains(json, "Echo: after cancel"), "echo after cancel");
    mcpmux_string_free(json);

    json = NULL;
    err = NULL;
    expect_status("read a static resource",
                  mcpmux_hub_read_resource(hub, "demo://resource/static/document/features.md", NULL, &json, &err), &err,
                  MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(contains(json, "\"contents\""), "resource contents");
    mcpmux_string_free(json);
    json = NULL;
    err = NULL;
    expect_status("get simple-prompt", mcpmux_hub_get_prompt(hub, "simple-prompt", NULL, NULL, &json, &err), &err,
                  MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(contains(json, "\"messages\""), "prompt messages");
    mcpmux_string_free(json);

    err = NULL;
    expect_status("close", mcpmux_hub_close(hub, &err), &err, MCPMUX_STATUS_OK, NULL, NULL);
    mcpmux_hub_free(hub);
    mcpmux_engine_free(engine);
    return finish();
}
