//! Linked code that may not exist yet (S8): a built-in whose tools are described at build time
//! is registered at once, and compiled (or read from the authenticated cache) in the
//! background while the first model request goes out. A call that needs the code waits for
//! it here; a compile that failed, or code that does not match its description, fails every
//! call with the load error and runs nothing.
//!
//! The compile starts when the session asks (`start`, so `tool list` or `preset check` never
//! pay for it) or, at the latest, with the first call that needs it. It runs once: whoever
//! comes first drives it and the others wait for the same result.

use std::sync::Arc;

use futures::future::BoxFuture;
use tokio::sync::OnceCell;

use crate::wasm::error::LoadError;

type Init<T> = Arc<dyn Fn() -> BoxFuture<'static, Result<T, LoadError>> + Send + Sync>;

/// `T` now, or the work that makes it.
pub(crate) struct Deferred<T> {
    cell: Arc<OnceCell<Result<T, Arc<LoadError>>>>,
    init: Option<Init<T>>,
}

impl<T> Clone for Deferred<T> {
    fn clone(&self) -> Self {
        Deferred {
            cell: self.cell.clone(),
            init: self.init.clone(),
        }
    }
}

impl<T: Clone + Send + Sync + 'static> Deferred<T> {
    /// Already made.
    pub(crate) fn ready(value: T) -> Deferred<T> {
        Deferred {
            cell: Arc::new(OnceCell::new_with(Some(Ok(value)))),
            init: None,
        }
    }

    /// Made by `init` when first needed or started.
    pub(crate) fn later(
        init: impl Fn() -> BoxFuture<'static, Result<T, LoadError>> + Send + Sync + 'static,
    ) -> Deferred<T> {
        Deferred {
            cell: Arc::new(OnceCell::new()),
            init: Some(Arc::new(init)),
        }
    }

    /// Starts making it in the background, unless it is made or being made.
    pub(crate) fn start(&self) {
        if self.cell.initialized() {
            return;
        }
        let this = self.clone();
        tokio::spawn(async move {
            let _ = this.get().await;
        });
    }

    /// The value, waiting for the work (started here if nobody started it).
    pub(crate) async fn get(&self) -> Result<T, Arc<LoadError>> {
        self.cell
            .get_or_init(|| async {
                match &self.init {
                    Some(init) => init().await.map_err(Arc::new),
                    // `ready` fills the cell, so a missing init never reaches here.
                    None => Err(Arc::new(LoadError::Engine(
                        "deferred code without a way to make it".into(),
                    ))),
                }
            })
            .await
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn the_work_runs_once_for_every_waiter_and_its_error_stays() {
        let runs = Arc::new(AtomicUsize::new(0));
        let counted = runs.clone();
        let deferred: Deferred<u32> = Deferred::later(move || {
            let counted = counted.clone();
            Box::pin(async move {
                counted.fetch_add(1, Ordering::SeqCst);
                tokio::task::yield_now().await;
                Err(LoadError::Engine("broken".into()))
            })
        });
        deferred.start();
        let (a, b) = tokio::join!(deferred.get(), deferred.get());
        assert_eq!(a.unwrap_err().to_string(), "broken");
        assert_eq!(b.unwrap_err().to_string(), "broken");
        assert!(deferred.get().await.is_err());
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert_eq!(Deferred::ready(7).get().await.unwrap(), 7);
    }
}
