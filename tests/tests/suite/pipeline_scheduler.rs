//! The scheduler (X1-X4) against real plugins: parallel reads overlap, barriers run alone,
//! writes to one real path are serialized in model order, results come back in model order
//! paired by id, a failure stays its own, and a cancelled batch splits into CANCELLED (running)
//! and NOT_EXECUTED (queued) with a result for every id. Timing is asserted as ordering of
//! observed transitions, never as speed.

use crate::pipeline_common::{Bench, call, drain, nap};
use paddock::pipeline::{CallEvent, CallPhase, CallRecord};
use paddock_types::contract::ErrorCode;
use tokio_util::sync::CancellationToken;

/// Position in `events` of `id` reaching `phase` (Completed matches any end).
fn at(events: &[CallEvent], id: &str, started: bool) -> usize {
    events
        .iter()
        .position(|e| {
            e.id == id
                && if started {
                    e.phase == CallPhase::Started
                } else {
                    matches!(
                        e.phase,
                        CallPhase::Completed
                            | CallPhase::Failed { .. }
                            | CallPhase::Cancelled { .. }
                    )
                }
        })
        .unwrap_or_else(|| {
            panic!(
                "no {} event for {id}: {events:?}",
                if started { "start" } else { "end" }
            )
        })
}

fn start(events: &[CallEvent], id: &str) -> usize {
    at(events, id, true)
}

fn end(events: &[CallEvent], id: &str) -> usize {
    at(events, id, false)
}

fn code(record: &CallRecord) -> Option<&ErrorCode> {
    record.result.as_ref().err().map(|e| &e.code)
}

#[tokio::test]
async fn concurrency_safe_reads_overlap_in_the_pool() {
    let bench = Bench::new().await;
    let (scheduler, mut rx) = bench.scheduler(8, CancellationToken::new());
    let calls: Vec<_> = (0..4).map(|i| nap(&format!("n{i}"), 200)).collect();
    let records = scheduler.run(&calls).await;
    assert!(records.iter().all(|r| r.result.is_ok()), "{records:?}");
    let events = drain(&mut rx);
    let first_end = (0..4)
        .map(|i| end(&events, &format!("n{i}")))
        .min()
        .unwrap();
    for i in 0..4 {
        assert!(start(&events, &format!("n{i}")) < first_end, "{events:?}");
    }
}

#[tokio::test]
async fn the_pool_never_runs_more_than_max_parallel_calls() {
    let bench = Bench::new().await;
    let (scheduler, mut rx) = bench.scheduler(2, CancellationToken::new());
    let calls: Vec<_> = (0..5).map(|i| nap(&format!("n{i}"), 50)).collect();
    scheduler.run(&calls).await;
    let mut running = 0usize;
    for event in drain(&mut rx) {
        match event.phase {
            CallPhase::Started => running += 1,
            CallPhase::Completed => running -= 1,
            _ => {}
        }
        assert!(running <= 2);
    }
}

