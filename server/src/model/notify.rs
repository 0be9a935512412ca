//! Keyspace notifications, the model's half: which classes of events are on
//! (`notify-keyspace-events`) and the queue of events noted but not yet published.
//!
//! Events are named where they happen, as in Redis: a command handler names its own (`set`,
//! `lpush`, `del` when a collection empties) through the kernel's `Ctx::notify`, while the
//! keyspace notes the ones no handler sees — `expired` when lazy or active expiry deletes a key,
//! `keymiss` when a read finds nothing, `new` when a key is created, `evicted` for eviction. The
//! keyspace cannot publish (publishing needs the clients and the running command's reply, which
//! live in higher layers), so it queues; the kernel drains the queue in order, before the next
//! event a handler names and after the handler returns, and the tick drains what active expiry
//! noted. That keeps Redis's order: `expired` before the command's own events, `new` before
//! `set`.
//!
//! With notifications off, noting an event costs one test of a bit mask: `enabled` is zero, so
//! the hot path (GET, SET) pays one predictable branch and nothing is queued.

use embedis_datatypes::SmallBytes;

use crate::base::config::event_class;

/// One noted event: `event` happened to `key` of database `db`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub db: usize,
    pub key: SmallBytes,
    pub event: &'static str,
}

/// The enabled classes and the events waiting to be published.
#[derive(Debug, Default)]
pub struct Notifications {
    /// The event classes that are on, or 0 when neither channel kind (`K`, `E`) is: an event
    /// nobody could receive is not even queued.
    enabled: u32,
    /// Which channels events go to: [`event_class::KEYSPACE`] and/or [`event_class::KEYEVENT`].
    channels: u32,
    queue: Vec<Event>,
}

impl Notifications {
    /// Takes the classes of `notify-keyspace-events` (start-up and CONFIG SET).
    pub fn configure(&mut self, flags: u32) {
        self.channels = flags & (event_class::KEYSPACE | event_class::KEYEVENT);
        self.enabled = if self.channels == 0 {
            0
        } else {
            flags & !self.channels
        };
    }

    /// True if events of `class` are published.
    #[inline]
    pub fn wants(&self, class: u32) -> bool {
        self.enabled & class != 0
    }

    /// Notes `event` of `class` on `key` of `db`, if that class is on.
    #[inline]
    pub fn note(&mut self, class: u32, event: &'static str, db: usize, key: &[u8]) {
        if self.wants(class) {
            self.push(event, db, key);
        }
    }

    #[cold]
    #[inline(never)]
    fn push(&mut self, event: &'static str, db: usize, key: &[u8]) {
        self.queue.push(Event {
            db,
            key: SmallBytes::new(key),
            event,
        });
    }

    /// True if events wait to be published.
    #[inline]
    pub fn has_pending(&self) -> bool {
        !self.queue.is_empty()
    }

    /// The waiting events, oldest first; the queue is left empty.
    pub fn take(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.queue)
    }

    /// True if events go to `__keyspace@<db>__:<key>` channels.
    pub fn to_keyspace_channels(&self) -> bool {
        self.channels & event_class::KEYSPACE != 0
    }

    /// True if events go to `__keyevent@<db>__:<event>` channels.
    pub fn to_keyevent_channels(&self) -> bool {
        self.channels & event_class::KEYEVENT != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use event_class::*;

    #[test]
    fn queues_only_enabled_classes_with_a_channel() {
        let mut n = Notifications::default();
        n.note(GENERIC, "del", 0, b"k");
        assert!(!n.has_pending(), "off by default");
        n.configure(GENERIC | STRING);
        n.note(GENERIC, "del", 0, b"k");
        assert!(!n.has_pending(), "no K or E: nobody could receive it");
        n.configure(GENERIC | KEYEVENT);
        n.note(STRING, "set", 0, b"k");
        n.note(GENERIC, "del", 3, b"k");
        n.note(GENERIC, "expire", 3, b"j");
        let events = n.take();
        assert_eq!(
            events.iter().map(|e| (e.db, e.event)).collect::<Vec<_>>(),
            vec![(3, "del"), (3, "expire")]
        );
        assert!(!n.has_pending());
        assert!(n.to_keyevent_channels() && !n.to_keyspace_channels());
    }
}
