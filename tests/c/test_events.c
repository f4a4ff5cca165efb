/*
 * Hub events to a C callback and the rest of the client surface, against
 * server-everything (stdio): a log event after toggle-simulated-logging, a
 * resource_updated event for a subscribed resource, ping, log level,
 * completions, and removing the listener.
 */
#include "common.h"

/* Events received, as one growing text (each event's JSON on its own line). */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    char *text;
    size_t len;
    int count;
    int on_caller_thread;
    pthread_t caller;
} inbox;

static inbox box = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, 0, 0, 0};

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
    b->count++;
    if (pthread_equal(pthread_self(), b->caller)) b->on_caller_thread++;
    pthread_cond_broadcast(&b->changed);
    pthread_mutex_unlock(&b->lock);
}

/* Waits (up to `ms`) until an event containing `needle` has arrived. */
static int wait_event(const char *needle, long ms) {
    double deadline = now_ms() + (double)ms * slow_factor();
    int found = 0;
    pthread_mutex_lock(&box.lock);
    while (!(found = box.text != NULL && contains(box.text, needle))) {
        double left = deadline - now_ms();
        if (left <= 0) break;
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

int main(void) {
    watchdog("test_events", 180);
    box.caller = pthread_self();
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
    char *json = call_ok(hub, "mcp_everything_toggle-simulated-logging", NULL, NULL);
    mcpmux_string_free(json);
    CHECK(wait_event("\"type\":\"log\"", 30000), "a log event arrives");
    CHECK(wait_event("\"server\":\"everything\"", 1000), "the event names the server");

    /* ping, log level */
    double rtt = -1;
    expect_status("ping", mcpmux_hub_ping(hub, "everything", &rtt, &err), &err, MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(rtt >= 0 && rtt < 60, "ping round trip %f s", rtt);
    expect_status("ping unknown", mcpmux_hub_ping(hub, "nope", &rtt, &err), &err, MCPMUX_STATUS_UNKNOWN_SERVER,
                  "UNKNOWN_SERVER", "nope");
    expect_status("log level", mcpmux_hub_set_log_level(hub, "everything", "error", &err), &err, MCPMUX_STATUS_OK,
                  NULL, NULL);
    expect_status("bad log level", mcpmux_hub_set_log_level(hub, "everything", "loud", &err), &err,
                  MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "loud");

    /* completions: a prompt argument narrowed by the context */
    json = NULL;
    expect_status("complete",
                  mcpmux_hub_complete(hub, "{\"type\":\"ref/prompt\",\"name\":\"completable-prompt\"}",
                                      "{\"name\":\"name\",\"value\":\"\"}",
                                      "{\"arguments\":{\"department\":\"Sales\"}}", NULL, &json, &err),
                  &err, MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(json != NULL && contains(json, "\"David\"") && contains(json, "\"Frank\""), "completion values: %s",
          json ? json : "(null)");
    mcpmux_string_free(json);
    json = NULL;
    expect_status("complete bad ref",
                  mcpmux_hub_complete(hub, "{\"type\":\"ref/other\"}", "{\"name\":\"x\",\"value\":\"\"}", NULL, NULL,
                                      &json, &err),
                  &err, MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "ref/prompt");

    /* a subscribed resource's updates */
    json = NULL;
    CHECK(mcpmux_hub_list_resources(hub, NULL, &json, NULL) == MCPMUX_STATUS_OK, "list resources");
    char uri[256] = {0};
    const char *at = json ? strstr(json, "\"uri\":\"") : NULL;
    if (at != NULL) {
        at += strlen("\"uri\":\"");
        size_t n = strcspn(at, "\"");
        if (n < sizeof uri) memcpy(uri, at, n);
    }
    mcpmux_string_free(json);
    CHECK(uri[0] != '\0', "a resource URI");
    expect_status("subscribe", mcpmux_hub_subscribe(hub, uri, NULL, &err), &err, MCPMUX_STATUS_OK, NULL, NULL);
    json = call_ok(hub, "mcp_everything_toggle-subscriber-updates", NULL, NULL);
    mcpmux_string_free(json);
    char needle[320];
    snprintf(needle, sizeof needle, "\"type\":\"resource_updated\",\"server\":\"everything\",\"uri\":\"%s\"", uri);
    CHECK(wait_event(needle, 30000), "resource_updated for %s", uri);
    expect_status("unsubscribe", mcpmux_hub_unsubscribe(hub, uri, "everything", &err), &err, MCPMUX_STATUS_OK,
                  NULL, NULL);

    /* Remove the listener: no more calls after it returns (give late ones a moment). */
    expect_status("remove callback", mcpmux_hub_set_event_callback(hub, NULL, NULL, &err), &err, MCPMUX_STATUS_OK,
                  NULL, NULL);
    pthread_mutex_lock(&box.lock);
    int on_caller = box.on_caller_thread;
    int seen = box.count;
    pthread_mutex_unlock(&box.lock);
    CHECK(seen >= 2, "events seen: %d", seen);
    CHECK(on_caller == 0, "no event on the caller's thread (%d)", on_caller);

    expect_status("close", mcpmux_hub_close(hub, &err), &err, MCPMUX_STATUS_OK, NULL, NULL);
    mcpmux_hub_free(hub);
    mcpmux_engine_free(engine);
    free(box.text);
    return finish();
}
