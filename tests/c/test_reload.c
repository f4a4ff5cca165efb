/*
 * mcpmux_hub_reload: a server whose entry is unchanged keeps its process, a
 * removed one is closed (its process gone), an added one is started (its
 * tools appear), a changed one is started again (a second process); a bad
 * config is CONFIG_INVALID and changes nothing. Each demo server runs under
 * `sh`, which appends its pid to a file per start before exec'ing the server.
 */
#include "common.h"

#include <sys/types.h>

/* A demo server entry whose every start appends its pid to TMP/<name>.pids. */
static char *counted_entry(const char *name, int timeout_seconds) {
    const char *demo = need_env("MCPMUX_DEMO_SERVER");
    const char *tmp = need_env("MCPMUX_TEST_TMP");
    size_t n = strlen(demo) + 2 * strlen(tmp) + strlen(name) * 3 + 300;
    char *text = malloc(n);
    snprintf(text, n,
             "[[mcp.servers]]\nname = \"%s\"\ncommand = \"sh\"\n"
             "args = [\"-c\", \"echo $$ >> '%s/%s.pids'; exec '%s'\"]\ntimeout_seconds = %d\n",
             name, tmp, name, demo, timeout_seconds);
    return text;
}

/* The pids written for `name` so far (up to `max`); returns how many. */
static int pids_of(const char *name, long *pids, int max) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.pids", need_env("MCPMUX_TEST_TMP"), name);
    FILE *f = fopen(path, "r");
    if (f == NULL) return 0;
    int n = 0;
    while (n < max && fscanf(f, "%ld", &pids[n]) == 1) n++;
    fclose(f);
    return n;
}

/* Whether `pid` is gone (not running, or a zombie), waiting up to 10 s. */
static int gone(long pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    for (int i = 0; i < 500 * slow_factor(); i++) {
        FILE *f = fopen(path, "r");
        if (f == NULL) return 1;
        char buf[512] = {0};
        size_t got = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        char *paren = strrchr(buf, ')');
        if (got == 0 || (paren != NULL && (paren[2] == 'Z' || paren[2] == 'X'))) return 1;
        sleep_ms(20);
    }
    return 0;
}

int main(void) {
    watchdog("test_reload", 120);
    mcpmux_engine *engine = new_engine("{\"worker_threads\": 2}");
    char *before = concat_free(counted_entry("keep", 30), concat_free(counted_entry("gone", 30), counted_entry("change", 30)));
    mcpmux_hub *hub = connect_text(engine, before);
    free(before);
    long keep[4], gone_pids[4], change[4], added[4];
    CHECK(pids_of("keep", keep, 4) == 1, "keep started once");
    CHECK(pids_of("gone", gone_pids, 4) == 1, "gone started once");
    CHECK(pids_of("change", change, 4) == 1, "change started once");

    mcpmux_error *err = NULL;
    expect_status("reload(bad config)", mcpmux_hub_reload(hub, "[[mcp.servers]]\nname = 1\n", &err), &err,
                  MCPMUX_STATUS_CONFIG_INVALID, "CONFIG_INVALID", NULL);
    expect_status("reload(NULL)", mcpmux_hub_reload(hub, NULL, &err), &err, MCPMUX_STATUS_INVALID_INPUT,
                  "INVALID_INPUT", "config_text");

    char *after = concat_free(counted_entry("keep", 30), concat_free(counted_entry("change", 31), counted_entry("added", 30)));
    expect_status("reload", mcpmux_hub_reload(hub, after, &err), &err, MCPMUX_STATUS_OK, NULL, NULL);
    free(after);

    long now[4];
    CHECK(pids_of("keep", now, 4) == 1 && now[0] == keep[0], "the unchanged server kept its process");
    CHECK(gone(gone_pids[0]), "the removed server's process is gone");
    CHECK(pids_of("change", now, 4) == 2 && now[1] != change[0], "the changed server started again");
    CHECK(gone(change[0]), "the changed server's old process is gone");
    CHECK(pids_of("added", added, 4) == 1, "the added server started");

    char *json = NULL;
    CHECK(mcpmux_hub_list_tools(hub, &json, NULL) == MCPMUX_STATUS_OK, "list tools");
    CHECK(contains(json, "\"mcp_added_echo\""), "the added server's tools are listed");
    CHECK(!contains(json, "\"mcp_gone_echo\""), "the removed server's tools are not");
    mcpmux_string_free(json);
    char *out = call_ok(hub, "mcp_added_echo", "{\"text\":\"new\"}", NULL);
    CHECK(contains(out, "new"), "a call to the added server works: %s", out ? out : "NULL");
    mcpmux_string_free(out);
    out = call_ok(hub, "mcp_keep_echo", "{\"text\":\"still\"}", NULL);
    CHECK(contains(out, "still"), "a call to the kept server works: %s", out ? out : "NULL");
    mcpmux_string_free(out);

    /* From a file too. */
    char path[4096];
    snprintf(path, sizeof path, "%s/reload.toml", need_env("MCPMUX_TEST_TMP"));
    FILE *f = fopen(path, "w");
    char *only = counted_entry("keep", 30);
    fputs(only, f);
    fclose(f);
    free(only);
    expect_status("reload_file", mcpmux_hub_reload_file(hub, path, &err), &err, MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(pids_of("keep", now, 4) == 1 && now[0] == keep[0], "still the same process after reload_file");
    CHECK(gone(added[0]), "the server removed by reload_file is gone");

    expect_status("close", mcpmux_hub_close(hub, &err), &err, MCPMUX_STATUS_OK, NULL, NULL);
    only = counted_entry("keep", 30);
    expect_status("reload after close", mcpmux_hub_reload(hub, only, &err), &err, MCPMUX_STATUS_TRANSPORT_CLOSED,
                  "TRANSPORT_CLOSED", NULL);
    free(only);
    mcpmux_hub_free(hub);
    mcpmux_engine_free(engine);
    return finish();
}
