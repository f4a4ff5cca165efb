/*
 * Requests servers send to the host, answered from C
 * (mcpmux_hub_connect_with_requests): elicitation and sampling through one
 * callback, roots in options_json and mcpmux_hub_set_roots, against
 * server-everything (which offers trigger-elicitation-request,
 * trigger-sampling-request and get-roots-list only to a client declaring
 * that capability) and asks_client.py (which reports what was declared).
 */
#include "common.h"

typedef struct {
    int calls;
    int on_main;
    char method[64];
    char server[64];
    int saw_schema;
} seen_t;

static pthread_t main_thread;

static int on_request(void *user_data, const char *server, const char *method, const char *params_json,
                      mcpmux_request_reply *reply) {
    seen_t *seen = user_data;
    seen->calls++;
    seen->on_main |= pthread_equal(pthread_self(), main_thread);
    snprintf(seen->method, sizeof seen->method, "%s", method);
    snprintf(seen->server, sizeof seen->server, "%s", server);
    if (strcmp(method, "elicitation/create") == 0) {
        seen->saw_schema = contains(params_json, "\"requestedSchema\"");
        if (contains(params_json, "refuse me")) {
            mcpmux_request_reply_error(reply, "the person is away", NULL);
            return 1;
        }
        /* Not a JSON object: refused, and the later answer wins. */
        CHECK(mcpmux_request_reply_ok(reply, "[1]", NULL) == MCPMUX_STATUS_INVALID_INPUT, "an array is refused");
        mcpmux_request_reply_ok(reply, "{\"action\":\"accept\",\"content\":{\"name\":\"Ada from C\",\"check\":true}}", NULL);
    } else if (strcmp(method, "sampling/createMessage") == 0) {
        mcpmux_request_reply_ok(reply,
                                "{\"role\":\"assistant\",\"model\":\"c-model\",\"stopReason\":\"endTurn\","
                                "\"content\":{\"type\":\"text\",\"text\":\"sampled in C\"}}",
                                NULL);
    }
    return 0;
}

