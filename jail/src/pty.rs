//! A pseudo-terminal for a command run on a terminal: paddock keeps the primary end (what the
//! command prints, what is typed into it) and gives the secondary end to `Program::terminal`,
//! where it becomes the program's standard streams and controlling terminal. The program never
//! sees a terminal of the user's: paddock opened this one for it alone.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use tokio::io::unix::AsyncFd;

/// Rows and columns the terminal reports (`stty size`); wide enough for most tools' tables.
const ROWS: u16 = 40;
const COLUMNS: u16 = 120;

pub struct Pty {
    pub primary: AsyncFd<OwnedFd>,
    pub secondary: OwnedFd,
}

impl Pty {
    pub fn open() -> Result<Pty, String> {
        let (mut primary, mut secondary) = (-1, -1);
        let size = libc::winsize {
            ws_row: ROWS,
            ws_col: COLUMNS,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: openpty writes two descriptors into the out pointers; the name and termios
        // pointers may be null; `size` lives across the call.
        let ret = unsafe {
            libc::openpty(
                &mut primary,
                &mut secondary,
                std::ptr::null_mut(),
                std::ptr::null(),
                &size,
            )
        };
        if ret == -1 {
            return Err(format!(
                "cannot open a pseudo-terminal: {}",
                std::io::Error::last_os_error()
            ));
        }
        // SAFETY: both descriptors are fresh and ours alone.
        let (primary, secondary) = unsafe {
            (
                OwnedFd::from_raw_fd(primary),
                OwnedFd::from_raw_fd(secondary),
            )
        };
        for fd in [&primary, &secondary] {
            // SAFETY: fcntl on our own descriptors: no other program paddock starts may
            // inherit either end.
            unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) };
        }
        // SAFETY: as above; the primary end is read and written without blocking a thread.
        unsafe {
            let flags = libc::fcntl(primary.as_raw_fd(), libc::F_GETFL);
            libc::fcntl(primary.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
        // SAFETY: the primary end is ours alone; nothing else registers or closes it.
        let primary =
            unsafe { AsyncFd::register(primary) }.map_err(|e| format!("pseudo-terminal: {e}"))?;
        Ok(Pty { primary, secondary })
    }
}

/// Reads what the terminal shows; `Ok(0)` once the command and all that shared its terminal
/// are gone.
pub async fn read(primary: &AsyncFd<OwnedFd>, buf: &mut [u8]) -> std::io::Result<usize> {
    loop {
        let mut guard = primary.readable().await?;
        // SAFETY: reading into our own buffer from our own descriptor.
        let n = unsafe { libc::read(primary.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let error = std::io::Error::last_os_error();
        match error.raw_os_error() {
            Some(libc::EAGAIN) => guard.clear_ready(),
            Some(libc::EINTR) => {}
            // The secondary end is closed everywhere: the terminal is done.
            Some(libc::EIO) => return Ok(0),
            _ => return Err(error),
        }
    }
}

/// Types `bytes` into the terminal.
pub async fn write(primary: &AsyncFd<OwnedFd>, mut bytes: &[u8]) -> std::io::Result<()> {
    while !bytes.is_empty() {
        let mut guard = primary.writable().await?;
        // SAFETY: writing from our own buffer to our own descriptor.
        let n = unsafe { libc::write(primary.as_raw_fd(), bytes.as_ptr().cast(), bytes.len()) };
        if n >= 0 {
            bytes = &bytes[n as usize..];
            continue;
        }
        let error = std::io::Error::last_os_error();
        match error.raw_os_error() {
            Some(libc::EAGAIN) => guard.clear_ready(),
            Some(libc::EINTR) => {}
            _ => return Err(error),
        }
    }
    Ok(())
}
