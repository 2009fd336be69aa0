//! One page of results, held to the host's output budget (docs/output-paging.md): whole lines
//! only, at most `max` of them, and the page with its closing marker never longer than the
//! budget, so the host passes it unchanged and the continuation names exactly the first line
//! not shown. Each entry remembers where a continuation would resume to show it.

use paddock_sdk::Output;

pub struct Page<C> {
    out: String,
    budget: usize,
    max: usize,
    /// For each entry: where the page stood before it, and where to resume to show it.
    entries: Vec<(usize, C)>,
}

impl<C> Page<C> {
    pub fn new(budget: usize, max: usize) -> Page<C> {
        Page {
            out: String::new(),
            budget,
            max,
            entries: Vec::new(),
        }
    }

    /// Adds one line (ending in `\n`) unless the page is full; `at` resumes at this line.
    /// The first line is always taken, so a page never comes back empty.
    pub fn push(&mut self, line: &str, at: C) -> bool {
        let full = self.entries.len() == self.max
            || (!self.entries.is_empty() && self.out.len() + line.len() > self.budget);
        if full {
            return false;
        }
        self.entries.push((self.out.len(), at));
        self.out.push_str(line);
        true
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// The whole result.
    pub fn finish(self) -> Output {
        Output::text(self.out.trim_end_matches('\n').to_string())
    }

    /// A cut result: the page, then the marker `close` renders for the resume point, as the
    /// continuation it returns. Lines are given back (and resumed at) until the marker fits.
    pub fn finish_partial(
        mut self,
        mut next: C,
        close: impl Fn(&C, usize) -> (String, String),
    ) -> Output {
        loop {
            let (marker, continuation) = close(&next, self.entries.len());
            if self.out.len() + marker.len() <= self.budget || self.entries.len() <= 1 {
                self.out.push_str(&marker);
                return Output::partial(self.out, continuation);
            }
            let Some((len, at)) = self.entries.pop() else {
                unreachable!("a page with more than one entry has a last one")
            };
            self.out.truncate(len);
            next = at;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_keeps_whole_lines_within_its_budget_and_resumes_at_the_first_not_shown() {
        let mut page = Page::new(40, 100);
        let mut stopped = None;
        for i in 0..20 {
            if !page.push(&format!("line {i}\n"), i) {
                stopped = Some(i);
                break;
            }
        }
        let out = page.finish_partial(stopped.unwrap(), |next, _| {
            (format!("[next {next}]"), next.to_string())
        });
        assert!(out.content.len() <= 40, "{}", out.content);
        let shown: Vec<&str> = out
            .content
            .lines()
            .filter(|l| l.starts_with("line"))
            .collect();
        let next: usize = out.continuation.unwrap().parse().unwrap();
        assert_eq!(shown.len(), next, "{}", out.content);
        assert!(out.content.ends_with(&format!("[next {next}]")));
    }

    #[test]
    fn max_entries_stop_the_page() {
        let mut page = Page::new(1 << 20, 2);
        assert!(page.push("a\n", 0) && page.push("b\n", 1));
        assert!(!page.push("c\n", 2));
        assert_eq!(page.finish().content, "a\nb");
    }
}
