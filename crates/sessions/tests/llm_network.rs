//! The LLM providers under the session config's `[network]` policy: a
//! base URL on a refused address (an IP, or a name that resolves to one)
//! fails at once with PROVIDER_ERROR naming the provider, the host and
//! the address, and nothing connects; an allowed network is reached.

use std::time::Duration;

use mcpmux_core::{Config, Error, NetworkPolicy};
use mcpmux_sessions::llm::anthropic::Anthropic;
use mcpmux_sessions::llm::api::ApiSettings;
use mcpmux_sessions::llm::openai::OpenAi;
use mcpmux_sessions::llm::provider::{CompletionRequest, Message, Provider};

const KEY: &str = "sk-mcpmux-test-SECRET-0123456789";

fn request() -> CompletionRequest {
    CompletionRequest {
        model: None,
        effort: None,
        system: "You review plans.".into(),
        messages: vec![Message::user("hi")],
        tools: Vec::new(),
        max_tokens: 64,
    }
}

async fn complete(p: &dyn Provider) -> Result<(), Error> {
    let sink = |_| {};
    tokio::time::timeout(Duration::from_secs(30), p.complete(&request(), &sink))
        .await
        .expect("no hang")
        .map(|_| ())
}

/// A listener on 127.0.0.1 that counts the connections it was offered.
async fn listener() -> (u16, tokio::task::JoinHandle<usize>) {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let task = tokio::spawn(async move {
        let mut n = 0;
        while let Ok(Ok((s, _))) =
            tokio::time::timeout(Duration::from_millis(500), l.accept()).await
        {
            drop(s);
            n += 1;
        }
        n
    });
    (port, task)
}

fn settings(base_url: String, network: NetworkPolicy) -> ApiSettings {
    ApiSettings {
        base_url: Some(base_url),
        api_key: Some(KEY.into()),
        request_timeout: Some(Duration::from_secs(5)),
        network,
        ..Default::default()
    }
}

#[tokio::test]
async fn a_refused_base_url_fails_at_once_and_connects_nowhere() {
    let deny = Config::parse(
        "[network]\ndeny_private = true\n[[mcp.servers]]\nname = \"a\"\nurl = \"https://example.com/mcp\"\n",
    )
    .unwrap()
    .network;
    let (port, accepted) = listener().await;
    for (base, host) in [
        (
            format!("http://127.0.0.1:{port}/v1"),
            "connecting to 127.0.0.1 is refused",
        ),
        (
            format!("http://localhost:{port}/v1"),
            "connecting to localhost (it resolves to ",
        ),
    ] {
        let p = OpenAi::new(settings(base.clone(), deny.clone())).unwrap();
        let e = complete(&p).await.unwrap_err();
        assert_eq!(e.code(), "PROVIDER_ERROR", "{e}");
        let m = e.to_string();
        assert!(m.starts_with("openai: "), "{m}");
        assert!(m.contains(host) && m.contains("loopback"), "{m}");
        assert!(m.contains("refused by the [network] policy"), "{m}");
        assert!(!m.contains("attempts") && !m.contains("SECRET"), "{m}");
        let p = Anthropic::new(settings(base, deny.clone())).unwrap();
        let m = complete(&p).await.unwrap_err().to_string();
        assert!(m.starts_with("anthropic: ") && m.contains(host), "{m}");
    }
    assert_eq!(accepted.await.unwrap(), 0, "a refused provider connected");
}

#[tokio::test]
async fn require_https_refuses_a_cleartext_api() {
    let https_only = NetworkPolicy::new().with_require_https(true);
    let p = OpenAi::new(settings("http://api.example.com/v1".into(), https_only)).unwrap();
    let m = complete(&p).await.unwrap_err().to_string();
    assert!(m.contains("openai: http://api.example.com/v1/chat/completions refused by the [network] policy (require_https"), "{m}");
}

#[tokio::test]
async fn an_allowed_network_is_reached() {
    let (port, accepted) = listener().await;
    let allow =
        NetworkPolicy::from_options(true, &["127.0.0.0/8"], false, "allow_networks").unwrap();
    let p = OpenAi::new(settings(format!("http://localhost:{port}/v1"), allow)).unwrap();
    let m = complete(&p).await.unwrap_err().to_string();
    assert!(!m.contains("refused by the [network] policy"), "{m}");
    assert!(accepted.await.unwrap() > 0, "{m}");
}
