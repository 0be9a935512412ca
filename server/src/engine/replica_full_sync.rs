//! A replica's full sync as Redis 7.0 makes it (`readSyncBulkPayload` in replication.c): how
//! the RDB image is received, then its load in slices between the event loop's turns.
//!
//! `repl-diskless-load` chooses how the image is received ([`ImageMode`]): to disk while the
//! old data is still served (`disabled`, or `on-empty-db` with keys), diskless with the server
//! `loading` (`on-empty-db` when empty, `swapdb`), or diskless with `async_loading` — the old
//! data served until the new is in place — when under `swapdb` the primary's history is the
//! one this replica already had. A transfer that fails leaves the old data as it was.
//!
//! The load itself runs a slice at a time, each of `loading-process-events-interval-bytes` of
//! the image (Redis's `processEventsWhileBlocked` interval): meanwhile INFO and CONFIG answer,
//! other commands get `-LOADING`, and the cluster bus keeps pinging with offset 0, so that the
//! other nodes hide this replica from CLUSTER SLOTS and show it `loading` in CLUSTER SHARDS.
//! (Redis loads an async image into a second dataset and swaps; here the old data stays
//! served through the transfer and the new is loaded in one piece at its end.)

use std::cell::Cell;
use std::io::Cursor;
use std::rc::Rc;
use std::time::Instant;

use super::Engine;
use crate::model::client::{ClientId, Peer};
use crate::model::replication::Backlog;
use crate::services::rdb_saving::{Counting, Loading};

/// How a full sync's image is received and loaded (see the module's opening).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageMode {
    /// Into a file while the old data is served; `loading` while the file loads.
    Disk,
    /// From the socket, `loading` from the start of the transfer.
    Diskless,
    /// From the socket, `async_loading`: the old data is served until the new replaces it.
    Async,
}

/// A full sync's image being loaded.
pub struct ImageLoad {
    loading: Loading<Counting<Cursor<Vec<u8>>>>,
    read: Rc<Cell<u64>>,
    mode: ImageMode,
    started: Instant,
}

impl Engine {
    /// A full sync's transfer begins (`+FULLRESYNC replid`): how the image is taken in.
    pub fn link_image_mode(&mut self, replid: &str) -> ImageMode {
        let mode = match self.server.config.repl_diskless_load.as_str() {
            "swapdb" if self.server.repl.replid == replid => ImageMode::Async,
            "swapdb" => ImageMode::Diskless,
            "on-empty-db" if self.ks.total_keys() == 0 => ImageMode::Diskless,
            _ => ImageMode::Disk,
        };
        let now_s = self.server.clock.now_ms().div_euclid(1000);
        let p = &mut self.server.persistence;
        match mode {
            ImageMode::Disk => {}
            ImageMode::Diskless => p.loading = true,
            ImageMode::Async => p.async_loading = true,
        }
        if mode != ImageMode::Disk {
            p.loading_total_bytes = 0;
            p.loading_loaded_bytes = 0;
            p.loading_started_s = now_s;
            // Redis's diskless load reads the image from the socket as it loads: its load
            // begins with the transfer.
            self.server
                .log
                .notice("MASTER <-> REPLICA sync: Loading DB in memory");
        }
        mode
    }

    /// A diskless transfer broke off (the link closed or timed out): logged as Redis's
    /// loader, reading from the socket, reports a short read; the old data stays.
    pub fn link_image_short_read(&mut self, mode: ImageMode, error: &str) {
        if mode != ImageMode::Disk {
            let log = &self.server.log;
            log.warning("Internal error in RDB reading offset 0, function at embedis_rdb -> Unexpected EOF reading RDB file");
            log.warning(&format!(
                "Failed trying to load the MASTER synchronization DB from socket: {error}"
            ));
            if self.server.config.repl_diskless_load == "swapdb" {
                log.notice("MASTER <-> REPLICA sync: Discarding temporary DB in background");
            }
        }
        self.link_image_aborted();
    }

    /// The transfer failed: the server is no longer loading, and keeps the data it had.
    pub fn link_image_aborted(&mut self) {
        let p = &mut self.server.persistence;
        p.loading = false;
        p.async_loading = false;
    }

    /// The whole image has arrived (`paced`: its reception already paused for
    /// `key-load-delay`): the old dataset goes, and its load begins. Our own
    /// replicas are disconnected: their history is not the new one.
    pub fn link_load_begin(
        &mut self,
        generation: u64,
        image: Vec<u8>,
        mode: ImageMode,
        paced: bool,
    ) -> Result<ImageLoad, String> {
        if !self.link_current(generation) {
            self.link_image_aborted();
            return Err("REPLICAOF changed during the transfer".into());
        }
        self.disconnect_replicas();
        if mode == ImageMode::Disk {
            // Redis stores the image as its RDB file, then loads that file: it is there
            // afterwards (a restart loads it).
            if let Err(e) = self.keep_image_on_disk(&image) {
                self.server.log.warning(&format!(
                    "Failed trying to save the MASTER synchronization DB to disk: {e}"
                ));
            }
        }
        self.server
            .log
            .notice("MASTER <-> REPLICA sync: Flushing old data");
        crate::services::rdb_saving::bgsave_kill(&mut self.ks, &mut self.server);
        self.ks.flush_all(false);
        if let Some(functions) = self.server.functions.get_mut() {
            functions.flush();
        }
        if mode == ImageMode::Disk {
            self.server
                .log
                .notice("MASTER <-> REPLICA sync: Loading DB in memory");
        }
        let now_s = self.server.clock.now_ms().div_euclid(1000);
        let newest = self.server.config.compat_version.rdb_version();
        let p = &mut self.server.persistence;
        p.loading = mode != ImageMode::Async;
        if mode == ImageMode::Disk {
            p.loading_started_s = now_s;
        }
        p.loading_total_bytes = image.len() as u64;
        p.loading_loaded_bytes = 0;
        let read = Rc::new(Cell::new(0));
        let input = Counting::new(Cursor::new(image), read.clone());
        // A transfer `key-load-delay` paced as it arrived (`io::load_pace`) has had its pauses.
        match Loading::new(input, false, newest).map(|l| l.without_key_delay(paced)) {
            Ok(loading) => Ok(ImageLoad {
                loading,
                read,
                mode,
                started: Instant::now(),
            }),
            Err(e) => Err(self.link_load_failed(&e.0)),
        }
    }

