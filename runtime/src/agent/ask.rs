//! One model request of the loop (L3): the request built from the history the log keeps
//! derived (L1), attempts logged as they happen, and a request the server refuses as longer
//! than its context compacted once and sent again, never a crash.

use super::budget::{self, NextRequest};
use super::{Agent, Stop};
use crate::log::{Body, CompactReason, StopReason};
use crate::model::context::{is_overflow, revealed_window};
use crate::model::{
    Completion, EventSink, Message, Messages, ModelError, ModelEvent, ModelRequest,
};

/// How a request failed: the model, or the log while recording it.
pub(super) enum Failed {
    Model(ModelError),
    Log(std::io::Error),
}

impl Agent<'_> {
    /// The next request; when the server says it is too long, one compaction and one retry.
    pub(super) async fn ask_fitted(&self) -> Result<Completion, Stop> {
        // The first request is dropped before a compaction changes the history it shares.
        let first = self.ask(&self.budgeted_request()?, true).await;
        match first {
            Err(Failed::Model(error)) if overflowed(&error) => {
                let revealed = match root(&error) {
                    ModelError::Status { body, .. } => revealed_window(body),
                    _ => None,
                };
                self.compact_with(CompactReason::Overflow, None, revealed)
                    .await?;
                self.ask(&self.budgeted_request()?, true)
                    .await
                    .map_err(|f| self.stop_of(f))
            }
            other => other.map_err(|f| self.stop_of(f)),
        }
    }

    /// The next request, its reply capped to what the token and cost budgets leave once its
    /// estimated input is paid (B3); no request when they leave too little for a reply.
    fn budgeted_request(&self) -> Result<ModelRequest, Stop> {
        let mut request = self.request();
        let config = self.provider.config();
        let next = NextRequest {
            input_tokens: self.fill().tokens,
            reported_tokens: self.log.with_state(|s| s.history.reported_tokens()),
            output_limit: config.output_limit(),
            price: config.price_in_force(),
        };
        request.max_output_tokens = budget::reply_room(&self.spent(), &self.budgets, &next)
            .map_err(|(reason, detail)| Stop(reason, Some(detail)))?;
        Ok(request)
    }

    /// The system prompt, then the history as the log derives it, large old results aged out.
    /// The history's messages are shared with the log's state, not copied. The
    /// request before the last assistant message ended where that message starts: a provider
    /// that caches up to breakpoints reads what it wrote (`cached_prefix`).
    pub(super) fn request(&self) -> ModelRequest {
        let ageing = self.policy().ageing;
        let (history, session) = self
            .log
            .with_state(|s| (s.history.render(ageing), s.session.clone()));
        let mut messages = Messages::default();
        messages.push(Message::System {
            text: self.system.clone(),
        });
        messages.append(history);
        let last_answer = (0..messages.len()).rev().find(|&i| {
            messages
                .get(i)
                .is_some_and(|k| matches!(*k.message, Message::Assistant { .. }))
        });
        ModelRequest {
            messages,
            tools: self.tools.clone(),
            max_output_tokens: None,
            cache_key: (!session.is_empty()).then_some(session),
            cached_prefix: last_answer,
        }
    }

    /// Sends `request`: streams its events to the observer when `show`, and logs its attempts
    /// (L3); the message is returned only once its attempt completed.
    pub(super) async fn ask(
        &self,
        request: &ModelRequest,
        show: bool,
    ) -> Result<Completion, Failed> {
        let (sink, mut events) = EventSink::channel();
        let cancel = self.calls.cancel.clone();
        let complete = async move {
            let result = self.provider.complete(request, &sink, &cancel).await;
            drop(sink);
            result
        };
        let watch = async {
            let mut log_error = None;
            while let Some(event) = events.recv().await {
                if show || matches!(event, ModelEvent::RetryScheduled { .. }) {
                    self.observer.model_event(&event);
                }
                if let Some(body) = attempt_body(&event)
                    && let Err(e) = self.log.append(body)
                {
                    log_error.get_or_insert(e);
                }
            }
            log_error
        };
        let (result, log_error) = tokio::join!(complete, watch);
        if let Some(e) = log_error {
            return Err(Failed::Log(e));
        }
        result.map_err(Failed::Model)
    }

    pub(super) fn stop_of(&self, failed: Failed) -> Stop {
        match failed {
            Failed::Log(e) => Stop::host("cannot write the session log", e),
            Failed::Model(e) => self.model_stop(&e),
        }
    }

    fn model_stop(&self, error: &ModelError) -> Stop {
        match root(error) {
            ModelError::Cancelled => Stop(StopReason::Interrupted, None),
            _ if self.calls.cancel.is_cancelled() => Stop(StopReason::Interrupted, None),
            ModelError::EmptyStream | ModelError::Protocol { .. } => {
                Stop(StopReason::ProtocolError, Some(error.to_string()))
            }
            _ => Stop(StopReason::ModelError, Some(error.to_string())),
        }
    }
}

fn root(error: &ModelError) -> &ModelError {
    let mut root = error;
    while let ModelError::RetriesExhausted { last, .. } = root {
        root = last;
    }
    root
}

/// The server refused the request as longer than the model's context.
fn overflowed(error: &ModelError) -> bool {
    matches!(root(error), ModelError::Status { status, body, .. } if is_overflow(*status, body))
}

/// The attempt events that go into the log (L3); deltas are for display only.
fn attempt_body(event: &ModelEvent) -> Option<Body> {
    match event {
        ModelEvent::AttemptStarted { attempt, number } => Some(Body::AttemptStart {
            attempt: attempt.0.clone(),
            number: *number,
        }),
        ModelEvent::AttemptEnded {
            attempt,
            status,
            error,
            partial,
            ..
        } => Some(Body::AttemptEnd {
            attempt: attempt.0.clone(),
            status: *status,
            error: error.clone(),
            partial_text: partial
                .as_ref()
                .map(|p| p.text.clone())
                .filter(|t| !t.is_empty()),
        }),
        _ => None,
    }
}
