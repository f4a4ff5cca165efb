/*
 * The events extension (io.modelcontextprotocol/events) from C, against
 * tests/servers/events_server.py: listing event types, polling from a
 * cursor, a stream whose occurrences arrive on the hub's event callback,
 * webhook subscriptions (the secret never echoed), and unknown options
 * refused. The work is core's
 * (core/tests/events_extension.rs); this checks the translation.
 */
#include "common.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char seen[16384];

static void on_event(void *user_data, const char *event_json) {
    (void)user_data;
    pthread_mutex_lock(&lock);
    if (strlen(seen) + strlen(event_json) + 2 < sizeof seen) {
        strcat(seen, event_json);
        strcat(seen, "\n");
    }
    pthread_mutex_unlock(&lock);
}

/* Whether the events seen so far contain `needle`, waiting up to 10 s. */
static int saw(const char *needle) {
    for (int i = 0; i < 500 * slow_factor(); i++) {
        pthread_mutex_lock(&lock);
        int found = contains(seen, needle);
        pthread_mutex_unlock(&lock);
        if (found) return 1;
        sleep_ms(20);
    }
    return 0;
}

int main(void) {
    watchdog("test_events_ext", 120);
    mcpmux_engine *engine = new_engine(NULL);
    char *config = concat_free(
        concat_free(python_server_entry("ev", "events_server.py", "env = { HEARTBEAT_MS = \"100\" }"),
                    python_server_entry("none", "events_server.py", "env = { CAPABILITY = \"none\" }")),
        python_server_entry("old", "events_server.py",
                            "env = { PRELOAD = \"2\", PRELOAD_AGE_MS = \"600000\", HEARTBEAT_MS = \"0\" }"));
    mcpmux_hub *hub = connect_text(engine, config);
    free(config);
    mcpmux_error *err = NULL;
    CHECK(mcpmux_hub_set_event_callback(hub, on_event, NULL, &err) == MCPMUX_STATUS_OK, "set_event_callback");

    char *json = NULL;
    expect_status("list_events", mcpmux_hub_list_events(hub, NULL, &json, &err), &err, MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(json && contains(json, "\"name\":\"ticket.created\"") && contains(json, "\"server\":\"ev\"") &&
              !contains(json, "\"server\":\"none\""),
          "event types of ev only: %s", json ? json : "");
    mcpmux_string_free(json);
    json = NULL;
    expect_status("list_events of a server without the extension",
                  mcpmux_hub_list_events(hub, "none", &json, &err), &err, MCPMUX_STATUS_INVALID_INPUT,
                  "INVALID_INPUT", "io.modelcontextprotocol/events");

    /* From now: no events and a cursor. */
    expect_status("poll from now", mcpmux_hub_poll_events(hub, "ev", "ticket.created", NULL, NULL, &json, &err),
                  &err, MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(json && contains(json, "\"events\":[]") && contains(json, "\"cursor\":\"pos-0\"") &&
              contains(json, "\"next_poll_ms\":1000") && contains(json, "\"has_more\":false"),
          "first page: %s", json ? json : "");
    mcpmux_string_free(json);
    for (int n = 0; n < 3; n++) {
        char args[128];
        snprintf(args, sizeof args, "{\"name\":\"ticket.created\",\"data\":{\"n\":%d}}", n);
        mcpmux_string_free(call_ok(hub, "mcp_ev_emit", args, NULL));
    }
    json = NULL;
    expect_status("poll from a cursor",
                  mcpmux_hub_poll_events(hub, "ev", "ticket.created", "{}",
                                         "{\"cursor\":\"pos-0\",\"max_events\":2}", &json, &err),
                  &err, MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(json && count_of(json, "\"event_id\"") == 2 && contains(json, "{\"n\":0}") &&
              contains(json, "\"has_more\":true"),
          "two of three, more to come: %s", json ? json : "");
    mcpmux_string_free(json);
    json = NULL;
    expect_status("an unknown option", mcpmux_hub_poll_events(hub, "ev", "ticket.created", NULL,
                                                              "{\"maxEvents\":2}", &json, &err),
                  &err, MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "unknown option 'maxEvents'");
    expect_status("a bad max_events", mcpmux_hub_poll_events(hub, "ev", "ticket.created", NULL,
                                                             "{\"max_events\":-1}", &json, &err),
                  &err, MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "max_events");
    expect_status("arguments not an object",
                  mcpmux_hub_poll_events(hub, "ev", "ticket.created", "[1]", NULL, &json, &err), &err,
                  MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "args_json");
    expect_status("the server's own error",
                  mcpmux_hub_poll_events(hub, "ev", "no.such", NULL, NULL, &json, &err), &err,
                  MCPMUX_STATUS_SERVER_ERROR, "SERVER_ERROR", NULL);
    CHECK(json == NULL, "no output on failure");

    /* A stream from pos-0: the three are replayed on the event callback. */
    mcpmux_event_stream *stream = NULL;
    expect_status("stream", mcpmux_hub_stream_events(hub, "ev", "ticket.created", NULL,
                                                     "{\"cursor\":\"pos-0\"}", &stream, &err),
                  &err, MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(stream != NULL && mcpmux_event_stream_id(stream) > 0, "a stream handle");
    char want[128];
    snprintf(want, sizeof want, "\"subscription\":%llu", (unsigned long long)mcpmux_event_stream_id(stream));
    CHECK(saw("\"type\":\"event_stream\"") && saw("\"state\":\"active\"") && saw(want), "active told");
    CHECK(saw("\"type\":\"event\"") && saw("\"data\":{\"n\":2}") && saw("\"cursor\":\"pos-3\""),
          "occurrences replayed on the callback");
    mcpmux_string_free(call_ok(hub, "mcp_ev_emit", "{\"name\":\"ticket.created\",\"data\":{\"n\":3}}", NULL));
    CHECK(saw("\"data\":{\"n\":3}"), "a new occurrence pushed");
    char *cursor = NULL;
    for (int i = 0; i < 500; i++) {
        cursor = mcpmux_event_stream_cursor(stream);
        if (cursor && strcmp(cursor, "pos-4") == 0) break;
        mcpmux_string_free(cursor);
        cursor = NULL;
        sleep_ms(20);
    }
    CHECK(cursor != NULL, "the cursor followed the stream to pos-4");
    mcpmux_string_free(cursor);
    expect_status("stream: an unknown option",
                  mcpmux_hub_stream_events(hub, "ev", "ticket.created", NULL, "{\"heartbeat\":1}", &stream, &err),
                  &err, MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "unknown option 'heartbeat'");
    mcpmux_event_stream_free(stream);
    mcpmux_event_stream_free(NULL);
    CHECK(mcpmux_event_stream_id(NULL) == 0 && mcpmux_event_stream_cursor(NULL) == NULL, "NULL streams");
    /* Freed: the server was told (no stream left open there). */
    int closed = 0;
    for (int i = 0; i < 500 && !closed; i++) {
        char *state = call_ok(hub, "mcp_ev_state", "{}", NULL);
        closed = state && contains(state, "\\\"streams\\\": []");
        mcpmux_string_free(state);
        if (!closed) sleep_ms(20);
    }
    CHECK(closed, "the stream was cancelled at the server");

    /* Webhooks: subscribe, seen by the server; the secret never in an error. */
    const char *secret = "whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0";
    json = NULL;
    expect_status("subscribe_events",
                  mcpmux_hub_subscribe_events(hub, "ev", "build.finished", "{\"repo\":\"x\"}",
                                              "https://hooks.example.com/mcp", secret, "{\"ttl_ms\":60000}",
                                              &json, &err),
                  &err, MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(json && contains(json, "\"id\":\"sub_") && contains(json, "\"truncated\":false") &&
              contains(json, "\"refresh_before\":") && !contains(json, secret),
          "the subscription: %s", json ? json : "");
    mcpmux_string_free(json);
    char *state = call_ok(hub, "mcp_ev_state", "{}", NULL);
    CHECK(state && contains(state, "https://hooks.example.com/mcp") && contains(state, "\\\"ttlMs\\\": 60000"),
          "the server holds the subscription: %s", state ? state : "");
    mcpmux_string_free(state);
    json = NULL;
    const char *short_secret = "whsec_dG9vLXNob3J0";
    expect_status("a secret too short",
                  mcpmux_hub_subscribe_events(hub, "ev", "build.finished", NULL, "https://hooks.example.com/mcp",
                                              short_secret, NULL, &json, &err),
                  &err, MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "24 to 64");
    expect_status("plain http to another host",
                  mcpmux_hub_subscribe_events(hub, "ev", "build.finished", NULL, "http://hooks.example.com/mcp",
                                              secret, NULL, &json, &err),
                  &err, MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "https");
    expect_status("subscribe: an unknown option",
                  mcpmux_hub_subscribe_events(hub, "ev", "build.finished", NULL, "https://hooks.example.com/mcp",
                                              secret, "{\"ttlMs\":1}", &json, &err),
                  &err, MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "unknown option 'ttlMs'");
    expect_status("no webhook delivery for this type",
                  mcpmux_hub_subscribe_events(hub, "ev", "ticket.created", NULL, "https://hooks.example.com/mcp",
                                              secret, NULL, &json, &err),
                  &err, MCPMUX_STATUS_SERVER_ERROR, "SERVER_ERROR", NULL);
    CHECK(json == NULL, "no output on failure");
    expect_status("unsubscribe_events",
                  mcpmux_hub_unsubscribe_events(hub, "ev", "build.finished", "{\"repo\":\"x\"}",
                                                "https://hooks.example.com/mcp", &err),
                  &err, MCPMUX_STATUS_OK, NULL, NULL);
    state = call_ok(hub, "mcp_ev_state", "{}", NULL);
    CHECK(state && contains(state, "\\\"subscriptions\\\": []"), "the subscription is gone: %s",
          state ? state : "");
    mcpmux_string_free(state);
    expect_status("unsubscribe again", mcpmux_hub_unsubscribe_events(hub, "ev", "build.finished", "{\"repo\":\"x\"}",
                                                                     "https://hooks.example.com/mcp", &err),
                  &err, MCPMUX_STATUS_SERVER_ERROR, "SERVER_ERROR", NULL);

    /* max_age_ms: the two old occurrences are left out, and the gap said. */
    json = NULL;
    expect_status("poll with max_age_ms",
                  mcpmux_hub_poll_events(hub, "old", "ticket.created", NULL,
                                         "{\"cursor\":\"pos-0\",\"max_age_ms\":60000}", &json, &err),
                  &err, MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(json && contains(json, "\"events\":[]") && contains(json, "\"truncated\":true"),
          "nothing older than a minute: %s", json ? json : "");
    mcpmux_string_free(json);
    expect_status("a bad max_age_ms", mcpmux_hub_poll_events(hub, "old", "ticket.created", NULL,
                                                             "{\"max_age_ms\":\"soon\"}", &json, &err),
                  &err, MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "max_age_ms");
    /* no_expiry: ttlMs null, no refresh_before. */
    json = NULL;
    expect_status("subscribe without expiry",
                  mcpmux_hub_subscribe_events(hub, "old", "build.finished", NULL, "https://hooks.example.com/mcp",
                                              secret, "{\"no_expiry\":true}", &json, &err),
                  &err, MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(json && contains(json, "\"id\":\"sub_") && !contains(json, "refresh_before"),
          "a subscription that does not expire: %s", json ? json : "");
    mcpmux_string_free(json);
    json = NULL;
    expect_status("no_expiry with a ttl",
                  mcpmux_hub_subscribe_events(hub, "old", "build.finished", NULL, "https://hooks.example.com/mcp",
                                              secret, "{\"no_expiry\":true,\"ttl_ms\":1000}", &json, &err),
                  &err, MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "no expiry");
    /* heartbeat_ms: the silent server's stream is sent again. */
    stream = NULL;
    expect_status("stream with heartbeat_ms",
                  mcpmux_hub_stream_events(hub, "old", "ticket.created", NULL, "{\"heartbeat_ms\":200}", &stream,
                                           &err),
                  &err, MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(saw("\"state\":\"reconnecting\""), "a silent stream is sent again after twice heartbeat_ms");
    mcpmux_event_stream_free(stream);

    mcpmux_hub_free(hub);
    mcpmux_engine_free(engine);
    return finish();
}
