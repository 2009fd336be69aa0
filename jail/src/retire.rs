//! What finished runs leave behind, dropped off the call's path (K1, K2): a program's mount
//! namespace reference, then the placeholders its run held. Tearing a mount namespace down,
//! or removing a directory that is still a mount point in one, waits for an RCU grace period;
//! one background thread drops them in the order they came, and the CLI waits for it before
//! exiting (`settle`), so nothing a run made is left behind.

/// What is left of finished runs (namespace references, placeholders), handed to one
/// background thread that drops it in the order it came, away from any call: dropping a
/// mount namespace, or removing a directory that is still a mount point in one, waits for
/// an RCU grace period. Without the thread it is dropped in place.
pub fn retire(item: Box<dyn Send>) {
    type Queue = std::sync::Mutex<std::sync::mpsc::Sender<Box<dyn Send>>>;
    static RETIRED: std::sync::OnceLock<Option<Queue>> = std::sync::OnceLock::new();
    let sender = RETIRED.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Box<dyn Send>>();
        std::thread::Builder::new()
            .name("paddock-retire".into())
            .spawn(move || rx.into_iter().for_each(drop))
            .ok()
            .map(|_| std::sync::Mutex::new(tx))
    });
    let queue = sender
        .as_ref()
        .map(|q| q.lock().unwrap_or_else(|e| e.into_inner()));
    if let Some(Err(std::sync::mpsc::SendError(item))) = queue.map(|tx| tx.send(item)) {
        drop(item);
    }
}

/// Waits (at most `limit`) until everything retired so far has been dropped: before paddock
/// exits, so no placeholder of a finished run is left behind.
pub fn settle(limit: std::time::Duration) {
    struct Done(std::sync::mpsc::SyncSender<()>);
    impl Drop for Done {
        fn drop(&mut self) {
            let _ = self.0.send(());
        }
    }
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    retire(Box::new(Done(tx)));
    let _ = rx.recv_timeout(limit);
}
