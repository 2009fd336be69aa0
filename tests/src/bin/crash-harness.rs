//! `crash-harness N [SEED]`: runs N crash trials (see `paddock_tests::crash`) against the
//! `paddock` binary built next to this one (`cargo xtask crash N` builds both), prints one
//! `CRASH trials=.. double_exec=.. ...` line, and fails unless every count but `trials` is 0.
//! `CRASH_VERBOSE=1` prints every trial.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;

use paddock_tests::crash::Harness;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let trials: usize = match args.next().map(|n| n.parse()) {
        Some(Ok(n)) => n,
        _ => {
            eprintln!("usage: crash-harness TRIALS [SEED]");
            return ExitCode::from(2);
        }
    };
    let seed = args.next().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    });
    let Some(paddock) = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("paddock")))
        .filter(|p| p.is_file())
    else {
        eprintln!(
            "crash-harness: no paddock binary beside this one; build it with cargo build -p paddock-cli"
        );
        return ExitCode::from(2);
    };
    let mut harness = match Harness::new(&paddock).await {
        Ok(harness) => harness,
        Err(e) => {
            eprintln!("crash-harness: {e}");
            return ExitCode::FAILURE;
        }
    };
    harness.verbose = std::env::var_os("CRASH_VERBOSE").is_some();
    eprintln!("crash-harness: {trials} trials, seed {seed}");
    let started = std::time::Instant::now();
    let report = harness.run(trials, seed).await;
    eprintln!(
        "crash-harness: {:.0?}; crash point not reached in {} trials; {} temporary file(s) left beside their targets by killed writes",
        started.elapsed(),
        report.not_crashed,
        report.leftover_temps
    );
    println!("{report}");
    if report.clean() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
