/*
 * MCP tasks through libmcpmux, against server-everything (stdio): its
 * simulate-research-query requires a task; a plain mcpmux_hub_call_tool()
 * runs it as one. The handle API starts, polls, lists, waits for and
 * cancels tasks, and task_status events reach the event callback.
 */
#include "common.h"

#define RESEARCH "mcp_everything_simulate-research-query"

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    char *text;
    size_t len;
} inbox;

static inbox box = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0};

static void on_event(void *user_data, const char *event_json) {
    inbox *b = user_data;
    size_t n = strlen(event_json);
    pthread_mutex_lock(&b->lock);
    char *grown = realloc(b->text, b->len + n + 2);
    if (grown != NULL) {
        b->text = grown;
        memcpy(b->text + b->len, event_json, n);
        b->len += n;
        b->text[b->len++] = '\n';
        b->text[b->len] = '\0';
    }
    pthread_cond_broadcast(&b->changed);
    pthread_mutex_unlock(&b->lock);
}

/* Waits (up to `ms`, only to catch hangs) until an event line holds both needles. */
static int wait_event(const char *a, const char *b, long ms) {
    double deadline = now_ms() + (double)ms * slow_factor();
    int found = 0;
    pthread_mutex_lock(&box.lock);
    for (;;) {
        for (const char *line = box.text; line != NULL && *line && !found;) {
            const char *end = strchr(line, '\n');
            size_t n = end ? (size_t)(end - line) : strlen(line);
            char *copy = strndup(line, n);
            found = copy != NULL && contains(copy, a) && contains(copy, b);
            free(copy);
            line = end ? end + 1 : NULL;
        }
        double left = deadline - now_ms();
        if (found || left <= 0) break;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        long add_ms = left > 200 ? 200 : (long)left;
        ts.tv_sec += add_ms / 1000;
        ts.tv_nsec += (add_ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&box.changed, &box.lock, &ts);
    }
    pthread_mutex_unlock(&box.lock);
    return found;
}

/* The value of "task_id" in a handle or task JSON, copied into `out`. */
static void task_id_of(const char *json, char *out, size_t size) {
    const char *key = "\"task_id\":\"";
    const char *at = strstr(json, key);
    out[0] = '\0';
    if (at == NULL) return;
    at += strlen(key);
    size_t n = 0;
    while (at[n] != '\0' && at[n] != '"' && n + 1 < size) n++;
    memcpy(out, at, n);
    out[n] = '\0';
}

int main(void) {
    watchdog("test_tasks", 180);
    mcpmux_engine *engine = new_engine(NULL);
    const char *node = need_env("MCPMUX_NODE");
    const char *js = need_env("MCPMUX_EVERYTHING");
    char config[4096];
    snprintf(config, sizeof config,
             "{\"mcpServers\": {\"everything\": {\"command\": \"%s\", \"args\": [\"%s\", \"stdio\"]}}}", node, js);
    mcpmux_hub *hub = connect_text(engine, config);
    mcpmux_error *err = NULL;
    expect_status("set callback", mcpmux_hub_set_event_callback(hub, on_event, &box, &err), &err,
                  MCPMUX_STATUS_OK, NULL, NULL);

    /* Listed for a model, and callable with a plain call. */
    char *json = NULL;
    CHECK(mcpmux_hub_tools_for(hub, "anthropic", &json, NULL) == MCPMUX_STATUS_OK, "tools_for");
    CHECK(contains(json, RESEARCH), "tools_for lists the task tool");
    mcpmux_string_free(json);
    json = call_ok(hub, RESEARCH, "{\"topic\":\"C\"}", NULL);
    CHECK(contains(json, "Research Report: C"), "plain call runs the task: %s", json);
    CHECK(!contains(json, "\"isError\":true"), "no error");
    mcpmux_string_free(json);
    CHECK(wait_event("\"type\":\"task_status\"", "\"status\":\"completed\"", 30000), "task_status completed event");

    /* The handle API. */
    json = NULL;
    err = NULL;
    expect_status("call_tool_as_task",
                  mcpmux_hub_call_tool_as_task(hub, RESEARCH, "{\"topic\":\"handles\"}", "{\"task_ttl_seconds\": 60}",
                                               &json, &err),
                  &err, MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(contains(json, "\"server\":\"everything\""), "handle names the server: %s", json);
    char task_id[600];
    task_id_of(json, task_id, sizeof task_id);
    CHECK(task_id[0] != '\0', "handle has a task id: %s", json);
    mcpmux_string_free(json);

    json = NULL;
    expect_status("task", mcpmux_hub_task(hub, "everything", task_id, &json, &err), &err, MCPMUX_STATUS_OK, NULL,
                  NULL);
    CHECK(contains(json, "\"status\":\"working\"") || contains(json, "\"status\":\"completed\""), "status: %s", json);
    mcpmux_string_free(json);
    json = NULL;
    expect_status("list_tasks", mcpmux_hub_list_tasks(hub, "everything", &json, &err), &err, MCPMUX_STATUS_OK, NULL,
                  NULL);
    CHECK(json[0] == '[' && contains(json, task_id), "list_tasks has the task: %s", json);
    mcpmux_string_free(json);
    json = NULL;
    expect_status("task_result", mcpmux_hub_task_result(hub, "everything", task_id, NULL, &json, &err), &err,
                  MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(contains(json, "Research Report: handles"), "task_result: %s", json);
    mcpmux_string_free(json);

    json = NULL;
    expect_status("second task", mcpmux_hub_call_tool_as_task(hub, RESEARCH, "{\"topic\":\"x\"}", NULL, &json, &err),
                  &err, MCPMUX_STATUS_OK, NULL, NULL);
    task_id_of(json, task_id, sizeof task_id);
    mcpmux_string_free(json);
    json = NULL;
    expect_status("cancel_task", mcpmux_hub_cancel_task(hub, "everything", task_id, &json, &err), &err,
                  MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(contains(json, "\"status\":\"cancelled\""), "cancelled: %s", json);
    mcpmux_string_free(json);
    CHECK(wait_event(task_id, "\"status\":\"cancelled\"", 30000), "task_status cancelled event");
    json = NULL;
    expect_status("result of a cancelled task", mcpmux_hub_task_result(hub, "everything", task_id, NULL, &json, &err),
                  &err, MCPMUX_STATUS_CANCELLED, "CANCELLED", NULL);
    json = NULL;
    expect_status("bad option", mcpmux_hub_call_tool(hub, RESEARCH, NULL, "{\"task\": 1}", &json, &err), &err,
                  MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", NULL);

    err = NULL;
    expect_status("close", mcpmux_hub_close(hub, &err), &err, MCPMUX_STATUS_OK, NULL, NULL);
    mcpmux_hub_free(hub);
    mcpmux_engine_free(engine);
    free(box.text);
    return finish();
}