#[tokio::test]
async fn a_call_not_declared_concurrency_safe_runs_alone_as_a_barrier() {
    let bench = Bench::new().await;
    let (scheduler, mut rx) = bench.scheduler(8, CancellationToken::new());
    let calls = [
        nap("before", 100),
        call("barrier", "nap_alone", r#"{"ms": 50}"#),
        nap("after", 10),
    ];
    let records = scheduler.run(&calls).await;
    assert!(records.iter().all(|r| r.result.is_ok()), "{records:?}");
    let events = drain(&mut rx);
    assert!(
        end(&events, "before") < start(&events, "barrier"),
        "{events:?}"
    );
    assert!(
        end(&events, "barrier") < start(&events, "after"),
        "{events:?}"
    );
}

#[tokio::test]
async fn writes_to_one_real_path_are_serialized_in_model_order() {
    let bench = Bench::new().await;
    let (scheduler, mut rx) = bench.scheduler(8, CancellationToken::new());
    let calls = [
        call(
            "w1",
            "write_slowly",
            r#"{"path": "log.txt", "text": "1", "ms": 150}"#,
        ),
        call(
            "w2",
            "write_slowly",
            r#"{"path": "./log.txt", "text": "2", "ms": 10}"#,
        ),
        call(
            "other",
            "write_slowly",
            r#"{"path": "other.txt", "text": "3", "ms": 10}"#,
        ),
    ];
    let records = scheduler.run(&calls).await;
    assert!(records.iter().all(|r| r.result.is_ok()), "{records:?}");
    let events = drain(&mut rx);
    assert!(end(&events, "w1") < start(&events, "w2"), "{events:?}");
    assert!(
        start(&events, "other") < end(&events, "w1"),
        "a different path overlaps: {events:?}"
    );
    let written = std::fs::read_to_string(bench.work.path().join("log.txt")).unwrap();
    assert_eq!(written, "12");
}

#[tokio::test]
async fn results_come_back_in_model_order_paired_by_id() {
    let bench = Bench::new().await;
    let (scheduler, mut rx) = bench.scheduler(8, CancellationToken::new());
    let calls = [
        nap("slow", 200),
        nap("fast", 1),
        call("read", "read_file", r#"{"path":"a.txt"}"#),
    ];
    let records = scheduler.run(&calls).await;
    let ids: Vec<&str> = records.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["slow", "fast", "read"]);
    assert_eq!(
        records[2].result.as_ref().unwrap().content,
        "     1\talpha\n"
    );
    let events = drain(&mut rx);
    assert!(end(&events, "fast") < end(&events, "slow"), "{events:?}");
}

#[tokio::test]
async fn one_failing_call_does_not_fail_its_siblings() {
    let bench = Bench::new().await;
    let (scheduler, mut rx) = bench.scheduler(8, CancellationToken::new());
    let calls = [
        nap("ok1", 20),
        call("unknown", "nap_forever", "{}"),
        call("badjson", "nap", r#"{"ms": 1"#),
        call("badargs", "nap", r#"{"ms": "soon"}"#),
        call("panics", "panic", "{}"),
        nap("ok2", 20),
    ];
    let records = scheduler.run(&calls).await;
    assert!(
        records[0].result.is_ok() && records[5].result.is_ok(),
        "{records:?}"
    );
    assert_eq!(code(&records[1]), Some(&ErrorCode::UnknownTool));
    assert_eq!(code(&records[2]), Some(&ErrorCode::InvalidJson));
    assert_eq!(code(&records[3]), Some(&ErrorCode::InvalidArgs));
    assert_eq!(code(&records[4]), Some(&ErrorCode::Trap));
    let events = drain(&mut rx);
    for r in &records {
        let phases: Vec<&CallPhase> = events
            .iter()
            .filter(|e| e.id == r.id)
            .map(|e| &e.phase)
            .collect();
        assert_eq!(phases[0], &CallPhase::Queued, "{}: {phases:?}", r.id);
        assert_eq!(
            phases.len(),
            if r.args.is_some() { 3 } else { 2 },
            "{}: {phases:?}",
            r.id
        );
    }
}

#[tokio::test]
async fn cancelling_mid_batch_cancels_running_calls_and_skips_queued_ones() {
    let bench = Bench::new().await;
    let cancel = CancellationToken::new();
    let (scheduler, mut rx) = bench.scheduler(2, cancel.clone());
    let calls = [
        call("run1", "sleep", "{}"),
        call("run2", "sleep", "{}"),
        call("queued", "sleep", "{}"),
        call("barrier", "nap_alone", r#"{"ms": 1}"#),
        nap("last", 1),
    ];
    let canceller = async {
        let mut started = 0;
        while let Some(event) = rx.recv().await {
            if event.phase == CallPhase::Started {
                started += 1;
                if started == 2 {
                    cancel.cancel();
                    break;
                }
            }
        }
    };
    let (records, ()) = tokio::join!(scheduler.run(&calls), canceller);
    let ids: Vec<&str> = records.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["run1", "run2", "queued", "barrier", "last"]);
    for running in &records[..2] {
        let error = running.result.as_ref().unwrap_err();
        assert_eq!(error.code, ErrorCode::Cancelled, "{}", running.id);
        assert_eq!(
            error.message,
            "interrupted while running: it may have partly happened"
        );
    }
    for queued in &records[2..] {
        let error = queued.result.as_ref().unwrap_err();
        assert_eq!(error.code, ErrorCode::NotExecuted, "{}", queued.id);
        assert_eq!(error.message, "not executed: the user interrupted");
    }
    let events = drain(&mut rx);
    assert!(
        events
            .iter()
            .any(|e| e.id == "queued" && e.phase == CallPhase::Cancelled { started: false })
    );
    assert!(
        !events
            .iter()
            .any(|e| e.id == "queued" && e.phase == CallPhase::Started)
    );
}
