//! Whether a session may use the working directory's own configuration (T1): its presets
//! (`.paddock/presets`) and its instruction files (`AGENTS.md`, ...). A cloned repository could
//! otherwise grant itself tools or pick the model server. The front-end decides how to ask;
//! the library only asks it, once, and only when the session would use something.

use super::Env;
use crate::preset;
use crate::preset::{TrustState, TrustStore};

/// Who decides whether the working directory's project configuration may be used.
pub trait Trust: Send + Sync {
    /// Whether it may (asked at most once per session, only when the preset is looked up by
    /// name or the project has instruction files).
    fn project_trusted(&self, env: &Env) -> bool;
    /// A one-line notice about project configuration, e.g. an instruction file left out.
    fn notice(&self, text: &str);
}

/// Trusted when the user has trusted the directory (`paddock trust`) and it has not changed
/// since; never asks, says nothing.
pub struct RecordedTrust;

impl Trust for RecordedTrust {
    fn project_trusted(&self, env: &Env) -> bool {
        matches!(
            TrustStore::open(env.store.root()).state(&env.cwd),
            TrustState::Trusted(_)
        )
    }

    fn notice(&self, _text: &str) {}
}

/// Which parts of the working directory's project configuration a session may use.
pub(crate) struct ProjectUse {
    pub presets: bool,
    pub instructions: bool,
}

impl ProjectUse {
    /// Asks `trust` (at most once) when the preset is looked up by name, or when the project
    /// has instruction files. A preset given as a path never needs the project's presets.
    pub(crate) fn decide(env: &Env, preset: &str, trust: &dyn Trust) -> ProjectUse {
        let has_instructions = !preset::instruction_paths(&env.cwd).is_empty();
        ProjectUse::decide_for(env, preset, has_instructions, trust)
    }

    /// For a session with no model (its calls come from a client): instruction files do not
    /// matter, so only a preset looked up by name asks.
    pub(crate) fn decide_for_client(env: &Env, preset: &str, trust: &dyn Trust) -> ProjectUse {
        ProjectUse::decide_for(env, preset, false, trust)
    }

    fn decide_for(
        env: &Env,
        preset: &str,
        has_instructions: bool,
        trust: &dyn Trust,
    ) -> ProjectUse {
        let by_name = !crate::preset::is_path(preset, ".toml");
        if !by_name && !has_instructions {
            return ProjectUse {
                presets: false,
                instructions: false,
            };
        }
        let trusted = trust.project_trusted(env);
        ProjectUse {
            presets: trusted && by_name,
            instructions: trusted,
        }
    }
}
