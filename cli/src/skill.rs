//! `paddock skill list | show NAME | check [NAME|DIR]`: the Agent Skills a session would list,
//! one skill's front matter, declared needs, files and instructions, and the strict check of
//! a `SKILL.md` with its declared needs proved within a preset's grants (the proof a subagent
//! passes, `paddock::grants::within`).

use clap::Subcommand;

use super::report::{CommandResult, Failure};
use super::style::{self, BOLD, DIM, GREEN, paint, sanitize};
use super::{Env, Exit};
use paddock::grants::effective;
use paddock::preset::{self, ResolveContext};
use paddock::skills::{self, Found, Skill, SkillOrigin};

#[derive(Subcommand)]
pub enum SkillCommand {
    /// List the skills a session with this preset lists in its system prompt (names and
    /// descriptions only), where each was found, and the tokens the listing costs.
    List {
        /// The preset whose `skills = [...]` folders join the user's and the project's.
        #[arg(long, default_value = "default")]
        preset: String,
    },
    /// Show one skill: where it is, its front matter, declared needs, files and instructions.
    Show {
        name: String,
        #[arg(long, default_value = "default")]
        preset: String,
    },
    /// Check skills strictly (every SKILL.md found, or one by name or folder), and prove each
    /// one's declared needs within a preset's grants: refused (exit 5) naming the wider
    /// dimension otherwise.
    Check {
        /// A skill's name, or the path to a skill's folder; default every skill found.
        skill: Option<String>,
        #[arg(long, default_value = "default")]
        preset: String,
    },
}

/// The skills a session in `env` with `preset` would find.
fn found(env: &Env, preset_name: &str) -> Result<(Found, Option<preset::ResolvedPreset>), Failure> {
    let resolved = resolve(env, preset_name)?;
    let trusted = super::trust::project_trusted(env);
    let roots = skills::roots(&env.cwd, trusted, &resolved.skills);
    Ok((skills::discover(&roots), Some(resolved)))
}

fn resolve(env: &Env, name: &str) -> Result<preset::ResolvedPreset, Failure> {
    let project = super::trust::project_trusted_for(env, name);
    let file = preset::find(name, &env.cwd, project)
        .and_then(|source| source.parse())
        .map_err(Failure::usage)?;
    let cx = ResolveContext {
        cwd: &env.cwd,
        data_dir: env.store.root(),
        spill: None,
        mount_override: None,
    };
    file.resolve(name, &cx).map_err(Failure::usage)
}

fn origin(skill: &Skill) -> &'static str {
    match skill.origin {
        SkillOrigin::User => "user",
        SkillOrigin::Project => "project",
        SkillOrigin::Preset => "preset",
    }
}

pub async fn run(cmd: SkillCommand) -> CommandResult {
    let env = Env::open().map_err(|e| Failure::usage(format!("{e:#}")))?;
    let color = style::color_enabled_stdout();
    match cmd {
        SkillCommand::List { preset } => {
            let (found, _) = found(&env, &preset)?;
            for skill in &found.skills {
                println!(
                    "{}  {}  {}",
                    paint(color, BOLD, &format!("{:<20}", sanitize(skill.name()))),
                    paint(
                        color,
                        DIM,
                        &format!(
                            "[{} {}]",
                            origin(skill),
                            sanitize(&skill.dir.display().to_string())
                        )
                    ),
                    sanitize(&skill.file.description)
                );
            }
            for (name, dir) in &found.shadowed {
                eprintln!(
                    "note: skill `{}` in {} is hidden by one of the same name listed above",
                    sanitize(name),
                    sanitize(&dir.display().to_string())
                );
            }
            for error in &found.errors {
                eprintln!("error: {}", sanitize(&error.0));
            }
            let listing = skills::listing(&found.skills);
            println!(
                "{} skill(s); the listing adds ~{} tokens to every request",
                found.skills.len(),
                skills::listing_tokens(&listing)
            );
            Ok(Exit::Ok)
        }
        SkillCommand::Show { name, preset } => {
            let (found, _) = found(&env, &preset)?;
            let skill = found
                .skills
                .iter()
                .find(|s| s.name() == name)
                .ok_or_else(|| {
                    Failure::usage(format!(
                        "no skill named {name:?}; `paddock skill list` shows the skills found"
                    ))
                })?;
            let front = serde_json::to_string_pretty(&skill.file).unwrap_or_default();
            println!(
                "{} ({} skill, {})",
                paint(color, BOLD, &sanitize(skill.name())),
                origin(skill),
                sanitize(&skill.dir.display().to_string())
            );
            println!("{}", sanitize(&front));
            let resources = skill.resources();
            if !resources.is_empty() {
                println!("files: {}", sanitize(&resources.join(", ")));
            }
            println!("\n{}", sanitize(&skill.file.body));
            Ok(Exit::Ok)
        }
        SkillCommand::Check { skill, preset } => check(&env, skill.as_deref(), &preset, color),
    }
}

