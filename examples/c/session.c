/*
 * session.c: a review session with a host reviewer written in C.
 *
 * The "model" is the function `reviewer` below (swap in a call to your own
 * LLM): it first calls the demo server's echo tool, then answers with a
 * fenced JSON verdict. The session lives on disk under
 * <working_dir>/.mcpmux/sessions/.
 *
 *   cargo build -p mcpmux-ffi -p mcpmux-demo-server
 *   cc -std=c99 -Wall -Iinclude examples/c/session.c -Ltarget/debug -Wl,-rpath,target/debug -lmcpmux -o session
 *   ./session target/debug/mcpmux-demo-server /tmp
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcpmux.h"

/* One model turn, on an engine thread: answer through `reply` before returning. */
static void reviewer(void *user_data, const char *request_json, mcpmux_host_reply *reply) {
    (void)user_data;
    if (strstr(request_json, "\"tool_results\"") == NULL) {
        /* No tool result yet: ask for one. */
        mcpmux_host_reply_ok(reply,
                             "{\"text\": \"Let me look something up.\", \"tool_calls\": [{\"id\": \"1\", "
                             "\"name\": \"mcp_demo_echo\", \"arguments\": {\"text\": \"hello from C\"}}]}",
                             NULL);
    } else {
        mcpmux_host_reply_text(reply, "Fine.\n\n```json\n{\"verdict\": \"APPROVE\", \"blocks\": []}\n```\n", NULL);
    }
}

/* Prints an error and frees it; returns 1 for main. */
static int fail(const char *what, mcpmux_error *err) {
    fprintf(stderr, "%s failed: %s: %s\n", what, mcpmux_error_code(err), mcpmux_error_message(err));
    mcpmux_error_free(err);
    return 1;
}

/* The string value of "key" in compact JSON from mcpmux (no escapes in paths). */
static void json_string_value(const char *json, const char *key, char *out, size_t n) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":\"", key);
    const char *p = strstr(json, pattern);
    out[0] = '\0';
    if (p == NULL) return;
    p += strlen(pattern);
    size_t len = strcspn(p, "\"");
    if (len >= n) len = n - 1;
    memcpy(out, p, len);
    out[len] = '\0';
}

int main(int argc, char **argv) {
    const char *demo = argc > 1 ? argv[1] : "target/debug/mcpmux-demo-server";
    const char *work = argc > 2 ? argv[2] : ".";
    char config[1024], params[2048], dir[1024];
    mcpmux_engine *engine = NULL;
    mcpmux_sessions *sessions = NULL;
    mcpmux_error *err = NULL;
    char *json = NULL;
    int status = 0;

    snprintf(config, sizeof config,
             "[[mcp.servers]]\nname = \"demo\"\ncommand = \"%s\"\nallow_tools = [\"echo\"]\n"
             "[session]\nmax_turns = 4\n",
             demo);
    if (mcpmux_engine_new(NULL, &engine, &err) != MCPMUX_STATUS_OK) return fail("mcpmux_engine_new", err);
    if (mcpmux_sessions_new(engine, config, NULL, reviewer, NULL, &sessions, &err) != MCPMUX_STATUS_OK) {
        status = fail("mcpmux_sessions_new", err);
        goto done;
    }

    snprintf(params, sizeof params,
             "{\"skill\": \"review-plan\", \"reviewer\": \"host\", \"working_dir\": \"%s\", \"input\": "
             "\"---\\nUSER_REQUEST: Print a greeting\\n---\\n## PLAN\\n1. Add hello.c\\n2. Add a test\\n\"}",
             work);
    if (mcpmux_session_begin(sessions, params, &json, &err) != MCPMUX_STATUS_OK) {
        status = fail("mcpmux_session_begin", err);
        goto done;
    }
    printf("begin: %s\n", json);
    json_string_value(json, "session_dir", dir, sizeof dir);
    mcpmux_string_free(json);
    json = NULL;

    /* Wait until the round is no longer running. */
    snprintf(params, sizeof params, "{\"session_dir\": \"%s\", \"max_wait_seconds\": 10}", dir);
    for (;;) {
        if (mcpmux_session_wait(sessions, params, &json, &err) != MCPMUX_STATUS_OK) {
            status = fail("mcpmux_session_wait", err);
            goto done;
        }
        if (strstr(json, "\"status\":\"running\"") == NULL) break;
        mcpmux_string_free(json);
        json = NULL;
    }
    printf("wait: %s\n", json);
    if (strstr(json, "\"verdict\":\"APPROVE\"") == NULL) status = 1;
    mcpmux_string_free(json);
    json = NULL;

    snprintf(params, sizeof params, "{\"session_dir\": \"%s\"}", dir);
    if (mcpmux_session_end(sessions, params, &json, &err) != MCPMUX_STATUS_OK) {
        status = fail("mcpmux_session_end", err);
        goto done;
    }
    printf("end: %s\n", json);

done:
    mcpmux_string_free(json);
    mcpmux_sessions_free(sessions);
    mcpmux_engine_free(engine);
    return status;
}
