//! `cargo xtask bench scale` (issue 13): sessions whose cost stays flat (`sessions.rs`).
//! Ends with one line: `BENCH rt_10k_over_first=… resume_1m_ms=… resume_1m_rss_over_log=…`
//! (bars: ≤ 2, ≤ 1000, ≤ 1.5).

mod sessions;

fn main() {
    let pairs = sessions::measure();
    let line: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
    println!("BENCH {}", line.join(" "));
}
