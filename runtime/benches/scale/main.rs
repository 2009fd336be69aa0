//! `cargo xtask bench scale`: paddock on big inputs. Builds its own data in temp
//! directories and ends with one line:
//! `BENCH grep_over_rg=… glob_over_rg=… read100m_over_cat=… first_run_ms=… rt_10k_over_first=…
//! resume_1m_ms=… resume_1m_rss_over_log=…`
//! (bars: grep ≤ 3, glob ≤ 2, read ≤ 10, first run ≤ 1000 ms; sessions ≤ 2, ≤ 1000, ≤ 1.5; the
//! ratios against ripgrep are skipped, and say so, when `rg` is not installed).
//! Search and paging are measured in `search.rs`, sessions in `sessions.rs`.
//! `SCALE_ONLY=search` or `SCALE_ONLY=sessions` runs only that half (while working on one; the
//! line then carries only its keys).

#![allow(clippy::print_stdout, clippy::print_stderr)]

#[path = "../common/mod.rs"]
mod common;
mod data;
mod search;
mod sessions;

fn main() {
    // As the binary does: a developer's RUST_BACKTRACE=1 must not slow the in-process tools.
    // SAFETY: first thing in `main`, before any other thread exists.
    unsafe { paddock::quiet_library_backtraces() };
    let only = std::env::var("SCALE_ONLY").unwrap_or_default();
    let mut keys = Vec::new();
    if only.is_empty() || only == "search" {
        keys.extend(search::measure());
    }
    if only.is_empty() || only == "sessions" {
        keys.extend(sessions::measure());
    }
    let line: Vec<String> = keys.iter().map(|(k, v)| format!("{k}={v}")).collect();
    println!("BENCH {}", line.join(" "));
}
