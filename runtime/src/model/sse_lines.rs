//! Which line of the response body each SSE event began on, so that an
//! error can say "line 3 is not JSON" about the body the user can look at, not about an event
//! count. It follows the SSE framing the decoder uses (lines end at `\r\n`, `\r` or `\n`; a
//! blank line dispatches an event only if a `data` field came since the last one), so the n-th
//! event the decoder emits is the n-th entry here.

use std::collections::VecDeque;

/// At most this many event lines wait to be taken; a decoder that falls behind this far is
/// not matched any more (the line is then unknown, never wrong).
const MAX_PENDING: usize = 4096;

#[derive(Default)]
pub(crate) struct LineTracker {
    /// Lines completed so far.
    lines: usize,
    /// The first bytes of the line being read (enough to see `data` and what follows it).
    head: Vec<u8>,
    /// The line being read is not empty.
    open: bool,
    /// The last byte was a `\r`: a `\n` right after it ends nothing.
    after_cr: bool,
    /// The 1-based line of the first `data` field of the event being read.
    first_data: Option<usize>,
    /// Lines of events completed and not yet taken, in order.
    pending: VecDeque<usize>,
    /// Events dropped from `pending` when it was full: their lines are unknown.
    overflowed: bool,
}

impl LineTracker {
    /// Follows `text`, the next piece of the body.
    pub fn push(&mut self, text: &str) {
        for &byte in text.as_bytes() {
            match byte {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\r' | b'\n' => {
                    self.after_cr = byte == b'\r';
                    self.end_line();
                }
                _ => {
                    self.after_cr = false;
                    self.open = true;
                    if self.head.len() < 5 {
                        self.head.push(byte);
                    }
                }
            }
        }
    }

    fn end_line(&mut self) {
        self.lines += 1;
        if !self.open {
            if let Some(line) = self.first_data.take() {
                if self.pending.len() < MAX_PENDING {
                    self.pending.push_back(line);
                } else {
                    self.overflowed = true;
                }
            }
        } else if self.head == b"data" || self.head.starts_with(b"data:") {
            self.first_data.get_or_insert(self.lines);
        }
        self.head.clear();
        self.open = false;
    }

    /// The line the next dispatched event began on.
    pub fn take(&mut self) -> Option<usize> {
        if self.overflowed {
            return None;
        }
        self.pending.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::LineTracker;

    fn lines(chunks: &[&str], events: usize) -> Vec<Option<usize>> {
        let mut tracker = LineTracker::default();
        chunks.iter().for_each(|c| tracker.push(c));
        (0..events).map(|_| tracker.take()).collect()
    }

    #[test]
    fn each_event_is_numbered_by_the_line_of_its_first_data_field() {
        let body = ": comment\n\nevent: a\ndata: 1\ndata: 2\n\ndata: 3\n\n";
        assert_eq!(lines(&[body], 3), [Some(4), Some(7), None]);
    }

    #[test]
    fn line_endings_and_splits_anywhere_count_the_same() {
        let body = "event: x\r\ndata: 1\r\n\r\ndata\r\rdata:2\n\n";
        let whole = lines(&[body], 2);
        assert_eq!(whole, [Some(2), Some(4)]);
        for cut in 0..body.len() {
            assert_eq!(
                lines(&[&body[..cut], &body[cut..]], 2),
                whole,
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn a_blank_line_without_data_dispatches_nothing() {
        assert_eq!(lines(&["event: a\n\n\n\ndata: x\n\n"], 1), [Some(5)]);
    }
}
