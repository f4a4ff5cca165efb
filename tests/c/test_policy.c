/*
 * libmcpmux's policy for a host's own calls, against the demo server with
 * allow_tools = ["echo", "add", "big", "extra_1", "nosuch"]: offered tools,
 * verdicts, the per-server report, a refused tool (the server is not
 * asked), redaction, the output cap, max_tool_calls, audit events through
 * the callback, mcpmux_policy_audit_json() and the audit file, the
 * refresh report, a policy refused on a hub it was not made for, and a
 * 2 MB result cut to its head and tail and kept whole in result_dir.
 */
#include "common.h"

#include <dirent.h>
#include <sys/stat.h>

/* Audit events received by the callback, joined with '\n'. */
typedef struct {
    pthread_mutex_t lock;
    int count;
    char text[16384];
    pthread_t thread;
} audit_sink;

static audit_sink sink = {PTHREAD_MUTEX_INITIALIZER, 0, "", 0};

static void on_audit(void *user_data, const char *event_json) {
    audit_sink *s = user_data;
    pthread_mutex_lock(&s->lock);
    s->count++;
    s->thread = pthread_self();
    size_t used = strlen(s->text);
    snprintf(s->text + used, sizeof s->text - used, "%s\n", event_json);
    pthread_mutex_unlock(&s->lock);
}

static int sink_count(void) {
    pthread_mutex_lock(&sink.lock);
    int n = sink.count;
    pthread_mutex_unlock(&sink.lock);
    return n;
}

