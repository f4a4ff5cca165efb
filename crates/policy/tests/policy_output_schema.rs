//! A model's call through the session policy whose result breaks the
//! tool's `outputSchema` (the demo server's `add` with
//! `DEMO_ADD_OUTPUT=wrong_type`): the model sees an `OUTPUT_INVALID` error
//! result naming the tool and the path; a host's call with the policy
//! chooses (`validate_output`).

use mcpmux_test_support as common;

use std::sync::Arc;

use common::*;
use mcpmux_core::{CallOptions, Hub, ValidateOutput};
use mcpmux_policy::SessionPolicy;
use serde_json::json;

async fn hub() -> Hub {
    mcpmux_policy::register_config_layer();
    let entry = demo_entry(
        "demo",
        "allow_all = true\nenv = { DEMO_ADD_OUTPUT = \"wrong_type\" }",
    );
    Hub::connect(config(&[entry])).await.unwrap()
}

#[tokio::test]
async fn the_model_sees_an_output_invalid_error_result() {
    let hub = hub().await;
    let policy = SessionPolicy::for_hub(&hub, None, None).unwrap();
    let r = policy
        .call(&hub, "mcp_demo_add", &json!({"a": 2, "b": 3}))
        .await;
    assert!(r.is_error, "{r:?}");
    assert!(r.content.starts_with("OUTPUT_INVALID"), "{r:?}");
    assert!(
        r.content.contains("tool 'add'") && r.content.contains("'/sum'"),
        "{r:?}"
    );
    hub.close().await;
}

#[tokio::test]
async fn a_host_call_with_the_policy_chooses() {
    let hub = hub().await;
    let policy = Arc::new(SessionPolicy::for_hub(&hub, None, None).unwrap());
    let opts = CallOptions::default().with_policy(policy.clone());
    let args = json!({"a": 2, "b": 3});
    let e = hub
        .call_tool("mcp_demo_add", Some(&args), &opts)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "OUTPUT_INVALID", "{e}");
    let warn = opts.with_validate_output(ValidateOutput::Warn);
    let r = hub
        .call_tool("mcp_demo_add", Some(&args), &warn)
        .await
        .unwrap();
    assert_eq!(r.value()["structuredContent"]["sum"], "5");
    hub.close().await;
}
