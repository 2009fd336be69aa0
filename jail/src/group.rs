//! A confined program's process group, signalled by its id from any thread (a shell's timer,
//! an interrupt) only while the program is unreaped: the id is the program's pid, which the
//! kernel gives no other process until then, and reaping retires the group first.

/// A confined program's process group, signalled only while the program is unreaped: its id
/// is the program's pid, which the kernel gives no other process until then.
pub struct Group {
    pid: libc::pid_t,
    unreaped: std::sync::Mutex<bool>,
}

impl Group {
    pub(super) fn new(pid: libc::pid_t) -> Group {
        Group {
            pid,
            unreaped: std::sync::Mutex::new(true),
        }
    }

    pub(super) fn pid(&self) -> libc::pid_t {
        self.pid
    }

    /// Called before the program is reaped: from now on `signal` does nothing.
    pub(super) fn retire(&self) {
        *self
            .unreaped
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = false;
    }

    /// Sends `signal` to every process of the group; nothing once the program is reaped.
    pub fn signal(&self, signal: libc::c_int) {
        let unreaped = self
            .unreaped
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if *unreaped {
            // SAFETY: killpg has no memory-safety preconditions; under the lock the group's
            // leader is unreaped, so the id is still its.
            unsafe {
                libc::killpg(self.pid, signal);
            }
        }
    }
}
