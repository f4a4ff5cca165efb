/*
 * The network policy through the C ABI: `options_json` of
 * mcpmux_hub_connect_with_options() (`deny_private`, `allow_networks`,
 * `require_https`) and the config's `[network]` table, against a hostile
 * server on loopback (tests/servers/net/faults.py). A refused server is
 * failed like an unreachable one (CONNECT_FAILED naming the server, the
 * host and the address); the demo server in the same hub keeps working.
 */
#include "common.h"

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t hostile_pid = -1;

/* Starts faults.py --fault 500 (a correct minimal Streamable HTTP server on
 * 127.0.0.1) and returns its port. */
static int start_hostile(void) {
    int fds[2];
    if (pipe(fds) != 0) die("pipe failed");
    char script[4096];
    snprintf(script, sizeof script, "%s/net/faults.py", need_env("MCPMUX_SERVERS_DIR"));
    const char *py = need_env("MCPMUX_PYTHON");
    hostile_pid = fork();
    if (hostile_pid < 0) die("fork failed");
    if (hostile_pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execl(py, py, script, "--fault", "500", "--on", "call", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    FILE *out = fdopen(fds[0], "r");
    int port = 0;
    if (out == NULL || fscanf(out, "READY %d", &port) != 1) die("faults.py did not say READY");
    fclose(out);
    return port;
}

static void stop_hostile(void) {
    if (hostile_pid > 0) {
        kill(hostile_pid, SIGKILL);
        waitpid(hostile_pid, NULL, 0);
    }
}

/* `table` (a TOML table or ""), the demo server and `local` at http://HOST:PORT/mcp. */
static char *config_with(const char *table, const char *host, int port) {
    char *demo = demo_config();
    size_t n = strlen(table) + strlen(host) + strlen(demo) + 300;
    char *text = malloc(n);
    snprintf(text, n, "%s\n[mcp]\nrestart = \"never\"\n%s[[mcp.servers]]\nname = \"local\"\nurl = \"http://%s:%d/mcp\"\n",
             table, demo, host, port);
    free(demo);
    return text;
}

static mcpmux_hub *connect_opts(mcpmux_engine *engine, const char *config, const char *options) {
    mcpmux_hub *hub = NULL;
    mcpmux_error *err = NULL;
    mcpmux_status st = mcpmux_hub_connect_with_options(engine, config, options, &hub, &err);
    if (st != MCPMUX_STATUS_OK) die("connect(%s): %s: %s", options, code_of(err), mcpmux_error_message(err));
    return hub;
}

/* The servers JSON of `hub` (caller frees). */
static char *servers_of(mcpmux_hub *hub) {
    char *json = NULL;
    mcpmux_error *err = NULL;
    expect_status("servers", mcpmux_hub_servers(hub, &json, &err), &err, MCPMUX_STATUS_OK, NULL, NULL);
    return json;
}

/* Checks that `local` was refused (naming `connecting_to`) and `demo` runs. */
static void expect_refused(const char *what, mcpmux_hub *hub, const char *connecting_to) {
    char *json = servers_of(hub);
    CHECK(json != NULL && contains(json, "\"connected\""), "%s: the demo server runs: %s", what, json);
    CHECK(json != NULL && contains(json, "\"failed\"") && contains(json, "CONNECT_FAILED"),
          "%s: local failed with CONNECT_FAILED: %s", what, json);
    CHECK(json != NULL && contains(json, "server 'local'") && contains(json, connecting_to),
          "%s: the error names the server and '%s': %s", what, connecting_to, json);
    CHECK(json != NULL && contains(json, "refused by the [network] policy") && contains(json, "loopback"),
          "%s: the error is the policy's refusal: %s", what, json);
    mcpmux_string_free(json);
}

static void expect_connected(const char *what, mcpmux_hub *hub) {
    char *json = servers_of(hub);
    CHECK(json != NULL && count_of(json, "\"connected\"") == 2 && !contains(json, "\"failed\""),
          "%s: both servers connected: %s", what, json);
    mcpmux_string_free(json);
}

int main(void) {
    watchdog("test_network", 120);
    int port = start_hostile();
    mcpmux_engine *engine = new_engine("{\"worker_threads\": 2}");

    char *by_ip = config_with("", "127.0.0.1", port);
    char *by_name = config_with("", "localhost", port);
    mcpmux_hub *hub = connect_opts(engine, by_ip, "{\"deny_private\": true}");
    expect_refused("deny_private, 127.0.0.1", hub, "connecting to 127.0.0.1 is refused");
    mcpmux_hub_free(hub);
    hub = connect_opts(engine, by_name, "{\"deny_private\": true}");
    expect_refused("deny_private, localhost", hub, "connecting to localhost (it resolves to ");
    mcpmux_hub_free(hub);
    hub = connect_opts(engine, by_name, "{\"deny_private\": true, \"allow_networks\": [\"127.0.0.0/8\"]}");
    expect_connected("allow_networks", hub);
    mcpmux_hub_free(hub);
    hub = connect_opts(engine, by_ip, NULL);
    expect_connected("no policy", hub);
    mcpmux_hub_free(hub);

    char *table = config_with("[network]\ndeny_private = true", "127.0.0.1", port);
    hub = connect_text(engine, table);
    expect_refused("[network] deny_private", hub, "connecting to 127.0.0.1 is refused");
    mcpmux_hub_free(hub);
    free(table);

    hub = connect_opts(engine, by_ip,
                       "{\"require_https\": true, \"deny_private\": true, \"allow_networks\": [\"127.0.0.0/8\"]}");
    char *json = servers_of(hub);
    CHECK(json != NULL && contains(json, "require_https") && contains(json, "\"failed\""),
          "require_https refuses http to loopback with deny_private: %s", json);
    mcpmux_string_free(json);
    mcpmux_hub_free(hub);

    mcpmux_hub *none = NULL;
    mcpmux_error *err = NULL;
    expect_status("bad network",
                  mcpmux_hub_connect_with_options(engine, by_ip, "{\"allow_networks\": [\"10.1.2.0/33\"]}", &none,
                                                  &err),
                  &err, MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "allow_networks[0] '10.1.2.0/33'");
    expect_status("deny_private not a boolean",
                  mcpmux_hub_connect_with_options(engine, by_ip, "{\"deny_private\": \"yes\"}", &none, &err),
                  &err, MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "deny_private");
    expect_status("misspelt option",
                  mcpmux_hub_connect_with_options(engine, by_ip, "{\"deny_privat\": true}", &none, &err), &err,
                  MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "deny_private");
    CHECK(none == NULL, "no hub on a refused option");

    free(by_ip);
    free(by_name);
    mcpmux_engine_free(engine);
    stop_hostile();
    return finish();
}
