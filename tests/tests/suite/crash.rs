//! The crash harness's short run (L2, L6-L8, X4): 20 trials, each killing the real
//! `paddock` at a random point or at a log write, resuming, and checking from the outside
//! that nothing ran twice, no file was torn and every history is whole and in the calls'
//! order. `cargo xtask crash N` runs it long.

use paddock_tests::crash::Harness;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_crashes_lose_nothing_and_run_nothing_twice() {
    let harness = Harness::new(&crate::agent_common::paddock_bin())
        .await
        .expect("the uninterrupted run works");
    // A fixed seed: a failure here replays with `cargo xtask crash 20 2026`.
    let report = harness.run(20, 2026).await;
    println!("{report}");
    assert!(report.clean(), "{report}");
    assert_eq!(report.trials, 20);
}
