//! `build_backend` with every provider compiled in, and `MeteredVlm` over a
//! real HTTP backend.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use serde_json::json;

use nav_planner::vlm::{BackendConfig, MeteredVlm, Provider, VisionLanguageModel, VlmError, build_backend_with_env};
use support::server::{Reply, ScriptedServer};
use support::{TEST_KEY, json_request, quick};

#[test]
fn every_provider_builds_its_backend() {
    let env = |var: &str| match var {
        "OPENAI_API_KEY" | "GEMINI_API_KEY" | "VERTEX_ACCESS_TOKEN" | "ANTHROPIC_API_KEY" => Some(TEST_KEY.to_string()),
        "GOOGLE_CLOUD_PROJECT" => Some("proj".to_string()),
        _ => None,
    };
    let expected = [
        (Provider::OpenAi, "openai", "gpt-4o-mini", "https://api.openai.com/v1"),
        (Provider::Gemini, "gemini", "gemini-2.5-flash-lite", "https://generativelanguage.googleapis.com"),
        (Provider::Vertex, "vertex", "gemini-2.5-flash-lite", "https://us-central1-aiplatform.googleapis.com"),
        (Provider::Anthropic, "anthropic", "claude-haiku-4-5", "https://api.anthropic.com"),
    ];
    for (provider, name, model, endpoint) in expected {
        let vlm = build_backend_with_env(&BackendConfig::new(provider), &env).unwrap();
        let info = vlm.describe();
        assert_eq!((info.provider.as_str(), info.model.as_str()), (name, model));
        assert_eq!(info.endpoint.as_deref(), Some(endpoint));
        assert_eq!(info.to_string(), format!("{name}/{model}"));
    }
}

#[test]
fn backends_debug_print_no_credentials() {
    use nav_planner::vlm::{AnthropicBackend, GeminiBackend, OpenAiBackend};
    let env = |var: &str| var.ends_with("_KEY").then(|| TEST_KEY.to_string());
    let mut vertex = BackendConfig::new(Provider::Vertex).with_api_key(TEST_KEY);
    vertex.vertex.project = Some("p".into());
    let printed = [
        format!("{:?}", OpenAiBackend::with_env(&BackendConfig::new(Provider::OpenAi), &env).unwrap()),
        format!("{:?}", GeminiBackend::with_env(&BackendConfig::new(Provider::Gemini), &env).unwrap()),
        format!("{:?}", GeminiBackend::with_env(&vertex, &env).unwrap()),
        format!("{:?}", AnthropicBackend::with_env(&BackendConfig::new(Provider::Anthropic), &env).unwrap()),
    ];
    for text in printed {
        assert!(!text.contains(TEST_KEY), "{text}");
        assert!(text.contains("[REDACTED]"), "{text}");
    }
}

#[test]
fn bad_configs_are_rejected_before_building() {
    let cfg = BackendConfig { timeout_s: -1.0, ..BackendConfig::new(Provider::OpenAi).with_api_key("k") };
    let err = build_backend_with_env(&cfg, &|_| None).err().unwrap();
    assert!(matches!(err, VlmError::Config { .. }));
    assert!(err.to_string().contains("vlm.timeout_s"), "{err}");
}

#[tokio::test]
async fn metered_backend_counts_calls_tokens_and_failures() {
    let ok = json!({"choices": [{"message": {"content": "fine"}, "finish_reason": "stop"}],
                    "model": "gpt-4o", "usage": {"prompt_tokens": 800, "completion_tokens": 50}});
    let server = ScriptedServer::start(vec![
        Reply::json(ok.clone()),
        Reply::server_error(500),
        Reply::json(ok),
        Reply::raw(401, "nope"),
    ])
    .await;
    let cfg = quick(BackendConfig::new(Provider::OpenAi).with_base_url(server.url()).with_api_key(TEST_KEY));
    let vlm = MeteredVlm::new(build_backend_with_env(&cfg, &|_| None).unwrap());
    vlm.complete(json_request()).await.unwrap();
    vlm.complete(json_request()).await.unwrap();
    assert!(vlm.complete(json_request()).await.is_err());
    let stats = vlm.stats();
    assert_eq!((stats.calls, stats.successes, stats.failures, stats.attempts), (3, 2, 1, 3));
    assert_eq!((stats.usage.prompt_tokens, stats.usage.completion_tokens), (1600, 100));
    assert!((stats.cost_usd - 2.0 * (800.0 * 2.5 + 50.0 * 10.0) / 1e6).abs() < 1e-12);
    assert_eq!(stats.failures_by_kind.get("http"), Some(&1));
}
