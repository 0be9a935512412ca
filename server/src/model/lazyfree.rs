//! Lazy freeing: dropping big values and whole emptied databases on a background thread, as
//! Redis's lazy-free worker does, because freeing millions of entries takes long enough to stall
//! every client. Also the counters INFO reports (`lazyfree_pending_objects`, `lazyfreed_objects`).
//! The keyspace decides what to free lazily (`free_effort`, `dispose`); this module owns the
//! thread and its counters, which are process-wide like the thread.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::OnceLock;

use crate::base::value::Value;

/// Objects handed to the background thread and not freed yet (INFO's
/// `lazyfree_pending_objects`).
static LAZYFREE_PENDING: AtomicUsize = AtomicUsize::new(0);

/// Objects waiting to be freed by the background thread.
pub fn lazyfree_pending_objects() -> usize {
    LAZYFREE_PENDING.load(Ordering::Relaxed)
}

/// Objects the background thread has freed since the last CONFIG RESETSTAT (INFO
/// `lazyfreed_objects`).
static LAZYFREED: AtomicUsize = AtomicUsize::new(0);

pub fn lazyfreed_objects() -> usize {
    LAZYFREED.load(Ordering::Relaxed)
}

pub fn reset_lazyfreed_objects() {
    LAZYFREED.store(0, Ordering::Relaxed);
}

/// Something to drop off the executor thread, with the number of objects it holds.
type Garbage = (Box<dyn Send>, usize);

/// Drops `garbage`, which holds `objects` keys or elements, on a background thread: the
/// executor only pays for sending it. The thread is started on first use and lives as long as
/// the process, like Redis's lazy-free worker; if it cannot be started, the caller frees inline.
pub fn free_in_background<T: Send + 'static>(garbage: T, objects: usize) {
    static WORKER: OnceLock<Option<mpsc::Sender<Garbage>>> = OnceLock::new();
    let worker = WORKER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Garbage>();
        std::thread::Builder::new()
            .name("embedis-lazyfree".into())
            .spawn(move || {
                for (garbage, objects) in rx {
                    drop(garbage);
                    LAZYFREE_PENDING.fetch_sub(objects, Ordering::Relaxed);
                    LAZYFREED.fetch_add(objects, Ordering::Relaxed);
                }
            })
            .ok()
            .map(|_| tx)
    });
    LAZYFREE_PENDING.fetch_add(objects, Ordering::Relaxed);
    let unsent = match worker {
        Some(tx) => tx.send((Box::new(garbage), objects)).err().map(|e| e.0),
        None => Some((Box::new(garbage) as Box<dyn Send>, objects)),
    };
    if let Some((garbage, objects)) = unsent {
        drop(garbage);
        LAZYFREE_PENDING.fetch_sub(objects, Ordering::Relaxed);
    }
}

/// Counts `objects` as freed by lazy freeing, for what embedis frees inline where Redis hands it
/// to its lazy-free thread: a Lua VM, which cannot leave the executor's thread (mlua's `Lua` is
/// not `Send`). INFO's `lazyfreed_objects` then reads as Redis's does after the same commands.
pub fn count_as_lazyfreed(objects: usize) {
    LAZYFREED.fetch_add(objects, Ordering::Relaxed);
}

/// Waits until the background thread has freed everything handed to it so far (Redis 7.4's
/// blocking ASYNC flush answers its client only then): a marker sent behind the garbage tells
/// when it is dropped, the queue being first in, first out.
pub fn wait_for_background() {
    struct Done(mpsc::Sender<()>);
    impl Drop for Done {
        fn drop(&mut self) {
            let _ = self.0.send(());
        }
    }
    let (tx, rx) = mpsc::channel();
    free_in_background(Done(tx), 0);
    let _ = rx.recv();
}

/// Values whose freeing costs more than this many allocations go to the background thread when
/// freed lazily (Redis's `LAZYFREE_THRESHOLD`): below it, the hand-over costs more than it saves.
pub(crate) const LAZYFREE_THRESHOLD: usize = 64;

/// About how many allocations freeing `value` takes (Redis's `lazyfreeGetFreeEffort`: elements
/// of a big collection — a list counts its elements where Redis counts nodes; 1 for strings
/// and compact encodings).
pub(crate) fn free_effort(value: &Value) -> usize {
    match value {
        Value::List(list) => list.len(),
        Value::Hash(h) if h.encoding_name() == "hashtable" => h.len(),
        Value::Set(s) if s.encoding_name() == "hashtable" => s.len(),
        Value::ZSet(z) if z.encoding_name() == "skiplist" => z.len(),
        // Redis: its radix tree's nodes, plus per group one allocation and (estimated from the
        // first group's) its pending entries.
        Value::Stream(s) => {
            let first_pel = s.groups.values().next().map_or(0, |g| g.pel.len());
            s.radix_tree_nodes() + s.groups.len() * (1 + first_pel)
        }
        _ => 1,
    }
}

/// Frees detached tables: in the background when `lazy` and there is something to free.
pub(crate) fn dispose<T: Send + 'static>(tables: T, objects: usize, lazy: bool) {
    if lazy && objects > 0 {
        #[cfg(test)]
        HANDED_TO_BACKGROUND.with(|n| n.set(n.get() + objects));
        free_in_background(tables, objects);
    } else {
        drop(tables);
    }
}

#[cfg(test)]
thread_local! {
    /// Objects this thread's flushes and deletions handed to the background thread: per test
    /// thread, so that tests running side by side do not see each other's (the process-wide
    /// INFO counters are reset by any test's CONFIG RESETSTAT).
    static HANDED_TO_BACKGROUND: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// See [`HANDED_TO_BACKGROUND`].
#[cfg(test)]
pub fn handed_to_background() -> usize {
    HANDED_TO_BACKGROUND.with(|n| n.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn background_garbage_is_dropped_on_the_lazyfree_thread() {
        struct Recorder(mpsc::Sender<Option<String>>);
        impl Drop for Recorder {
            fn drop(&mut self) {
                let name = std::thread::current().name().map(str::to_owned);
                let _ = self.0.send(name);
            }
        }
        let (tx, rx) = mpsc::channel();
        dispose(Recorder(tx.clone()), 1, true);
        let lazy = rx.recv_timeout(std::time::Duration::from_secs(60)).unwrap();
        assert_eq!(lazy.as_deref(), Some("embedis-lazyfree"));
        dispose(Recorder(tx), 1, false);
        let inline = rx.recv_timeout(std::time::Duration::from_secs(60)).unwrap();
        assert_eq!(inline, std::thread::current().name().map(str::to_owned));
    }

    #[test]
    fn background_free_runs_on_another_thread() {
        struct Probe(std::sync::mpsc::Sender<Option<String>>);
        impl Drop for Probe {
            fn drop(&mut self) {
                let name = std::thread::current().name().map(str::to_string);
                let _ = self.0.send(name);
            }
        }
        let (tx, rx) = std::sync::mpsc::channel();
        free_in_background(Probe(tx), 1);
        let dropped_on = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("dropped");
        assert_eq!(dropped_on.as_deref(), Some("embedis-lazyfree"));
    }
}
