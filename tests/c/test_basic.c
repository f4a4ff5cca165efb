/*
 * libmcpmux against the demo server: version, engine, connect (text and
 * file), servers, list tools, tools_for, blocking calls (a result, a tool
 * error, structured content), resources, prompts, refresh, close.
 */
#include "common.h"

static void test_version(void) {
    const char *v = mcpmux_version();
    CHECK(v != NULL && strcmp(v, MCPMUX_VERSION) == 0, "mcpmux_version() %s == MCPMUX_VERSION %s", v,
          MCPMUX_VERSION);
    char expect[64];
    snprintf(expect, sizeof expect, "%d.%d.%d", MCPMUX_VERSION_MAJOR, MCPMUX_VERSION_MINOR, MCPMUX_VERSION_PATCH);
    CHECK(strcmp(expect, MCPMUX_VERSION) == 0, "version macros agree: %s vs %s", expect, MCPMUX_VERSION);
}

static void test_servers_and_tools(mcpmux_hub *hub) {
    char *json = NULL;
    mcpmux_error *err = NULL;
    expect_status("servers", mcpmux_hub_servers(hub, &json, &err), &err, MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(json != NULL && json[0] == '[', "servers is a JSON array: %s", json);
    CHECK(contains(json, "\"name\":\"demo\"") && contains(json, "\"state\":\"connected\""),
          "demo connected: %s", json);
    CHECK(contains(json, "\"name\":\"off\"") && contains(json, "\"state\":\"disabled\""), "off disabled: %s",
          json);
    CHECK(contains(json, "\"name\":\"missing\"") && contains(json, "\"state\":\"failed\"") &&
              contains(json, "\"error_code\":\"CONNECT_FAILED\""),
          "missing failed with CONNECT_FAILED: %s", json);
    CHECK(contains(json, "\"type\":\"stdio\"") && contains(json, "\"protocol_version\":") &&
              contains(json, "\"tool_count\":"),
          "servers has the --json members: %s", json);
    mcpmux_string_free(json);

    json = NULL;
    err = NULL;
    expect_status("list_tools", mcpmux_hub_list_tools(hub, &json, &err), &err, MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(json != NULL && json[0] == '[', "tools is a JSON array");
    const char *names[] = {"mcp_demo_echo", "mcp_demo_add", "mcp_demo_slow", "mcp_demo_fail", "mcp_demo_crash"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char needle[80];
        snprintf(needle, sizeof needle, "\"name\":\"%s\"", names[i]);
        CHECK(contains(json, needle), "tools lists %s", names[i]);
    }
    CHECK(contains(json, "\"server\":\"demo\"") && contains(json, "\"tool\":\"echo\"") &&
              contains(json, "\"input_schema\":"),
          "tools has the --json members");
    mcpmux_string_free(json);

    /* Search: the tool the query is about first; limit 1 gives one. */
    json = NULL;
    err = NULL;
    expect_status("search_tools", mcpmux_hub_search_tools(hub, "add two numbers", MCPMUX_SEARCH_DEFAULT_LIMIT, &json, &err), &err,
                  MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(json != NULL && strncmp(json, "[{\"name\":\"mcp_demo_add\"", strlen("[{\"name\":\"mcp_demo_add\"")) == 0, "search ranks add first: %s", json);
    mcpmux_string_free(json);
    json = NULL;
    CHECK(mcpmux_hub_search_tools(hub, "echo", 1, &json, NULL) == MCPMUX_STATUS_OK && json != NULL &&
              count_of(json, "\"input_schema\"") == 1,
          "search with limit 1 gives one tool: %s", json);
    mcpmux_string_free(json);
    err = NULL;
    expect_status("search_tools(query NULL)", mcpmux_hub_search_tools(hub, NULL, 0, &json, &err), &err,
                  MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "query");

    const char *formats[] = {"anthropic", "openai", "openai-responses", "mcp"};
    const char *marks[] = {"\"input_schema\"", "\"function\"", "\"type\":\"function\"", "\"inputSchema\""};
    for (size_t i = 0; i < 4; i++) {
        json = NULL;
        err = NULL;
        char what[64];
        snprintf(what, sizeof what, "tools_for %s", formats[i]);
        expect_status(what, mcpmux_hub_tools_for(hub, formats[i], &json, &err), &err, MCPMUX_STATUS_OK, NULL, NULL);
        CHECK(contains(json, "mcp_demo_echo") && contains(json, marks[i]), "%s renders: %.200s", what, json);
        mcpmux_string_free(json);
    }
}

static void test_calls(mcpmux_hub *hub) {
    char *json = call_ok(hub, "mcp_demo_echo", "{\"text\":\"hello from C\"}", NULL);
    CHECK(contains(json, "hello from C") && contains(json, "\"content\""), "echo result: %s", json);
    CHECK(!contains(json, "\"isError\":true"), "echo is not an error");
    mcpmux_string_free(json);

    json = call_ok(hub, "mcp_demo_add", "{\"a\":2,\"b\":40}", "{\"timeout_ms\":10000}");
    CHECK(contains(json, "\"structuredContent\"") && contains(json, "42"), "add result: %s", json);
    mcpmux_string_free(json);

    json = call_ok(hub, "mcp_demo_add", "{\"a\":1.5,\"b\":1}", "{\"timeout_seconds\":10}");
    CHECK(contains(json, "2.5"), "add with timeout_seconds: %s", json);
    mcpmux_string_free(json);

    /* A tool's own failure is a success status with isError in the JSON. */
    json = call_ok(hub, "mcp_demo_fail", NULL, NULL);
    CHECK(contains(json, "\"isError\":true") && contains(json, "this tool always fails"), "fail result: %s",
          json);
    mcpmux_string_free(json);

    /* Non-ASCII text passes through unchanged. */
    json = call_ok(hub, "mcp_demo_echo", "{\"text\":\"gr\xc3\xbc\xc3\x9f dich \xe2\x9c\x93\"}", NULL);
    CHECK(contains(json, "gr\xc3\xbc\xc3\x9f dich \xe2\x9c\x93") || contains(json, "\\u00fc"),
          "UTF-8 round trip: %s", json);
    mcpmux_string_free(json);

    /* err may be NULL on success and the out-param is all that is written. */
    json = NULL;
    CHECK(mcpmux_hub_call_tool(hub, "mcp_demo_echo", "{\"text\":\"x\"}", NULL, &json, NULL) == MCPMUX_STATUS_OK,
          "call with err == NULL");
    mcpmux_string_free(json);
}

static void test_resources_and_prompts(mcpmux_hub *hub) {
    char *json = NULL;
    mcpmux_error *err = NULL;
    expect_status("list_resources", mcpmux_hub_list_resources(hub, NULL, &json, &err), &err, MCPMUX_STATUS_OK,
                  NULL, NULL);
    CHECK(contains(json, "demo://readme") && contains(json, "\"resourceTemplates\"") &&
              contains(json, "demo://item/{id}") && contains(json, "\"server\":\"demo\""),
          "resources: %s", json);
    mcpmux_string_free(json);

    json = NULL;
    err = NULL;
    expect_status("read_resource", mcpmux_hub_read_resource(hub, "demo://readme", NULL, &json, &err), &err,
                  MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(contains(json, "\"contents\"") && contains(json, "demo://readme"), "read readme: %.200s", json);
    mcpmux_string_free(json);

    json = NULL;
    err = NULL;
    expect_status("read_resource with server", mcpmux_hub_read_resource(hub, "demo://item/7", "demo", &json, &err),
                  &err, MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(contains(json, "item 7"), "read template item: %s", json);
    mcpmux_string_free(json);

    json = NULL;
    err = NULL;
    expect_status("list_prompts", mcpmux_hub_list_prompts(hub, NULL, &json, &err), &err, MCPMUX_STATUS_OK, NULL,
                  NULL);
    CHECK(contains(json, "\"name\":\"greet\"") && contains(json, "\"server\":\"demo\""), "prompts: %s", json);
    mcpmux_string_free(json);

    json = NULL;
    err = NULL;
    expect_status("get_prompt", mcpmux_hub_get_prompt(hub, "greet", "{\"name\":\"Ada\"}", NULL, &json, &err), &err,
                  MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(contains(json, "Please greet Ada warmly.") && contains(json, "\"messages\""), "greet: %s", json);
    mcpmux_string_free(json);

    json = NULL;
    err = NULL;
    expect_status("get_prompt with server",
                  mcpmux_hub_get_prompt(hub, "greet", "{\"name\":\"Bo\"}", "demo", &json, &err), &err,
                  MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(contains(json, "Please greet Bo warmly."), "greet Bo: %s", json);
    mcpmux_string_free(json);
}

static void test_refresh_and_close(mcpmux_hub *hub) {
    mcpmux_error *err = NULL;
    expect_status("refresh", mcpmux_hub_refresh(hub, "demo", &err), &err, MCPMUX_STATUS_OK, NULL, NULL);
    char *json = call_ok(hub, "mcp_demo_echo", "{\"text\":\"after refresh\"}", NULL);
    CHECK(contains(json, "after refresh"), "call after refresh: %s", json);
    mcpmux_string_free(json);

    err = NULL;
    expect_status("close", mcpmux_hub_close(hub, &err), &err, MCPMUX_STATUS_OK, NULL, NULL);
    json = NULL;
    err = NULL;
    expect_status("call after close", mcpmux_hub_call_tool(hub, "mcp_demo_echo", "{\"text\":\"x\"}", NULL, &json, &err),
                  &err, MCPMUX_STATUS_TRANSPORT_CLOSED, "TRANSPORT_CLOSED", "closed");
    CHECK(json == NULL, "no result after close");
    /* A second close is harmless. */
    err = NULL;
    expect_status("close twice", mcpmux_hub_close(hub, &err), &err, MCPMUX_STATUS_OK, NULL, NULL);
}

static void test_connect_file(mcpmux_engine *engine) {
    const char *tmp = need_env("MCPMUX_TEST_TMP");
    char path[1024];
    snprintf(path, sizeof path, "%s/basic-config.json", tmp);
    FILE *f = fopen(path, "w");
    if (f == NULL) die("cannot write %s", path);
    fprintf(f, "{\"mcpServers\": {\"jdemo\": {\"command\": \"%s\"}}}\n", need_env("MCPMUX_DEMO_SERVER"));
    fclose(f);

    mcpmux_hub *hub = NULL;
    mcpmux_error *err = NULL;
    expect_status("connect_file", mcpmux_hub_connect_file(engine, path, &hub, &err), &err, MCPMUX_STATUS_OK, NULL,
                  NULL);
    if (hub == NULL) return;
    char *json = call_ok(hub, "mcp_jdemo_add", "{\"a\":1,\"b\":2}", NULL);
    CHECK(contains(json, "3"), "call through a JSON config file: %s", json);
    mcpmux_string_free(json);
    mcpmux_hub_free(hub);
}

int main(void) {
    watchdog("test_basic", 120);
    test_version();
    mcpmux_engine *engine = new_engine("{\"worker_threads\": 2}");
    char *config = concat_free(demo_config(),
                               concat_free(strdup("[[mcp.servers]]\nname = \"off\"\ncommand = \"true\"\n"
                                                  "enabled = false\n"),
                                           strdup("[[mcp.servers]]\nname = \"missing\"\n"
                                                  "command = \"/nonexistent/mcpmux-no-such-server\"\n")));
    mcpmux_hub *hub = connect_text(engine, config);
    free(config);

    test_servers_and_tools(hub);
    test_calls(hub);
    test_resources_and_prompts(hub);
    test_refresh_and_close(hub);
    mcpmux_hub_free(hub);
    test_connect_file(engine);

    /* A second engine with default options lives beside the first. */
    mcpmux_engine *other = new_engine(NULL);
    mcpmux_hub *hub2 = connect_text(other, "[[mcp.servers]]\nname = \"d\"\ncommand = \"${MCPMUX_DEMO_SERVER}\"\n");
    char *json = call_ok(hub2, "mcp_d_echo", "{\"text\":\"env expansion\"}", NULL);
    CHECK(contains(json, "env expansion"), "${VAR} expansion in config text: %s", json);
    mcpmux_string_free(json);
    mcpmux_hub_free(hub2);
    mcpmux_engine_free(other);

    mcpmux_engine_free(engine);
    return finish();
}
