//! The one verdict on a preset (P1), for `preset check` and for every start alike
//! (`judge.rs`: parse strictly, the findings on the text as written, resolve, load every
//! plugin, then the deep checks of `findings.rs` and each hook's `config` against what the
//! hook declares), each finding located at the `file:line:column` of the file that writes the
//! key (`preset::locate`: for a preset that `extends` another, the preset's own file or its base's)
//! with a fix. The verdict prints nothing: front-ends show the findings.

mod empty;
mod findings;
mod hook_config;
mod inherit;
mod judge;
mod reach;

use crate::preset::locate;

pub use inherit::hooks as hook_origins;
pub use judge::{Judged, Shown, Start, judge};
pub use locate::{KeyPath, locate};
