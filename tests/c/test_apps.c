/*
 * MCP Apps (io.modelcontextprotocol/ui) from C, against
 * tests/servers/apps_server.py (written from the ext-apps text): a tool's
 * UI resource and visibility as the engine read them ("ui_resource_uri",
 * "app_only"), an app-only tool left out of the LLM formats but callable,
 * each ui:// resource naming the tools whose app it is ("app_of"), and
 * reading it giving the server's HTML. The rules are core's
 * (core/src/apps.rs); this checks the translation.
 */
#include "common.h"

int main(void) {
    watchdog("test_apps", 60);
    mcpmux_engine *engine = new_engine(NULL);
    /* apps_server.py takes its label as an argument. */
    const char *py = need_env("MCPMUX_PYTHON");
    const char *dir = need_env("MCPMUX_SERVERS_DIR");
    size_t n = strlen(py) + strlen(dir) + 200;
    char *config = malloc(n);
    snprintf(config, n, "[[mcp.servers]]\nname = \"north\"\ncommand = \"%s\"\nargs = [\"%s/apps_server.py\", \"north\"]\n",
             py, dir);
    mcpmux_hub *hub = connect_text(engine, config);
    free(config);
    mcpmux_error *err = NULL;

    char *json = NULL;
    expect_status("list_tools", mcpmux_hub_list_tools(hub, &json, &err), &err, MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(json && contains(json, "\"ui_resource_uri\":\"ui://widget/view.html\""), "a tool's UI: %s",
          json ? json : "");
    CHECK(json && count_of(json, "\"app_only\":true") == 1, "one app-only tool: %s", json ? json : "");
    CHECK(json && contains(json, "\"ui_resource_uri\":\"ui://widget/legacy.html\""), "the flat key too: %s",
          json ? json : "");
    mcpmux_string_free(json);

    json = NULL;
    expect_status("tools_for anthropic", mcpmux_hub_tools_for(hub, "anthropic", &json, &err), &err,
                  MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(json && contains(json, "mcp_north_show_weather") && !contains(json, "refresh_widget"),
          "no app-only tool for a model: %s", json ? json : "");
    mcpmux_string_free(json);
    mcpmux_string_free(call_ok(hub, "mcp_north_refresh_widget", "{}", NULL));

    json = NULL;
    expect_status("list_resources", mcpmux_hub_list_resources(hub, NULL, &json, &err), &err, MCPMUX_STATUS_OK,
                  NULL, NULL);
    CHECK(json && contains(json, "\"app_of\":[\"mcp_north_show_weather\",\"mcp_north_refresh_widget\"]"),
          "the UI resource names its tools: %s", json ? json : "");
    mcpmux_string_free(json);

    json = NULL;
    expect_status("read_resource", mcpmux_hub_read_resource(hub, "ui://widget/view.html", NULL, &json, &err), &err,
                  MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(json && contains(json, "\"mimeType\":\"text/html;profile=mcp-app\"") && contains(json, "north weather"),
          "the server's HTML: %s", json ? json : "");
    mcpmux_string_free(json);

    mcpmux_hub_free(hub);
    mcpmux_engine_free(engine);
    return finish();
}