int main(void) {
    watchdog("test_requests", 180);
    main_thread = pthread_self();
    mcpmux_engine *engine = new_engine(NULL);
    const char *node = need_env("MCPMUX_NODE");
    const char *js = need_env("MCPMUX_EVERYTHING");
    const char *tmp = need_env("MCPMUX_TEST_TMP");
    char config[4096];
    snprintf(config, sizeof config,
             "{\"mcpServers\": {\"every\": {\"command\": \"%s\", \"args\": [\"%s\", \"stdio\"]}}}", node, js);

    /* Without a callback or roots: none of the three tools. */
    mcpmux_hub *plain = connect_text(engine, config);
    char *json = NULL;
    CHECK(mcpmux_hub_list_tools(plain, &json, NULL) == MCPMUX_STATUS_OK, "list_tools");
    CHECK(!contains(json, "trigger-elicitation-request") && !contains(json, "get-roots-list"),
          "nothing declared, nothing offered");
    mcpmux_string_free(json);
    mcpmux_error *err = NULL;
    expect_status("set_roots without roots", mcpmux_hub_set_roots(plain, "[\"/a\"]", &err), &err,
                  MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "connected without roots");
    mcpmux_hub_close(plain, NULL);
    mcpmux_hub_free(plain);

    /* A misspelt key is named with the nearest known one, "requests" included. */
    mcpmux_hub *none = NULL;
    expect_status("connect_with_requests(misspelt key)",
                  mcpmux_hub_connect_with_requests(engine, config, "{\"request\": [\"sampling\"]}", on_request, NULL,
                                                   &none, &err),
                  &err, MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT",
                  "unknown option 'request' (did you mean 'requests'?");
    CHECK(none == NULL, "no hub for a refused connect");

    seen_t seen = {0};
    char options[1024];
    snprintf(options, sizeof options, "{\"roots\": [\"%s/first\"], \"startup_timeout_seconds\": 60}", tmp);
    mcpmux_hub *hub = NULL;
    err = NULL;
    mcpmux_status st = mcpmux_hub_connect_with_requests(engine, config, options, on_request, &seen, &hub, &err);
    CHECK(st == MCPMUX_STATUS_OK, "connect_with_requests: %s", err ? mcpmux_error_message(err) : "");
    mcpmux_error_free(err);
    if (st != MCPMUX_STATUS_OK) return finish();

    json = call_ok(hub, "mcp_every_trigger-elicitation-request", NULL, NULL);
    CHECK(json && contains(json, "Ada from C"), "elicitation answered: %s", json ? json : "");
    mcpmux_string_free(json);
    CHECK(seen.calls == 1 && strcmp(seen.method, "elicitation/create") == 0 && strcmp(seen.server, "every") == 0,
          "the callback saw one elicitation from 'every' (%d, %s, %s)", seen.calls, seen.method, seen.server);
    CHECK(seen.saw_schema, "the params carry the requested schema");
    CHECK(!seen.on_main, "the callback ran on an engine thread");

    json = call_ok(hub, "mcp_every_trigger-sampling-request", "{\"prompt\":\"hi\",\"maxTokens\":5}", NULL);
    CHECK(json && contains(json, "c-model") && contains(json, "sampled in C"), "sampling answered: %s",
          json ? json : "");
    mcpmux_string_free(json);

    char uri[1024];
    snprintf(uri, sizeof uri, "file://%s/first", tmp);
    json = call_ok(hub, "mcp_every_get-roots-list", NULL, NULL);
    CHECK(json && contains(json, uri), "roots reached the server: %s", json ? json : "");
    mcpmux_string_free(json);
    json = NULL;
    CHECK(mcpmux_hub_roots(hub, &json, NULL) == MCPMUX_STATUS_OK && contains(json, "\"name\":\"first\""),
          "mcpmux_hub_roots: %s", json ? json : "");
    mcpmux_string_free(json);

    CHECK(mcpmux_hub_set_roots(hub, "[\"/srv/second\"]", NULL) == MCPMUX_STATUS_OK, "set_roots");
    int changed = 0;
    for (int i = 0; i < 200 && !changed; i++) {
        json = call_ok(hub, "mcp_every_get-roots-list", NULL, NULL);
        changed = json && contains(json, "file:///srv/second") && !contains(json, "first");
        mcpmux_string_free(json);
        if (!changed) sleep_ms(50);
    }
    CHECK(changed, "the server saw the new roots");
    err = NULL;
    expect_status("a bad root", mcpmux_hub_set_roots(hub, "[\"https://example.com/\"]", &err), &err,
                  MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "file://");
    err = NULL;
    expect_status("roots not an array", mcpmux_hub_set_roots(hub, "{}", &err), &err, MCPMUX_STATUS_INVALID_INPUT,
                  "INVALID_INPUT", "roots_json");
    mcpmux_hub_close(hub, NULL);
    mcpmux_hub_free(hub);

    /* Only the kinds named under "requests" are declared; an error reply
     * reaches the server as a JSON-RPC error. */
    char *asker = python_server_entry("asker", "asks_client.py", NULL);
    hub = NULL;
    err = NULL;
    st = mcpmux_hub_connect_with_requests(engine, asker, "{\"requests\": [\"elicitation\"]}", on_request, &seen, &hub,
                                          &err);
    CHECK(st == MCPMUX_STATUS_OK, "connect asker: %s", err ? mcpmux_error_message(err) : "");
    mcpmux_error_free(err);
    if (hub) {
        json = call_ok(hub, "mcp_asker_client_capabilities", NULL, NULL);
        CHECK(json && contains(json, "elicitation") && !contains(json, "sampling") && !contains(json, "roots"),
              "only elicitation declared: %s", json ? json : "");
        mcpmux_string_free(json);
        json = call_ok(hub, "mcp_asker_ask",
                       "{\"method\":\"elicitation/create\",\"params\":{\"message\":\"refuse me\"}}", NULL);
        CHECK(json && contains(json, "the person is away") && contains(json, "-32603"), "error reply: %s",
              json ? json : "");
        mcpmux_string_free(json);
        mcpmux_hub_close(hub, NULL);
        mcpmux_hub_free(hub);
    }
    err = NULL;
    hub = NULL;
    expect_status("unknown request kind",
                  mcpmux_hub_connect_with_requests(engine, asker, "{\"requests\": [\"roots\"]}", on_request, &seen,
                                                   &hub, &err),
                  &err, MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "requests");
    free(asker);
    mcpmux_engine_free(engine);
    return finish();
}
