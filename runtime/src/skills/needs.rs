//! A skill's declared needs as grants, and the proof that they are within a session's: the
//! same `grants::within` a subagent passes. The skill's scripts get the session's grants in
//! every dimension it does not declare, and in those it declares exactly the declaration,
//! which must be within the session's: the intersection of the two is then the declaration
//! itself, never more than either. A declaration that is not within is refused whole, naming
//! the dimension, rather than silently cut to something the skill's author did not write.

use std::path::Path;

use super::Needs;
use crate::grants::{Effective, ExecRules, HostPath, Network, Wider, within};
use crate::preset::{home_path, real_path_of};

/// The grants a skill's scripts would run with in a session granted `session`, relative
/// paths taken from `cwd`.
pub fn needs_effective(session: &Effective, needs: &Needs, cwd: &Path) -> Effective {
    let mut e = session.clone();
    e.paths = needs
        .mounts
        .iter()
        .enumerate()
        .map(|(i, entry)| {
            let (path, write) = match entry.rsplit_once(':') {
                Some((p, "rw")) => (p, true),
                Some((p, "ro")) => (p, false),
                _ => (entry.as_str(), false),
            };
            HostPath {
                path: real_path_of(&cwd.join(home_path(path))),
                write,
                identity: None,
                key: format!("needs.mounts[{i}]"),
            }
        })
        .collect();
    e.exec = if needs.exec.is_empty() {
        Vec::new()
    } else {
        vec![ExecRules {
            allow: needs.exec.clone(),
            ask: session.exec.iter().flat_map(|x| x.ask.clone()).collect(),
            deny: session.exec.iter().flat_map(|x| x.deny.clone()).collect(),
            env: Vec::new(),
            confine: true,
            key: "needs.exec".into(),
        }]
    };
    e.network = Network {
        programs: !needs.network.is_empty(),
        hosts: needs.network.clone(),
    };
    e
}

/// Ok when every need the skill declares is within `session`'s grants.
pub fn needs_within(session: &Effective, needs: &Needs, cwd: &Path) -> Result<(), Wider> {
    within(session, &needs_effective(session, needs, cwd))
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::needs_within;
    use crate::grants::{Budgets, Depth, Dimension, Effective, ExecRules, HostPath, Network};
    use crate::preset::ApprovalPolicy;
    use crate::skills::Needs;

    fn session() -> Effective {
        Effective {
            paths: vec![HostPath {
                path: PathBuf::from("/nonexistent-root/work"),
                write: false,
                identity: None,
                key: "plugins.shell.mounts[0]".into(),
            }],
            protect: Vec::new(),
            writable_protected: Vec::new(),
            exec: vec![ExecRules {
                allow: vec!["python3 *".into(), "ls".into()],
                ask: Vec::new(),
                deny: vec!["rm *".into()],
                env: vec!["PATH".into()],
                confine: true,
                key: "plugins.shell.grants.exec".into(),
            }],
            network: Network::default(),
            hooks: Vec::new(),
            approval: ApprovalPolicy::default(),
            budgets: Budgets {
                turns: 1,
                tokens: 1,
                wall_secs: 1,
                cost_usd: 1.0,
                subagents: 1,
            },
            depth: Depth { at: 0, max: 1 },
            tools: Vec::new(),
            plugins: Vec::new(),
            host_tools: None,
        }
    }

    fn needs(mounts: &[&str], exec: &[&str], network: &[&str]) -> Needs {
        let own = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
        Needs {
            mounts: own(mounts),
            exec: own(exec),
            network: own(network),
        }
    }

    fn check(n: Needs) -> Result<(), Dimension> {
        needs_within(&session(), &n, Path::new("/nonexistent-root/work")).map_err(|w| w.dimension)
    }

    #[test]
    fn needs_within_the_session_pass() {
        assert_eq!(
            check(needs(&["data"], &["python3 scripts/fill.py *"], &[])),
            Ok(())
        );
        assert_eq!(check(Needs::default()), Ok(()));
    }

    #[test]
    fn each_wider_need_is_refused_by_its_dimension() {
        assert_eq!(check(needs(&["/etc"], &[], &[])), Err(Dimension::Mounts));
        assert_eq!(check(needs(&["data:rw"], &[], &[])), Err(Dimension::Mounts));
        assert_eq!(check(needs(&[], &["curl *"], &[])), Err(Dimension::Exec));
        assert_eq!(
            check(needs(&[], &[], &["pypi.org"])),
            Err(Dimension::Network)
        );
    }
}
