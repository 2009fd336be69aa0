//! A recorded session's preset: the text its `session/start` holds (not the file's now),
//! judged and loaded again in its recorded working directory (`resume`, the sweep of killed
//! client sessions).

use std::path::PathBuf;

use super::Env;
use super::error::SetupError;
use super::tools::{LoadFor, Loaded, load_preset};
use crate::ask::Approver;
use crate::log::SessionStart;
use crate::preset;

/// The recorded preset, judged as `preset check` judges a file (it is its own chain), loaded
/// in the recorded working directory.
pub(super) async fn load_recorded(
    mut env: Env,
    start: &SessionStart,
    approver: Box<dyn Approver>,
) -> Result<Loaded, SetupError> {
    let found = recorded_found(start);
    env.cwd = PathBuf::from(&start.cwd);
    load_preset(
        env,
        &found,
        &start.preset,
        &[],
        LoadFor::Session(&start.session),
        approver,
    )
    .await
}

/// The preset as the start recorded it (its text, not the file's now).
pub(super) fn recorded_found(start: &SessionStart) -> preset::Found {
    preset::Found::recorded(preset::PresetSource {
        origin: start.preset_from.unwrap_or(preset::Origin::File),
        location: start.preset_origin.clone(),
        text: start.preset_text.clone(),
    })
}
