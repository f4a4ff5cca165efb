/*
 * The call-options contract from C (mcpmux_core::contract): progress
 * notifications reach mcpmux_hub_call_tool_with_progress()'s callback on
 * the calling thread; a server error's `data` is readable with
 * mcpmux_error_data(); every duration option has core's cap
 * (MCPMUX_MAX_TIMEOUT_SECONDS) and names itself when refused; a search
 * limit of 0 finds nothing, as in every front end; `validate_output`
 * chooses what a result breaking its tool's outputSchema becomes.
 */
#include "common.h"

typedef struct {
    int count;
    int on_caller;
    pthread_t caller;
    char last[256];
} progress_seen;

static void on_progress(void *user_data, const char *progress_json) {
    progress_seen *seen = user_data;
    seen->count++;
    if (pthread_equal(pthread_self(), seen->caller)) seen->on_caller++;
    snprintf(seen->last, sizeof seen->last, "%s", progress_json);
}

static void test_progress(mcpmux_hub *hub) {
    progress_seen seen = {0, 0, pthread_self(), ""};
    char *out = NULL;
    mcpmux_error *err = NULL;
    mcpmux_status st = mcpmux_hub_call_tool_with_progress(hub, "mcp_demo_slow", "{\"seconds\":0.3,\"steps\":3}",
                                                          "{\"max_total_timeout_seconds\":60}", on_progress,
                                                          &seen, &out, &err);
    expect_status("call_tool_with_progress", st, &err, MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(out != NULL && contains(out, "content"), "a result: %s", out ? out : "(null)");
    CHECK(seen.count == 3, "three progress notifications, got %d", seen.count);
    CHECK(seen.on_caller == seen.count, "every one on the calling thread (%d of %d)", seen.on_caller, seen.count);
    CHECK(contains(seen.last, "\"progress\":") && contains(seen.last, "\"total\":"), "progress JSON: %s", seen.last);
    mcpmux_string_free(out);

    /* NULL callback: a plain call. */
    out = NULL;
    st = mcpmux_hub_call_tool_with_progress(hub, "mcp_demo_echo", "{\"text\":\"hi\"}", NULL, NULL, NULL, &out, &err);
    expect_status("call_tool_with_progress without a callback", st, &err, MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(contains(out, "hi"), "echo: %s", out ? out : "(null)");
    mcpmux_string_free(out);
}

static void test_timeout_cap(mcpmux_hub *hub) {
    const char *over[] = {"{\"timeout_seconds\":2e9}", "{\"timeout_ms\":2e12}", "{\"max_total_timeout_seconds\":2e9}",
                          "{\"max_total_timeout_ms\":2e12}", "{\"task_ttl_seconds\":2e9}", "{\"task_ttl_ms\":2e12}"};
    const char *names[] = {"timeout_seconds", "timeout_ms", "max_total_timeout_seconds",
                           "max_total_timeout_ms", "task_ttl_seconds", "task_ttl_ms"};
    for (size_t i = 0; i < sizeof over / sizeof over[0]; i++) {
        char *out = NULL;
        mcpmux_error *err = NULL;
        mcpmux_status st = mcpmux_hub_call_tool(hub, "mcp_demo_echo", "{\"text\":\"x\"}", over[i], &out, &err);
        expect_status(over[i], st, &err, MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", names[i]);
        CHECK(out == NULL, "%s: no result", over[i]);
    }
    char at_cap[64];
    snprintf(at_cap, sizeof at_cap, "{\"timeout_seconds\":%.0f}", MCPMUX_MAX_TIMEOUT_SECONDS);
    char *out = call_ok(hub, "mcp_demo_echo", "{\"text\":\"cap\"}", at_cap);
    CHECK(contains(out, "cap"), "a timeout at the cap is accepted: %s", out ? out : "(null)");
    mcpmux_string_free(out);
}

static void test_error_data(mcpmux_hub *hub) {
    char *out = NULL;
    mcpmux_error *err = NULL;
    mcpmux_status st = mcpmux_hub_call_tool(hub, "mcp_leaky_fail", NULL, NULL, &out, &err);
    CHECK(st == MCPMUX_STATUS_SERVER_ERROR, "leaky fail: status %d (%s)", (int)st, code_of(err));
    const char *data = mcpmux_error_data(err);
    CHECK(data != NULL && contains(data, "\"token\"") && contains(data, "visible-token"), "error data: %s",
          data ? data : "(null)");
    int64_t rpc = 0;
    CHECK(mcpmux_error_rpc_code(err, &rpc) && rpc == -32001, "rpc code %lld", (long long)rpc);
    mcpmux_error_free(err);

    /* Another error has no data. */
    err = NULL;
    st = mcpmux_hub_call_tool(hub, "mcp_demo_nope", NULL, NULL, &out, &err);
    CHECK(st != MCPMUX_STATUS_OK && mcpmux_error_data(err) == NULL, "no data on %s", code_of(err));
    mcpmux_error_free(err);
    CHECK(mcpmux_error_data(NULL) == NULL, "NULL error: NULL data");
}

static void test_search_limit(mcpmux_hub *hub) {
    char *out = NULL;
    mcpmux_error *err = NULL;
    mcpmux_status st = mcpmux_hub_search_tools(hub, "echo", 0, &out, &err);
    expect_status("search limit 0", st, &err, MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(out != NULL && strcmp(out, "[]") == 0, "limit 0 finds nothing: %s", out ? out : "(null)");
    mcpmux_string_free(out);
    out = NULL;
    st = mcpmux_hub_search_tools(hub, "echo", MCPMUX_SEARCH_DEFAULT_LIMIT, &out, &err);
    expect_status("search default limit", st, &err, MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(contains(out, "mcp_demo_echo"), "default limit finds echo: %s", out ? out : "(null)");
    mcpmux_string_free(out);
    out = NULL;
    st = mcpmux_hub_search_tools(hub, "echo", 1, &out, &err);
    expect_status("search limit 1", st, &err, MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(count_of(out, "\"name\":\"mcp_") == 1, "limit 1: one tool: %s", out ? out : "(null)");
    mcpmux_string_free(out);
}

/* The demo server's `add` answers {"sum": "5"} against its outputSchema
 * (DEMO_ADD_OUTPUT=wrong_type): OUTPUT_INVALID naming the tool and the
 * path, unless `validate_output` is "warn" or "off". */
static void test_validate_output(mcpmux_engine *engine) {
    char *config = concat_free(demo_config_named("demo", 30),
                               strdup("[mcp.servers.env]\nDEMO_ADD_OUTPUT = \"wrong_type\"\n"));
    mcpmux_hub *hub = connect_text(engine, config);
    free(config);
    const char *args = "{\"a\":2,\"b\":3}";
    char *out = NULL;
    mcpmux_error *err = NULL;
    mcpmux_status st = mcpmux_hub_call_tool(hub, "mcp_demo_add", args, NULL, &out, &err);
    expect_status("a schema violation", st, &err, MCPMUX_STATUS_OUTPUT_INVALID, "OUTPUT_INVALID", "'/sum'");
    CHECK(out == NULL, "no result");
    const char *fine[] = {"{\"validate_output\":\"warn\"}", "{\"validate_output\":\"off\"}"};
    for (size_t i = 0; i < 2; i++) {
        out = call_ok(hub, "mcp_demo_add", args, fine[i]);
        CHECK(contains(out, "\"sum\":\"5\""), "%s: the result: %s", fine[i], out ? out : "(null)");
        mcpmux_string_free(out);
    }
    out = NULL;
    st = mcpmux_hub_call_tool(hub, "mcp_demo_add", args, "{\"validate_output\":\"loud\"}", &out, &err);
    expect_status("validate_output loud", st, &err, MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "validate_output");
    mcpmux_hub_free(hub);
}

int main(void) {
    watchdog("test_contract", 120);
    mcpmux_engine *engine = new_engine(NULL);
    /* Inherited by the server (a value written in the config is a secret, redacted). */
    setenv("LEAKY_SECRET", "visible-token", 1);
    char *config = concat_free(demo_config(), python_server_entry("leaky", "leaky.py", NULL));
    mcpmux_hub *hub = connect_text(engine, config);
    free(config);
    test_progress(hub);
    test_timeout_cap(hub);
    test_error_data(hub);
    test_search_limit(hub);
    mcpmux_hub_free(hub);
    test_validate_output(engine);
    mcpmux_engine_free(engine);
    return finish();
}
