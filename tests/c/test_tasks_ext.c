/*
 * The 2026-07-28 tasks extension from C, against the rmcp tasks server
 * (tests/servers/rmcp-tasks): a call the server makes a task is followed to
 * its result, its input is answered by the request callback, and the task
 * handle API works on this revision (no tasks/list, said so).
 */
#include "common.h"

static int asked = 0;

static int on_request(void *user_data, const char *server, const char *method, const char *params_json,
                      mcpmux_request_reply *reply) {
    (void)user_data;
    (void)server;
    if (strcmp(method, "elicitation/create") == 0 && contains(params_json, "What is your name?")) {
        asked++;
        mcpmux_request_reply_ok(reply, "{\"action\":\"accept\",\"content\":{\"name\":\"Ada from C\"}}", NULL);
    }
    return 0;
}

int main(void) {
    watchdog("test_tasks_ext", 120);
    mcpmux_engine *engine = new_engine(NULL);
    const char *rmcp = need_env("MCPMUX_RMCP_TASKS");
    char config[2048];
    snprintf(config, sizeof config,
             "{\"mcpServers\": {\"tasks\": {\"command\": \"%s\", \"protocol_version\": \"2026-07-28\"}}}", rmcp);
    mcpmux_hub *hub = NULL;
    mcpmux_error *err = NULL;
    mcpmux_status st = mcpmux_hub_connect_with_requests(engine, config, "{\"requests\": [\"elicitation\"]}",
                                                        on_request, NULL, &hub, &err);
    CHECK(st == MCPMUX_STATUS_OK, "connect: %s", err ? mcpmux_error_message(err) : "");
    mcpmux_error_free(err);
    if (st != MCPMUX_STATUS_OK) return finish();

    char *json = NULL;
    CHECK(mcpmux_hub_servers(hub, &json, NULL) == MCPMUX_STATUS_OK, "servers");
    CHECK(contains(json, "\"protocol_version\":\"2026-07-28\"") && contains(json, "io.modelcontextprotocol/tasks"),
          "2026-07-28 with the tasks extension visible: %s", json);
    mcpmux_string_free(json);

    json = call_ok(hub, "mcp_tasks_slow_sum", "{\"a\":40,\"b\":2,\"ms\":200}", NULL);
    CHECK(json && contains(json, "sum: 42"), "followed to its result: %s", json ? json : "");
    mcpmux_string_free(json);
    json = call_ok(hub, "mcp_tasks_ask_name", NULL, NULL);
    CHECK(json && contains(json, "Hello, Ada from C"), "input answered: %s", json ? json : "");
    CHECK(asked == 1, "the callback answered once (%d)", asked);
    mcpmux_string_free(json);

    char *handle = NULL;
    err = NULL;
    st = mcpmux_hub_call_tool_as_task(hub, "mcp_tasks_slow_sum", "{\"a\":1,\"b\":2,\"ms\":100}", NULL, &handle, &err);
    CHECK(st == MCPMUX_STATUS_OK && contains(handle, "\"task_id\""), "call_tool_as_task: %s",
          err ? mcpmux_error_message(err) : handle);
    mcpmux_error_free(err);
    if (handle) {
        const char *at = strstr(handle, "\"task_id\":\"");
        char task_id[600] = {0};
        if (at) {
            at += strlen("\"task_id\":\"");
            size_t n = strcspn(at, "\"");
            if (n < sizeof task_id) memcpy(task_id, at, n);
        }
        json = NULL;
        CHECK(mcpmux_hub_task(hub, "tasks", task_id, &json, NULL) == MCPMUX_STATUS_OK && contains(json, task_id),
              "task: %s", json ? json : "");
        mcpmux_string_free(json);
        json = NULL;
        CHECK(mcpmux_hub_task_result(hub, "tasks", task_id, NULL, &json, NULL) == MCPMUX_STATUS_OK &&
                  contains(json, "sum: 3"),
              "task_result: %s", json ? json : "");
        mcpmux_string_free(json);
        mcpmux_string_free(handle);
    }
    err = NULL;
    json = NULL;
    expect_status("list_tasks", mcpmux_hub_list_tasks(hub, "tasks", &json, &err), &err, MCPMUX_STATUS_INVALID_INPUT,
                  "INVALID_INPUT", "tasks/list");
    err = NULL;
    json = NULL;
    expect_status("a task that never ends",
                  mcpmux_hub_call_tool(hub, "mcp_tasks_never_ends", NULL,
                                       "{\"timeout_seconds\": 1, \"max_total_timeout_seconds\": 1}", &json, &err),
                  &err, MCPMUX_STATUS_TIMEOUT, "TIMEOUT", NULL);
    mcpmux_hub_close(hub, NULL);
    mcpmux_hub_free(hub);
    mcpmux_engine_free(engine);
    return finish();
}
