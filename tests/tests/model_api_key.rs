//! The API key is read from the environment variable the preset names and sent the way each
//! provider expects (M1). Alone in its test binary: it sets an environment variable.

#![allow(clippy::print_stdout, clippy::print_stderr)]

#[path = "suite/common/mod.rs"]
mod common;

use common::{config, provider, run, server, user};
use paddock::model::ProviderKind;
use paddock_tests::scripted::{Step, Turn};

#[test]
fn the_key_from_the_named_variable_is_sent_as_each_provider_expects() {
    // SAFETY: this is the only test in this binary and no other thread exists yet (the Tokio
    // runtime is built below), so nothing reads the environment concurrently.
    unsafe { std::env::set_var("PADDOCK_TEST_API_KEY", "sk-test-123") };
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    runtime.block_on(async {
        for kind in common::KINDS {
            let server = server(vec![Step::Reply(Turn::text(&["ok"]))]).await;
            let mut config = config(kind, &server);
            config.api_key_env = Some("PADDOCK_TEST_API_KEY".into());
            let (result, _) = run(provider(config).as_ref(), &user("hi")).await;
            assert!(result.is_ok(), "{kind:?}: {:?}", result.err());
            let headers = &server.requests()[0].headers;
            let (name, value) = match kind {
                ProviderKind::Openai => ("authorization", "Bearer sk-test-123"),
                ProviderKind::Anthropic => ("x-api-key", "sk-test-123"),
            };
            assert_eq!(
                headers.get(name).map(String::as_str),
                Some(value),
                "{kind:?}"
            );
        }
    });
}
