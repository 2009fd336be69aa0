//! Whatever a model sends, the whole pipeline (check, scheduler, sandbox) answers every call id
//! in order and never panics (V3, V4, X1); repaired calls run with, and report, the repaired
//! arguments (C3); the tool list goes out exactly as declared (C1).

use crate::pipeline_common::{Bench, call};
use paddock::calls::Repair;
use paddock::pipeline::RawCall;
use paddock_types::contract::ErrorCode;
use serde_json::json;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn repaired_calls_run_with_the_repaired_arguments() {
    let bench = Bench::new().await;
    let (scheduler, _rx) = bench.scheduler(8, CancellationToken::new());
    let calls = [
        call("alias", "Read", r#"{"file_path": "a.txt"}"#),
        call("double", "read-file", r#""{\"path\": \"a.txt\"}""#),
        call("two", "read_file", r#"{"limit": 1}{"path": "a.txt"}"#),
        call("empty", "list_dir", "  "),
    ];
    let records = scheduler.run(&calls).await;
    for r in &records {
        assert!(r.result.is_ok(), "{}: {:?}", r.id, r.result);
        assert!(!r.repairs.is_empty(), "{}", r.id);
    }
    assert_eq!(records[0].tool.as_deref(), Some("read_file"));
    assert_eq!(records[0].args, Some(json!({"path": "a.txt"})));
    assert!(
        records[1]
            .repairs
            .contains(&Repair::DoubleEncoded { field: None })
    );
    assert_eq!(
        records[2].repairs,
        [Repair::SplitConcatenated {
            found: 2,
            taken: 1,
            not_run: vec![json!({"limit": 1})]
        }]
    );
    assert_eq!(records[3].args, Some(json!({})));
}

#[tokio::test]
async fn malformed_calls_each_get_an_error_that_quotes_them() {
    let bench = Bench::new().await;
    let (scheduler, _rx) = bench.scheduler(8, CancellationToken::new());
    let calls = [
        call("cut", "read_file", r#"{"path": "a.tx"#),
        call("prose", "read_file", "please read a.txt"),
        call("wrong", "read_file", r#"{"path": 7}"#),
        call("nosuch", "frobnicate", "{}"),
    ];
    let records = scheduler.run(&calls).await;
    let expect = [
        (ErrorCode::InvalidJson, r#"{\"path\": \"a.tx"#),
        (ErrorCode::InvalidJson, "please read a.txt"),
        (ErrorCode::InvalidArgs, r#"{\"path\": 7}"#),
        (ErrorCode::UnknownTool, "frobnicate"),
    ];
    for (r, (code, quoted)) in records.iter().zip(expect) {
        let error = r.result.as_ref().unwrap_err();
        assert_eq!(error.code, code, "{}: {}", r.id, error.message);
        assert!(error.retryable, "{}", r.id);
        assert!(
            error.message.contains(quoted),
            "{}: {}",
            r.id,
            error.message
        );
        if code != ErrorCode::UnknownTool {
            assert!(
                error.message.contains("path (string, required)"),
                "{}: {}",
                r.id,
                error.message
            );
        } else {
            assert!(error.message.contains("read_file"), "{}", error.message);
        }
    }
}

/// A small deterministic generator (xorshift), so the suite needs no extra dependency.
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn text(&mut self) -> String {
        const PIECES: &[&str] = &[
            "{",
            "}",
            "[",
            "]",
            "\"",
            ":",
            ",",
            "path",
            "\"path\"",
            "\"a.txt\"",
            "1",
            "null",
            "\\",
            " ",
            "é",
            "\"{\\\"path\\\":\\\"a.txt\\\"}\"",
            "file_path",
            "\u{0}",
            "𝄞",
            "ms",
        ];
        let n = (self.next() % 24) as usize;
        if self.next().is_multiple_of(3) {
            let bytes: Vec<u8> = (0..n * 4).map(|_| self.next() as u8).collect();
            return String::from_utf8_lossy(&bytes).into_owned();
        }
        (0..n)
            .map(|_| PIECES[(self.next() as usize) % PIECES.len()])
            .collect()
    }
}

#[tokio::test]
async fn any_bytes_under_any_name_get_a_result_for_every_id() {
    let bench = Bench::new().await;
    let (scheduler, _rx) = bench.scheduler(8, CancellationToken::new());
    let names = [
        "read_file",
        "Read",
        "list_dir",
        "nap",
        "echo",
        "",
        "💥",
        "write_slowly",
    ];
    let mut noise = Noise(0x9E37_79B9_7F4A_7C15);
    let calls: Vec<RawCall> = (0..200)
        .map(|i| {
            let name = names[(noise.next() as usize) % names.len()];
            call(&format!("c{i}"), name, &noise.text())
        })
        .collect();
    let records = scheduler.run(&calls).await;
    assert_eq!(records.len(), calls.len());
    for (r, c) in records.iter().zip(&calls) {
        assert_eq!(r.id, c.id);
        if let Err(e) = &r.result {
            assert!(!e.message.is_empty());
        }
    }
}
