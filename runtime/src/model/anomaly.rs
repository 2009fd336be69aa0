//! How a stream anomaly reads for a person: the line `run` and `chat` show
//! under an answer, and what `paddock log` lists for a `stream/anomaly` event. The anomalies
//! themselves are recorded by the assemblers (`Diagnostic`, V2).

use std::fmt;

use super::types::Diagnostic;

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Diagnostic::NonJsonData { line, sample } => match line {
                Some(line) => write!(f, "line {line} is not JSON and was skipped: {sample:?}"),
                None => write!(f, "data that is not JSON was skipped: {sample:?}"),
            },
            Diagnostic::UnexpectedShape { sample } => {
                write!(f, "an event of an unexpected shape was ignored: {sample:?}")
            }
            Diagnostic::InvalidUtf8 { bytes_replaced } => write!(
                f,
                "{bytes_replaced} byte(s) of invalid UTF-8 were replaced with U+FFFD"
            ),
            Diagnostic::MissingEndMarker => {
                write!(f, "the stream ended without its end marker")
            }
            Diagnostic::FinishInferred { finish } => write!(
                f,
                "no finish reason arrived; taken as {finish:?} from the body"
            ),
            Diagnostic::LateDelta { index } => write!(
                f,
                "a delta for block {index} arrived after the block ended and was ignored"
            ),
            Diagnostic::RepeatedCall { id } => {
                write!(f, "call {id} was sent twice; it is one call")
            }
            Diagnostic::GeneratedCallId { id } => {
                write!(f, "a call came without an id; it is called {id}")
            }
            Diagnostic::MissingCallName { id } => write!(f, "call {id} came without a name"),
            Diagnostic::RepeatedMessageStart => write!(
                f,
                "the message started twice; the repeat (and its usage) was ignored"
            ),
            Diagnostic::UnknownEvent { name } => {
                write!(f, "an unknown event `{name}` was ignored")
            }
            Diagnostic::RefusalText => write!(f, "the model refused in its text"),
            Diagnostic::SecondResponse { id } => write!(
                f,
                "a second response ({id}) followed the first in one body; it was ignored, \
                 its usage too"
            ),
            Diagnostic::MirroredFunctionCall { id } => write!(
                f,
                "a legacy function_call repeated call {id}; taken as that call, not another"
            ),
        }
    }
}
