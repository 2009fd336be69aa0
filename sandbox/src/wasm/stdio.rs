//! Captured stdout/stderr with a byte cap (S5). Past the cap, bytes are counted and dropped
//! while the stream still reports itself open: a plugin that prints too much keeps running, so
//! a chatty tool is cut, not crashed. (wasmtime's `MemoryOutputPipe` closes the stream when
//! full, and Rust's `println!` then panics.)

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamError};

/// How much a single write may hand over; the guest loops on larger buffers.
const PERMIT: usize = 64 * 1024;

#[derive(Default)]
struct Buffer {
    kept: BytesMut,
    dropped: u64,
}

/// A cloneable handle: the store owns one clone, the caller reads the other after the call.
#[derive(Clone)]
pub struct CappedPipe {
    cap: usize,
    buffer: Arc<Mutex<Buffer>>,
}

/// What a call wrote to one stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured {
    pub bytes: Bytes,
    /// Bytes written past the cap and dropped.
    pub dropped: u64,
}

impl CappedPipe {
    pub fn new(cap: usize) -> CappedPipe {
        CappedPipe {
            cap,
            buffer: Arc::new(Mutex::new(Buffer::default())),
        }
    }

    fn accept(&self, data: &[u8]) {
        let mut buf = self
            .buffer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let room = self.cap.saturating_sub(buf.kept.len());
        let keep = room.min(data.len());
        buf.kept.extend_from_slice(&data[..keep]);
        buf.dropped += (data.len() - keep) as u64;
    }

    pub fn captured(&self) -> Captured {
        let buf = self
            .buffer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        Captured {
            bytes: buf.kept.clone().freeze(),
            dropped: buf.dropped,
        }
    }
}

impl IsTerminal for CappedPipe {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CappedPipe {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl OutputStream for CappedPipe {
    fn write(&mut self, bytes: Bytes) -> Result<(), StreamError> {
        self.accept(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), StreamError> {
        Ok(())
    }

    fn check_write(&mut self) -> Result<usize, StreamError> {
        Ok(PERMIT)
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for CappedPipe {
    async fn ready(&mut self) {}
}

impl AsyncWrite for CappedPipe {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.accept(data);
        Poll::Ready(Ok(data.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_past_the_cap_are_counted_and_dropped_without_closing() {
        let mut pipe = CappedPipe::new(10);
        pipe.write(Bytes::from_static(b"0123456")).unwrap();
        pipe.write(Bytes::from_static(b"789abcdef")).unwrap();
        assert_eq!(
            pipe.check_write().unwrap(),
            PERMIT,
            "a full pipe stays open"
        );
        let captured = pipe.captured();
        assert_eq!(&captured.bytes[..], b"0123456789");
        assert_eq!(captured.dropped, 6);
    }
}