/* A call through the policy; returns the status, the result in *out. */
static mcpmux_status pcall(mcpmux_hub *hub, mcpmux_policy *policy, const char *tool, const char *args,
                           char **out, mcpmux_error **err) {
    *out = NULL;
    *err = NULL;
    return mcpmux_hub_call_tool_with_policy(hub, tool, args, NULL, policy, out, err);
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    static char buf[16384];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

int main(void) {
    watchdog("test_policy", 120);
    const char *tmp = need_env("MCPMUX_TEST_TMP");
    char audit_path[1024];
    snprintf(audit_path, sizeof audit_path, "%s/policy-audit.jsonl", tmp);
    remove(audit_path);

    mcpmux_engine *engine = new_engine(NULL);
    char *config = concat_free(demo_config(), strdup("allow_tools = [\"echo\", \"add\", \"big\", \"extra_1\", \"nosuch\"]\n"));
    mcpmux_hub *hub = connect_text(engine, config);
    free(config);

    mcpmux_error *err = NULL;
    mcpmux_policy *policy = NULL;
    expect_status("policy_new with an unknown key",
                  mcpmux_policy_new(hub, "{\"max_tool_call\":1}", NULL, &policy, &err), &err,
                  MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "'max_tool_call' (did you mean 'max_tool_calls'?");
    expect_status("policy_new with a bad value", mcpmux_policy_new(hub, "{\"max_output_bytes\":0}", NULL, &policy, &err),
                  &err, MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "max_output_bytes");
    CHECK(policy == NULL, "out untouched on failure");
    expect_status("policy_new",
                  mcpmux_policy_new(hub, "{\"max_tool_calls\":6,\"max_output_bytes\":100}", audit_path, &policy, &err),
                  &err, MCPMUX_STATUS_OK, NULL, NULL);
    if (policy == NULL) die("no policy");
    expect_status("on_audit NULL cb", mcpmux_policy_on_audit(policy, hub, NULL, NULL, &err), &err,
                  MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "cb");
    expect_status("on_audit", mcpmux_policy_on_audit(policy, hub, on_audit, &sink, &err), &err, MCPMUX_STATUS_OK,
                  NULL, NULL);

    /* What is offered, and why the rest is not. */
    char *json = NULL;
    expect_status("offered", mcpmux_policy_offered_json(policy, hub, &json, &err), &err, MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(contains(json, "\"name\":\"mcp_demo_echo\"") && contains(json, "\"name\":\"mcp_demo_add\"") &&
              contains(json, "\"input_schema\":"),
          "echo and add offered, as list_tools shapes them: %s", json);
    CHECK(count_of(json, "\"server\":\"demo\"") == 3 && contains(json, "mcp_demo_big"), "echo, add and big only: %s", json);
    mcpmux_string_free(json);

    json = NULL;
    expect_status("verdicts", mcpmux_policy_verdicts_json(policy, hub, &json, &err), &err, MCPMUX_STATUS_OK, NULL,
                  NULL);
    CHECK(contains(json, "{\"name\":\"mcp_demo_echo\",\"server\":\"demo\",\"tool\":\"echo\",\"offered\":true}"),
          "echo verdict: %s", json);
    CHECK(contains(json, "\"tool\":\"crash\",\"offered\":false,\"refusal\":\"not_allowed\",\"reason\":"),
          "crash refused with a reason: %s", json);
    CHECK(count_of(json, "\"offered\":false") == 4, "four refused: %s", json);
    mcpmux_string_free(json);

    json = NULL;
    expect_status("report", mcpmux_policy_report_json(policy, hub, &json, &err), &err, MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(contains(json, "\"scope\":null") && contains(json, "\"in_scope\":true") &&
              contains(json, "\"offered\":[\"mcp_demo_echo\",\"mcp_demo_add\",\"mcp_demo_big\"]") &&
              contains(json, "\"missing\":[\"extra_1\",\"nosuch\"]"),
          "report as mcpmux policy --json: %s", json);
    mcpmux_string_free(json);

    /* Calls: 1 redacted echo, 2 refused crash, 3 echo, 4 capped big, 5 add, 6 echo, 7 over the limit. */
    mcpmux_status st = pcall(hub, policy, "mcp_demo_echo", "{\"text\":\"key AKIAIOSFODNN7EXAMPLE here\"}", &json, &err);
    expect_status("echo with a secret", st, &err, MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(contains(json, "key [REDACTED:aws_access_key_id] here") && !contains(json, "AKIAIOSFODNN7EXAMPLE"),
          "the secret is redacted: %s", json);
    mcpmux_string_free(json);

    st = pcall(hub, policy, "mcp_demo_crash", NULL, &json, &err);
    expect_status("crash is refused", st, &err, MCPMUX_STATUS_TOOL_NOT_ALLOWED, "TOOL_NOT_ALLOWED", "mcp_demo_crash");
    CHECK(json == NULL, "no result for a refusal");

    st = pcall(hub, policy, "mcp_demo_echo", "{\"text\":\"still here\"}", &json, &err);
    expect_status("echo after the refusal", st, &err, MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(contains(json, "still here"), "the server was not asked to crash: %s", json);
    mcpmux_string_free(json);

    st = pcall(hub, policy, "mcp_demo_big", "{\"bytes\":1000,\"tail\":\"\\nLAST LINE\"}", &json, &err);
    expect_status("big", st, &err, MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(json != NULL && strlen(json) < 500 && count_of(json, "x") >= 66 &&
              contains(json, "[output truncated by mcpmux: ") && contains(json, "max_output_bytes = 100"),
          "big is capped at 100 bytes: %.300s", json);
    CHECK(contains(json, "\\nLAST LINE\""), "big keeps its tail: %.600s", json);
    mcpmux_string_free(json);

    st = pcall(hub, policy, "mcp_demo_add", "{\"a\":2,\"b\":3}", &json, &err);
    expect_status("add", st, &err, MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(contains(json, "\"sum\":5"), "add result: %s", json);
    mcpmux_string_free(json);

    st = pcall(hub, policy, "mcp_demo_echo", "{\"text\":\"six\"}", &json, &err);
    expect_status("sixth call", st, &err, MCPMUX_STATUS_OK, NULL, NULL);
    mcpmux_string_free(json);

    st = pcall(hub, policy, "mcp_demo_echo", "{\"text\":\"seven\"}", &json, &err);
    expect_status("seventh call", st, &err, MCPMUX_STATUS_LIMIT_EXCEEDED, "LIMIT_EXCEEDED", "max_tool_calls");

    /* The audit trail, three ways. */
    json = NULL;
    expect_status("audit_json", mcpmux_policy_audit_json(policy, &json, &err), &err, MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(count_of(json, "\"time\":") == 7, "seven events: %s", json);
    CHECK(contains(json, "{\"time\":\"") && contains(json, "\"server\":\"demo\",\"tool\":\"echo\",\"status\":\"ok\"") &&
              contains(json, "\"duration_ms\":") && contains(json, "\"bytes\":"),
          "event fields: %s", json);
    CHECK(contains(json, "\"tool\":\"crash\",\"status\":\"not_allowed\",\"bytes\":0"), "refusal audited: %s", json);
    CHECK(contains(json, "\"status\":\"limit_exceeded\""), "limit audited: %s", json);
    CHECK(contains(json, "\"redactions\":1"), "redaction counted: %s", json);
    CHECK(contains(json, "\"truncated\":true"), "cap noted: %s", json);
    CHECK(!contains(json, "AKIA") && !contains(json, "still here"), "no output in the audit: %s", json);

    for (int i = 0; i < 200 * slow_factor() && sink_count() < 7; i++) sleep_ms(10);
    pthread_mutex_lock(&sink.lock);
    CHECK(sink.count == 7, "the callback saw seven events (%d)", sink.count);
    CHECK(count_of(sink.text, "\"status\":\"not_allowed\"") == 1 && count_of(sink.text, "\"status\":\"ok\"") == 5,
          "callback events: %s", sink.text);
    CHECK(!pthread_equal(sink.thread, pthread_self()), "the callback ran on an engine thread");
    pthread_mutex_unlock(&sink.lock);

    char *file = read_file(audit_path);
    CHECK(file != NULL && count_of(file, "\n") == 7 && count_of(file, "\"status\":\"limit_exceeded\"") == 1,
          "the audit file has seven lines: %s", file ? file : "(missing)");
    mcpmux_string_free(json);

    /* Refresh: grow adds extra_1 (allowed), the restarted server no longer has it. */
    json = call_ok(hub, "mcp_demo_grow", NULL, NULL);
    mcpmux_string_free(json);
    int grown = 0;
    for (int i = 0; i < 200 * slow_factor() && !grown; i++) {
        json = NULL;
        mcpmux_hub_list_tools(hub, &json, NULL);
        grown = contains(json, "mcp_demo_extra_1");
        mcpmux_string_free(json);
        if (!grown) sleep_ms(10);
    }
    CHECK(grown, "grow added extra_1");
    json = NULL;
    expect_status("offered after grow", mcpmux_policy_offered_json(policy, hub, &json, &err), &err, MCPMUX_STATUS_OK,
                  NULL, NULL);
    CHECK(contains(json, "mcp_demo_extra_1"), "extra_1 offered: %s", json);
    mcpmux_string_free(json);
    json = NULL;
    expect_status("refresh", mcpmux_policy_refresh(policy, hub, "demo", &json, &err), &err, MCPMUX_STATUS_OK, NULL,
                  NULL);
    CHECK(json != NULL && strcmp(json, "{\"server\":\"demo\",\"offered\":[\"echo\",\"add\",\"big\"],\"dropped\":[\"extra_1\"],"
                                       "\"added\":[],\"missing\":[\"extra_1\",\"nosuch\"]}") == 0,
          "refresh report: %s", json);
    mcpmux_string_free(json);
    json = NULL;
    expect_status("refresh of an unknown server", mcpmux_policy_refresh(policy, hub, "nope", &json, &err), &err,
                  MCPMUX_STATUS_UNKNOWN_SERVER, "UNKNOWN_SERVER", "nope");
    expect_status("NULL policy", mcpmux_policy_audit_json(NULL, &json, &err), &err, MCPMUX_STATUS_INVALID_INPUT,
                  "INVALID_INPUT", "policy");

    /* A policy made for `hub` is refused on another hub of the same config,
     * before the call is made or counted (core's check). */
    char *other_config = concat_free(demo_config(), strdup("allow_tools = [\"echo\"]\n"));
    mcpmux_hub *other = connect_text(engine, other_config);
    free(other_config);
    int audited = sink_count();
    char *out = NULL;
    expect_status("call on another hub", pcall(other, policy, "mcp_demo_echo", "{\"text\":\"x\"}", &out, &err), &err,
                  MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "another hub");
    CHECK(out == NULL, "no result from another hub");
    CHECK(sink_count() == audited, "the refused call was not audited");
    expect_status("offered on another hub", mcpmux_policy_offered_json(policy, other, &json, &err), &err,
                  MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "another hub");
    expect_status("refresh on another hub", mcpmux_policy_refresh(policy, other, "demo", &json, &err), &err,
                  MCPMUX_STATUS_INVALID_INPUT, "INVALID_INPUT", "another hub");
    mcpmux_hub_close(other, NULL);
    mcpmux_hub_free(other);

    /* A hostile server's big log whose last line matters: the head and the
     * tail come back, the whole is kept (0600) in the config's result_dir.
     * 2 MB, not the 50 MB of the Rust, Python and Node tests: this program
     * runs under valgrind. */
    char results[1100];
    snprintf(results, sizeof results, "%s/c-results", tmp);
    char session[1400];
    snprintf(session, sizeof session,
             "allow_tools = [\"big\"]\nmax_message_bytes = 67108864\n"
             "[session]\nmax_output_bytes = 3000\nresult_dir = \"%s\"\n",
             results);
    char *big_config = concat_free(demo_config(), strdup(session));
    mcpmux_hub *big_hub = connect_text(engine, big_config);
    free(big_config);
    mcpmux_policy *big_policy = NULL;
    expect_status("policy_new for big results", mcpmux_policy_new(big_hub, NULL, NULL, &big_policy, &err), &err,
                  MCPMUX_STATUS_OK, NULL, NULL);
    st = pcall(big_hub, big_policy, "mcp_demo_big", "{\"bytes\":2000000,\"tail\":\"\\nERROR: disk full\"}", &json,
               &err);
    expect_status("big of 2 MB", st, &err, MCPMUX_STATUS_OK, NULL, NULL);
    CHECK(json != NULL && strlen(json) < 4000 && contains(json, "[output truncated by mcpmux: ") &&
              contains(json, "whole result: read_result id="),
          "2 MB cut to head and tail: %.300s", json);
    CHECK(contains(json, "\\nERROR: disk full\""), "the tail is kept: %.4000s", json);
    mcpmux_string_free(json);
    DIR *dir = opendir(results);
    int kept = 0;
    struct dirent *entry;
    while (dir != NULL && (entry = readdir(dir)) != NULL) {
        if (entry->d_name[0] == '.') continue;
        char file[1500];
        snprintf(file, sizeof file, "%s/%s", results, entry->d_name);
        struct stat sb;
        CHECK(stat(file, &sb) == 0 && (sb.st_mode & 0777) == 0600 && sb.st_size == 2000000 + 17,
              "kept whole, 0600: %s", file);
        remove(file);
        kept++;
    }
    if (dir != NULL) closedir(dir);
    CHECK(kept == 1, "one result kept in %s, not %d", results, kept);
    mcpmux_policy_free(big_policy);
    mcpmux_hub_close(big_hub, NULL);
    mcpmux_hub_free(big_hub);

    mcpmux_policy_free(policy);
    mcpmux_policy_free(NULL);
    mcpmux_hub_close(hub, NULL);
    mcpmux_hub_free(hub);
    mcpmux_engine_free(engine);
    return finish();
}
