/*
 * hello.c: connect to the mcpmux demo server, list its tools, call one.
 *
 * Build and run (from the repository root, see ffi/README.md):
 *
 *   cargo build -p mcpmux-ffi -p mcpmux-demo-server
 *   cc -std=c99 -Wall -Iinclude examples/c/hello.c -Ltarget/debug -Wl,-rpath,target/debug -lmcpmux -o hello
 *   ./hello examples/mcpmux.toml
 */
#include <stdio.h>

#include "mcpmux.h"

/* Prints an error and frees it; returns 1 for main. */
static int fail(const char *what, mcpmux_error *err) {
    fprintf(stderr, "%s failed: %s: %s\n", what, mcpmux_error_code(err), mcpmux_error_message(err));
    mcpmux_error_free(err);
    return 1;
}

int main(int argc, char **argv) {
    const char *config = argc > 1 ? argv[1] : "examples/mcpmux.toml";
    mcpmux_engine *engine = NULL;
    mcpmux_hub *hub = NULL;
    mcpmux_error *err = NULL;
    char *json = NULL;
    int status = 0;

    printf("mcpmux %s\n", mcpmux_version());
    if (mcpmux_engine_new(NULL, &engine, &err) != MCPMUX_STATUS_OK) return fail("mcpmux_engine_new", err);
    if (mcpmux_hub_connect_file(engine, config, &hub, &err) != MCPMUX_STATUS_OK) {
        status = fail("mcpmux_hub_connect_file", err);
        goto done;
    }

    /* Every tool, as a JSON array of {"name", "server", "tool", "description", ...}. */
    if (mcpmux_hub_list_tools(hub, &json, &err) != MCPMUX_STATUS_OK) {
        status = fail("mcpmux_hub_list_tools", err);
        goto done;
    }
    printf("tools: %s\n", json);
    mcpmux_string_free(json);

    /* A blocking call; the result is the MCP CallToolResult JSON. */
    if (mcpmux_hub_call_tool(hub, "mcp_demo_echo", "{\"text\": \"hello from C\"}", "{\"timeout_ms\": 5000}", &json,
                             &err) != MCPMUX_STATUS_OK) {
        status = fail("mcpmux_hub_call_tool", err);
        goto done;
    }
    printf("result: %s\n", json);
    mcpmux_string_free(json);

done:
    mcpmux_hub_free(hub);
    mcpmux_engine_free(engine);
    return status;
}
