//! The crate's behaviour, grouped by what it must find.

use crate::*;

fn run(source: &str) -> Analysis {
    analyse(source, &Session::default())
}
