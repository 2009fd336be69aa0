//! The log read as a stream: each line parsed, checked (`check::Checker`) and taken
//! into the session state as it is read, so that `resume` of a long session holds what the
//! model will be sent and the events recovery needs (those since the last assistant message),
//! not every event. The rules are `read_log`'s: only a last line without its newline is torn;
//! anything else wrong is refused with its line; reading never changes the file.

use std::io::{BufRead, BufReader};
use std::path::Path;

use super::check::Checker;
use super::event::{Body, Event, SessionStart};
use super::read::LogError;
use super::state::SessionState;

/// A log as streamed from disk.
#[derive(Debug)]
pub struct Streamed {
    pub start: SessionStart,
    pub state: SessionState,
    /// The events from the last assistant message on (all of them before the first): what
    /// recovery looks at (`recover_tail`).
    pub tail: Vec<Event>,
    /// A turn is open at the start of `tail`.
    pub tail_opens_in_turn: bool,
    /// Bytes up to the end of the last whole event.
    pub good_len: u64,
    /// A last line without its newline, cut short by a crash.
    pub torn: Option<String>,
    pub last_seq: u64,
}

/// Streams and checks every event; see the module doc.
pub fn stream_log(path: &Path) -> Result<Streamed, LogError> {
    let shown = path.display().to_string();
    let io = |source| LogError::Io {
        path: shown.clone(),
        source,
    };
    let damaged = |line, problem| LogError::Damaged {
        path: shown.clone(),
        line,
        problem,
    };
    let mut state = SessionState::rewound(conversation_rewinds(path).map_err(io)?);
    let file = std::fs::File::open(path).map_err(io)?;
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut checker = Checker::default();
    state
        .history
        .read_images_from(super::blobs::Blobs::of_log(path));
    let mut start = None;
    let mut tail: Vec<Event> = Vec::new();
    let mut tail_opens_in_turn = false;
    let mut turn_open = false;
    let (mut good_len, mut last_seq, mut line_no) = (0u64, 0u64, 0usize);
    let mut torn = None;
    let mut line = Vec::with_capacity(1 << 16);
    loop {
        line.clear();
        let read = reader.read_until(b'\n', &mut line).map_err(io)?;
        if read == 0 {
            break;
        }
        line_no += 1;
        if line.last() != Some(&b'\n') {
            torn = Some(String::from_utf8_lossy(&line).into_owned());
            break;
        }
        let event = serde_json::from_slice::<Event>(&line[..line.len() - 1])
            .map_err(|e| damaged(line_no, format!("not a paddock event ({e})")))?;
        checker
            .push(&event)
            .map_err(|(line, problem)| damaged(line, problem))?;
        state.push(&event);
        good_len += read as u64;
        last_seq = event.seq;
        match &event.body {
            Body::SessionStart(s) => start = Some((**s).clone()),
            Body::AssistantMessage { .. } => {
                tail.clear();
                tail_opens_in_turn = turn_open;
            }
            Body::TurnStart { .. } => turn_open = true,
            Body::TurnEnd { .. } => turn_open = false,
            _ => {}
        }
        tail.push(event);
    }
    let Some(start) = start else {
        return Err(LogError::NoStart { path: shown });
    };
    Ok(Streamed {
        start,
        state,
        tail,
        tail_opens_in_turn,
        good_len,
        torn,
        last_seq,
    })
}

/// The ranges conversation rewinds take out of the history, found before the events are
/// taken (the history must skip them as it is built). Lines are only searched for the event's
/// type, which JSON text cannot spell (a quote inside a string is escaped), and those parsed;
/// the main pass checks every line.
fn conversation_rewinds(path: &Path) -> std::io::Result<Vec<(u64, u64)>> {
    const TYPE: &[u8] = br#""type":"conversation/rewind""#;
    let mut reader = BufReader::with_capacity(1 << 20, std::fs::File::open(path)?);
    let mut line = Vec::new();
    let mut found = Vec::new();
    while reader.read_until(b'\n', &mut line)? > 0 {
        if line.windows(TYPE.len()).any(|w| w == TYPE)
            && let Ok(event) = serde_json::from_slice::<Event>(&line)
        {
            found.extend(super::state::rewound_ranges([&event]));
        }
        line.clear();
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::{LogWriter, Source, StopReason, read_log, recover, recover_tail};

    #[test]
    fn streaming_agrees_with_reading_the_whole_log() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let (mut log, _) = LogWriter::start(&path, crate::log::event::test_start()).unwrap();
        log.append(Body::UserMessage { images: Vec::new(),
            text: "task".into(),
            source: Source::User,
        })
        .unwrap();
        log.append(Body::TurnStart { turn: 1 }).unwrap();
        log.append(Body::AssistantMessage { reasoning: Vec::new(),
            attempt: "a".into(),
            text: String::new(),
            tool_calls: vec![crate::model::ToolCall {
                id: "c1".into(),
                name: "t".into(),
                arguments: "{}".into(),
            }],
            finish: crate::model::Finish::ToolCalls,
            outcome: crate::model::Outcome::ToolCalls,
            usage: None,
            cost_usd: None,
        })
        .unwrap();
        log.append(Body::ToolCall {
            id: "c1".into(),
            name: "t".into(),
            tool: None,
            idempotent: false,
            touches: None,
        })
        .unwrap();
        log.append(Body::ToolStart { id: "c1".into() }).unwrap();
        drop(log);
        let read = read_log(&path).unwrap();
        let streamed = stream_log(&path).unwrap();
        assert_eq!(streamed.good_len, read.good_len);
        assert_eq!(streamed.last_seq, 6);
        assert_eq!(streamed.state.last_stop, Some(StopReason::Interrupted));
        assert_eq!(
            recover_tail(&streamed.tail, streamed.tail_opens_in_turn),
            recover(&read.events)
        );
        std::fs::write(&path, "{\"seq\":1,\"garbage\n").unwrap();
        assert!(stream_log(&path).unwrap_err().to_string().contains(":1:"));
    }
}
