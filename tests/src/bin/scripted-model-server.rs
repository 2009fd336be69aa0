//! Runs the scripted model server on 127.0.0.1 with an ephemeral port, for manual runs and for
//! tests that drive the `paddock` binary: `scripted-model-server SCRIPT.json`. Prints
//! `listening on http://127.0.0.1:PORT` and serves until killed. Requests are printed as JSON
//! lines on stderr.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use paddock_tests::scripted::{Script, ScriptedServer};
use std::io::Write;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: scripted-model-server SCRIPT.json")?;
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    let script: Script = serde_json::from_str(&text).map_err(|e| format!("{path}: {e}"))?;
    let server = ScriptedServer::start(script).await?;
    println!("listening on http://{}", server.addr());
    std::io::stdout().flush()?;
    let mut seen = 0;
    loop {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        for request in server.requests().into_iter().skip(seen) {
            seen += 1;
            eprintln!(
                "{}",
                serde_json::json!({"path": request.path, "body": request.body})
            );
        }
    }
}
