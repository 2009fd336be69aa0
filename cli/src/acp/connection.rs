//! Each ACP method paddock serves, to its handler in `sessions.rs`, on the protocol crate's v1
//! agent connection. Handlers answer at once, except `session/prompt`, whose turn runs in a
//! task of its own so `session/cancel` and the editor's answers keep arriving while it works.
//! A request for any other method gets an error that names it and lists what is served.

use std::sync::Arc;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, Implementation, InitializeRequest, InitializeResponse,
    LoadSessionRequest, NewSessionRequest, PromptCapabilities, PromptRequest,
    SetSessionModeRequest,
};
use agent_client_protocol::v1::{Builder, Dispatch};
use agent_client_protocol::{
    Agent, Error, ErrorCode, HandleDispatchFrom, NullClose, UntypedMessage, on_receive_dispatch,
    on_receive_notification, on_receive_request,
};

use super::sessions::Sessions;

/// The methods a client may call, for the error that answers any other.
const SERVED: &str =
    "initialize, session/new, session/load, session/prompt, session/set_mode, session/cancel";

/// The agent's side of the connection, every handler registered.
pub fn agent(
    sessions: Arc<Sessions>,
) -> Builder<
    Agent,
    impl HandleDispatchFrom<agent_client_protocol::Client>,
    agent_client_protocol::NullRun,
    NullClose,
> {
    let images = sessions.takes_images();
    let new = Arc::clone(&sessions);
    let load = Arc::clone(&sessions);
    let prompt = Arc::clone(&sessions);
    let mode = Arc::clone(&sessions);
    let cancel = sessions;
    Agent
        .v1()
        .name("paddock")
        .on_receive_request(
            async move |request: InitializeRequest, responder, _cx| {
                responder.respond(initialize(&request, images))
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder, cx| {
                responder.respond_with_result(new.new_session(request, cx))
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest, responder, cx| {
                // Reopening reads the log: off the dispatch loop, like a prompt.
                let load = Arc::clone(&load);
                tokio::spawn(async move {
                    let _ = responder.respond_with_result(load.load_session(request, cx).await);
                });
                Ok(())
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder, _cx| {
                let prompt = Arc::clone(&prompt);
                tokio::spawn(async move {
                    let _ = responder.respond_with_result(prompt.prompt(request).await);
                });
                Ok(())
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest, responder, _cx| {
                // A change after the first prompt starts the new preset's session: off the
                // dispatch loop, like a prompt.
                let mode = Arc::clone(&mode);
                tokio::spawn(async move {
                    let _ = responder.respond_with_result(mode.set_mode(request).await);
                });
                Ok(())
            },
            on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: CancelNotification, _cx| {
                cancel.cancel(&notification.session_id.0);
                Ok(())
            },
            on_receive_notification!(),
        )
        .on_receive_dispatch(
            async move |dispatch: Dispatch<UntypedMessage, UntypedMessage>, _cx| match dispatch {
                Dispatch::Request(request, responder) => {
                    responder.respond_with_error(not_served(&request.method))
                }
                Dispatch::Notification(_) => Ok(()),
                Dispatch::Response(result, router) => router.route_with_result(result),
            },
            on_receive_dispatch!(),
        )
}

/// What paddock offers: sessions reopened from their logs, prompts of text and embedded or
/// linked text resources, and images when the model new sessions start with takes them (no
/// audio).
fn initialize(request: &InitializeRequest, images: bool) -> InitializeResponse {
    let version = request.protocol_version.min(ProtocolVersion::V1);
    InitializeResponse::new(version)
        .agent_capabilities(
            AgentCapabilities::new()
                .load_session(true)
                .prompt_capabilities(
                    PromptCapabilities::new()
                        .embedded_context(true)
                        .image(images),
                ),
        )
        .agent_info(Implementation::new("paddock", env!("CARGO_PKG_VERSION")))
}

/// The error for a method paddock does not serve.
fn not_served(method: &str) -> Error {
    Error::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!(
            "paddock acp does not serve `{}`; it serves {SERVED} (ACP protocol version 1)",
            paddock_types::text::sanitize(method)
        ),
    )
}
