//! What one shell command printed: every byte to its whole-output file, and in memory only
//! the head and the tail of what the model has not been shown yet, so a command that prints
//! 100 MB costs a few of the budget's bytes of memory, and the report says what was cut and
//! where the rest is.

use std::collections::VecDeque;
use std::io::Write;

/// Output since the last report, and where all of it is.
pub(super) struct Transcript {
    /// Bytes of the head and of the tail kept per report.
    cap: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    /// Bytes between the head and the tail not kept.
    skipped: u64,
    /// Every byte, since the command started.
    total: u64,
    whole: Option<WholeOutput>,
}

/// The file every byte goes to: open on the host, and its name as the model can read it.
pub(super) struct WholeOutput {
    pub file: std::fs::File,
    pub shown: String,
    /// How the model reads it back.
    pub read_with: &'static str,
    pub failed: bool,
}

/// What a report shows of the output.
pub(super) struct Taken {
    pub text: String,
    /// Said when something was cut.
    pub note: Option<String>,
}

impl Transcript {
    pub fn new(cap: usize, whole: Option<WholeOutput>) -> Transcript {
        Transcript {
            cap: cap.max(256),
            head: Vec::new(),
            tail: VecDeque::new(),
            skipped: 0,
            total: 0,
            whole,
        }
    }

    pub fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if let Some(whole) = &mut self.whole
            && !whole.failed
        {
            whole.failed = whole.file.write_all(bytes).is_err();
        }
        let room = self.cap.saturating_sub(self.head.len()).min(bytes.len());
        self.head.extend_from_slice(&bytes[..room]);
        let rest = &bytes[room..];
        if rest.len() >= self.cap {
            self.skipped += (self.tail.len() + rest.len() - self.cap) as u64;
            self.tail.clear();
            self.tail.extend(&rest[rest.len() - self.cap..]);
            return;
        }
        self.tail.extend(rest);
        let over = self.tail.len().saturating_sub(self.cap);
        if over > 0 {
            self.tail.drain(..over);
            self.skipped += over as u64;
        }
    }

    #[cfg(test)]
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The output since the last report, cut in the middle when it was longer than twice the
    /// cap; the next report starts after it.
    pub fn take(&mut self) -> Taken {
        let head = std::mem::take(&mut self.head);
        let tail: Vec<u8> = std::mem::take(&mut self.tail).into();
        let skipped = std::mem::take(&mut self.skipped);
        if skipped == 0 {
            let mut all = head;
            all.extend_from_slice(&tail);
            return Taken {
                text: String::from_utf8_lossy(&all).into_owned(),
                note: None,
            };
        }
        let whole = match &self.whole {
            Some(whole) if !whole.failed => format!(
                "all {} bytes the command printed are in {}: read the parts you need with {} \
                 rather than printing it again",
                self.total, whole.shown, whole.read_with
            ),
            _ => "narrow the command (filter it, or send its output to a file) to see the rest"
                .to_string(),
        };
        Taken {
            text: format!(
                "{}\n[... {skipped} bytes cut here ...]\n{}",
                String::from_utf8_lossy(&head),
                String::from_utf8_lossy(&tail)
            ),
            note: Some(format!(
                "the output was longer than the budget: {skipped} bytes in the middle were cut; {whole}"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_output_is_kept_whole() {
        let mut t = Transcript::new(256, None);
        t.push(b"hello ");
        t.push(b"world");
        let taken = t.take();
        assert_eq!(taken.text, "hello world");
        assert!(taken.note.is_none());
        assert_eq!(t.take().text, "", "a report starts after the last one");
    }

    #[test]
    fn long_output_keeps_head_and_tail_and_counts_the_cut() {
        let mut t = Transcript::new(256, None);
        for i in 0..10_000u32 {
            t.push(format!("line {i}\n").as_bytes());
        }
        let taken = t.take();
        assert!(taken.text.starts_with("line 0\nline 1\n"), "{}", taken.text);
        assert!(taken.text.ends_with("line 9999\n"), "{}", taken.text);
        let total = t.total() as usize;
        let cut: usize = taken
            .text
            .split("[... ")
            .nth(1)
            .and_then(|s| s.split(' ').next())
            .and_then(|n| n.parse().ok())
            .expect("the cut is counted");
        assert_eq!(cut + 256 + 256, total);
        assert!(taken.note.is_some());
    }

    #[test]
    fn the_whole_output_goes_to_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.log");
        let file = std::fs::File::create(&path).unwrap();
        let mut t = Transcript::new(
            256,
            Some(WholeOutput {
                file,
                shown: "/spill/out.log".into(),
                read_with: "read_file",
                failed: false,
            }),
        );
        let chunk = vec![b'x'; 100_000];
        t.push(&chunk);
        t.push(b"end");
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 100_003);
        let taken = t.take();
        assert!(taken.note.unwrap().contains("/spill/out.log"));
        assert!(taken.text.ends_with("xend"));
    }
}