    /// Loads the next slice of the image: keys until `loading-process-events-interval-bytes`
    /// more bytes are read (all of it under `async_loading`, whose old data was served until
    /// now). True once the image is loaded.
    pub fn link_load_step(
        &mut self,
        generation: u64,
        load: &mut ImageLoad,
    ) -> Result<bool, String> {
        if !self.link_current(generation) {
            return Err(self.link_load_failed("REPLICAOF changed during the load"));
        }
        let interval = match load.mode {
            ImageMode::Async => u64::MAX,
            _ => self
                .server
                .config
                .loading_process_events_interval_bytes
                .max(1) as u64,
        };
        let start = load.read.get();
        let Engine {
            ks,
            server,
            registry,
            ..
        } = self;
        let done = loop {
            match load.loading.step(ks, server, registry, 1) {
                Ok(true) => break true,
                Ok(false) if load.read.get() - start >= interval => break false,
                Ok(false) => {}
                Err(e) => return Err(self.link_load_failed(&e.0)),
            }
        };
        self.server.persistence.loading_loaded_bytes = load.read.get();
        // The primary is not read while the image loads: the link is not silent for that.
        let now = self.server.clock.now_ms();
        if let Some(primary) = self.server.repl.link(generation) {
            primary.last_io_ms = now;
        }
        Ok(done)
    }

    /// A load that cannot go on: the half-loaded data goes (Redis's `emptyData`).
    fn link_load_failed(&mut self, why: &str) -> String {
        self.server.log.warning(&format!(
            "Failed trying to load the MASTER synchronization DB from socket: {why}"
        ));
        self.ks.flush_all(false);
        self.link_image_aborted();
        why.to_string()
    }

    /// The image is loaded: this server takes the primary's history (ID and offset) and a
    /// fresh backlog, and the client that applies the stream is created.
    pub fn link_load_finish(
        &mut self,
        generation: u64,
        load: ImageLoad,
        replid: String,
        offset: u64,
        peer: Peer,
    ) -> ClientId {
        let stats = load.loading.stats();
        self.link_image_aborted();
        let p = &mut self.server.persistence;
        p.last_load_keys_loaded = stats.keys_loaded;
        p.last_load_keys_expired = stats.keys_expired;
        self.server.log.notice(&format!(
            "Done loading RDB, keys loaded: {}, keys expired: {}.",
            stats.keys_loaded, stats.keys_expired
        ));
        self.server.log.verbose(&format!(
            "MASTER <-> REPLICA sync: image loaded in {:.3} seconds",
            load.started.elapsed().as_secs_f64()
        ));
        self.take_primary_history(replid, offset);
        self.ks.dirty = 0;
        self.server
            .log
            .notice("MASTER <-> REPLICA sync: Finished with success");
        self.attach_primary_client(generation, peer)
    }

    /// The primary's history becomes ours after a full sync; the AOF is rewritten from the
    /// new dataset (Redis restarts it).
    fn take_primary_history(&mut self, replid: String, offset: u64) {
        let repl = &mut self.server.repl;
        // The stream after a full sync begins with its SELECT.
        repl.stream_db = 0;
        repl.no_history = false;
        repl.replid = replid;
        repl.replid2 = "0".repeat(40);
        repl.second_offset = -1;
        repl.offset = offset;
        let size = self.server.config.repl_backlog_size.max(1) as usize;
        if repl.backlog.is_none() {
            self.ks.stream.add_consumer();
        }
        repl.backlog = Some(Backlog::new(size, offset + 1));
        if self.server.aof.status != crate::model::aof_state::AofStatus::Off {
            if crate::services::aof::rewrite_in_progress(&self.server) {
                crate::services::aof::rewrite_kill(&mut self.ks, &mut self.server);
            }
            if let Err(e) = crate::services::aof::rewrite_start(&mut self.ks, &mut self.server) {
                self.server.log.warning(&format!(
                    "Failed enabling the AOF after successful master synchronization: {e}"
                ));
            }
        }
    }

    /// Writes a full sync's image as this server's RDB file (atomically, as a save does).
    fn keep_image_on_disk(&self, image: &[u8]) -> Result<(), String> {
        use std::io::Write;
        let target = crate::services::rdb_saving::target(&self.server);
        let file = std::fs::File::create(&target.temp).map_err(|e| e.to_string())?;
        let mut buffered = std::io::BufWriter::new(file);
        buffered.write_all(image).map_err(|e| e.to_string())?;
        crate::base::formats::rdb_file::finish_file(&target, buffered)
            .map(drop)
            .map_err(|e| e.error.to_string())
    }
}
