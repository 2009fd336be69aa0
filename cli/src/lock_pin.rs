//! The lock entry of an installed plugin as it is now (`plugin_now`), and the lock following
//! an upgrade the user accepted (`follow_upgrade`): shared by `paddock lock accept` and
//! `paddock plugin upgrade`.

use super::Env;
use super::report::Failure;
use super::style::sanitize;
use paddock::plugin_store::lock::{LockPlace, PluginLock};
use paddock::preset;
use paddock_sandbox::Capability;

/// After `plugin upgrade` (or an install over a name) that the user accepted: the lock that
/// pins `name` (the one `paddock lock` reads here) pins the new version too, in the same step,
/// so the next session starts instead of refusing it (`LOCK_MISMATCH`). Says what it did.
pub(super) async fn follow_upgrade(env: &Env, name: &str) -> Result<(), Failure> {
    let place = LockPlace::find(&env.cwd, env.store.root()).map_err(Failure::usage)?;
    let pinned = place
        .ignored()
        .is_none()
        .then(|| place.read().ok())
        .flatten()
        .filter(|file| file.plugins.contains_key(name));
    if pinned.is_none() {
        println!(
            "no paddock.lock here pins {}; the next session that uses it records it",
            sanitize(name)
        );
        return Ok(());
    }
    let now = plugin_now(env, name).await?;
    place
        .update(|current| {
            let grants = current.plugins.get(name).map(|old| old.grants.clone());
            let mut entry = now.clone();
            if let Some(grants) = grants {
                entry.grants = grants;
            }
            current.plugins.insert(name.to_string(), entry);
        })
        .map_err(Failure::host)?;
    println!(
        "{} now pins {} at sha256 {} (the change you accepted); the next session starts with it",
        place.path().display(),
        sanitize(name),
        now.sha256
    );
    Ok(())
}

/// The installed plugin `name` now: its entry as the lock would record it.
pub(super) async fn plugin_now(env: &Env, name: &str) -> Result<PluginLock, Failure> {
    let record = env.store.get(name).map_err(Failure::plugin)?;
    let bytes = env
        .store
        .bytes(&preset::PluginSource::Installed(name.to_string()))
        .map_err(Failure::plugin)?;
    let tools = if record.kind == paddock_sandbox::World::Hook {
        Vec::new()
    } else {
        let plugin = env
            .sandbox
            .load(name, &bytes, &Capability::ALL)
            .await
            .map_err(Failure::plugin)?;
        plugin.tools.to_vec()
    };
    let sha256 = paddock_types::stamp::sha256_hex(&bytes);
    Ok(PluginLock::of(&record, &sha256, &tools))
}
