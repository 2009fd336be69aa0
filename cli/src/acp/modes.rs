//! The editor's modes: the presets a session may start or go on under (`paddock preset list`
//! in the session's directory, with the trust rules of any start, plus the session's own and
//! the command line's). A mode the editor picks must be one of these.

use std::path::Path;

use agent_client_protocol::v1::schema::{SessionMode, SessionModeState};
use agent_client_protocol::{Error, ErrorCode};
use paddock::session::{Env, RecordedTrust, Trust};
use paddock_types::text::sanitize;

/// Whether the project's presets count in finding `preset`, as a session of `paddock acp`
/// decides it when it starts: only for a preset looked up by name (a path's `extends` never
/// reaches them), and by the trust the user recorded (`paddock trust`), never asked
/// (standard input is the protocol's) and never told.
pub(super) fn project_presets_for(env: &Env, preset: &str) -> bool {
    !paddock::preset::is_path(preset, ".toml") && RecordedTrust.project_trusted(env)
}

/// That `preset` (a name or a path) is there to start a session with.
pub(super) fn check_preset(env: &Env, preset: &str) -> Result<(), Error> {
    let project = project_presets_for(env, preset);
    paddock::preset::find_written(preset, &env.cwd, project)
        .map(drop)
        .map_err(|e| refused(format!("preset `{}` cannot be used: {e}", sanitize(preset))))
}

/// The modes: every preset `paddock preset list` shows here, `current`, and `default`, the
/// command line's (a preset given by its path, or the one a reopened session pinned, is a
/// mode of its own). A mode change takes only one of these. A trusted project's presets are
/// offered whatever `current` is, a path included (each is then found by name).
pub(super) fn offered(env: &Env, current: &str, default: &str) -> Result<SessionModeState, Error> {
    let project = RecordedTrust.project_trusted(env);
    let mut seen = std::collections::HashSet::new();
    let mut modes: Vec<SessionMode> = paddock::preset::list(&env.cwd, project)
        .into_iter()
        // The first of a name is the one that is used (a user's copy before the shipped one).
        .filter(|p| seen.insert(p.name.clone()))
        .map(|p| {
            let mode = SessionMode::new(p.name.clone(), p.name);
            match p.description {
                Some(d) => mode.description(d),
                None => mode,
            }
        })
        .collect();
    for own in [current, default] {
        if !modes.iter().any(|m| *m.id.0 == *own) {
            let name = Path::new(own)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| own.to_string());
            modes.push(SessionMode::new(own.to_string(), name).description(own.to_string()));
        }
    }
    Ok(SessionModeState::new(current.to_string(), modes))
}

/// The editor asked for what cannot be used.
fn refused(message: String) -> Error {
    Error::new(ErrorCode::INVALID_PARAMS, message)
}
