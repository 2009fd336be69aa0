//! The filesystem below the guest: mounts held by descriptor, every guest path resolved under its mount without following a link out, protected paths that cannot be created or changed (placeholders), and the temporary files a write leaves (S1, K3).

pub(super) mod ambient;
pub(super) mod git_config;
pub(super) mod guard;
pub(super) mod guard_host;
pub(super) mod guard_pin;
pub(super) mod mode;
pub(super) mod mount;
pub(super) mod placeholder;
pub(super) mod private_dir;
pub(super) mod protect;
pub(super) mod protect_walk;
pub(super) mod walk_index;