/// What `preset check` adds: the skills a session with `resolved` would list, the listing's
/// cost, and each skill's declared needs against the preset's grants (a wider one is a
/// warning there: the skill's scripts would be refused, the session still starts).
pub(super) fn report(env: &Env, resolved: &preset::ResolvedPreset) {
    let trusted = super::trust::project_trusted(env);
    let found = skills::discover(&skills::roots(&env.cwd, trusted, &resolved.skills));
    let grants = effective(resolved, 0, env.store.root());
    for error in &found.errors {
        eprintln!("warning: skill left out: {}", sanitize(&error.0));
    }
    for skill in &found.skills {
        let verdict = match skills::needs_within(&grants, &skill.file.needs, &env.cwd) {
            Ok(()) if skill.file.needs.is_empty() => "no declared needs".to_string(),
            Ok(()) => format!(
                "needs {} within the preset",
                serde_json::to_string(&skill.file.needs).unwrap_or_default()
            ),
            Err(wider) => format!(
                "needs {}: {wider}; its scripts would be refused",
                serde_json::to_string(&skill.file.needs).unwrap_or_default()
            ),
        };
        println!(
            "skill {} [{}]: {}",
            sanitize(skill.name()),
            origin(skill),
            sanitize(&verdict)
        );
    }
    if !found.skills.is_empty() {
        let listing = skills::listing(&found.skills);
        println!(
            "{} skill(s) listed; ~{} tokens per request",
            found.skills.len(),
            skills::listing_tokens(&listing)
        );
    }
}

fn check(env: &Env, which: Option<&str>, preset_name: &str, color: bool) -> CommandResult {
    let resolved = resolve(env, preset_name)?;
    let grants = effective(&resolved, 0, env.store.root());
    let (mut found, _) = found(env, preset_name)?;
    if let Some(which) = which {
        let as_dir = std::path::Path::new(which);
        if which.contains('/') || as_dir.join("SKILL.md").is_file() {
            found = Found::default();
            match skills::load(as_dir, SkillOrigin::User) {
                Ok(skill) => found.skills.push(skill),
                Err(e) => found.errors.push(e),
            }
        } else {
            found.skills.retain(|s| s.name() == which);
            found.errors.clear();
            if found.skills.is_empty() {
                return Err(Failure::usage(format!(
                    "no skill named {which:?}; `paddock skill list` shows the skills found"
                )));
            }
        }
    }
    let mut exit = Exit::Ok;
    for error in &found.errors {
        eprintln!("error: {}", sanitize(&error.0));
        exit = Exit::Usage;
    }
    for skill in &found.skills {
        let needs = &skill.file.needs;
        let declared = if needs.is_empty() {
            "declares no needs".to_string()
        } else {
            format!(
                "declares needs {}",
                serde_json::to_string(needs).unwrap_or_default()
            )
        };
        match skills::needs_within(&grants, needs, &env.cwd) {
            Ok(()) => println!(
                "{} {}: {declared}, within preset `{}`",
                paint(color, GREEN, "ok"),
                sanitize(skill.name()),
                sanitize(&resolved.name)
            ),
            Err(wider) => {
                eprintln!(
                    "error: skill `{}` {declared}, which is {wider} (preset `{}`): its scripts \
                     would be refused; narrow the needs, or use a preset that grants them",
                    sanitize(skill.name()),
                    sanitize(&resolved.name)
                );
                if exit == Exit::Ok {
                    exit = Exit::Denied;
                }
            }
        }
    }
    Ok(exit)
}
