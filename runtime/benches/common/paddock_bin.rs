//! The `paddock` binary a benchmark runs. It is the command line crate's (`paddock-cli`), so
//! cargo does not name it to this crate's benchmarks: `cargo xtask bench NAME` builds it in
//! release and names it in `PADDOCK_BIN`.

use std::path::PathBuf;

pub fn paddock_bin() -> PathBuf {
    std::env::var_os("PADDOCK_BIN")
        .map(PathBuf::from)
        .filter(|path| path.is_file())
        .expect("PADDOCK_BIN names the release `paddock` binary: run `cargo xtask bench NAME`")
}
