//! A cap on one message from an MCP server (S5): the protocol is one JSON message per line,
//! and a server that writes an endless line would otherwise grow paddock's memory without
//! bound. Past `cap` bytes without a newline the stream fails, which closes the connection;
//! the call errors and the server is restarted.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

pub struct LineCap<R> {
    inner: R,
    since_newline: usize,
    cap: usize,
}

impl<R> LineCap<R> {
    pub fn new(inner: R, cap: usize) -> LineCap<R> {
        LineCap {
            inner,
            since_newline: 0,
            cap,
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for LineCap<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            let fresh = &buf.filled()[before..];
            self.since_newline = match fresh.iter().rposition(|&b| b == b'\n') {
                Some(at) => fresh.len() - at - 1,
                None => self.since_newline + fresh.len(),
            };
            if self.since_newline > self.cap {
                buf.set_filled(before);
                return Poll::Ready(Err(io::Error::other(format!(
                    "the server sent a message over {} bytes",
                    self.cap
                ))));
            }
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::LineCap;

    #[tokio::test]
    async fn lines_within_the_cap_pass_and_an_endless_one_fails() {
        let ok = b"{\"a\":1}\n{\"b\":2}\n".to_vec();
        let mut read = LineCap::new(&ok[..], 8);
        let mut out = Vec::new();
        read.read_to_end(&mut out).await.expect("within the cap");
        assert_eq!(out, ok);
        let flood = [b'x'; 100];
        let mut read = LineCap::new(&flood[..], 64);
        let err = read
            .read_to_end(&mut Vec::new())
            .await
            .expect_err("too long");
        assert!(err.to_string().contains("over 64 bytes"), "{err}");
    }
}
